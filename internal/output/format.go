// Package output renders command results: -o table|json|yaml|ndjson, a JSON encoder with
// the project's conventions (camelCase keys come from struct tags; times as RFC 3339 UTC
// with milliseconds), YAML of the very same document, and a table printer that aligns
// columns under headers on a terminal and prints plain tab-separated rows when piped.
package output

import (
	"fmt"
	"strings"

	"github.com/kop-offsets/kop-offsets/internal/iostreams"
)

// Format is an output format, the value of -o/--output.
type Format string

// The output formats.
const (
	Table  Format = "table"
	JSON   Format = "json"
	YAML   Format = "yaml"
	NDJSON Format = "ndjson"
)

// Standard is the set every command accepts; Streaming adds ndjson (decode, dump).
var (
	Standard  = []Format{Table, JSON, YAML}
	Streaming = []Format{Table, JSON, YAML, NDJSON}
)

// Spec says which formats a command accepts and what it defaults to.
type Spec struct {
	Allowed      []Format // accepted values of -o
	DefaultTTY   Format   // when -o is not given and stdout is a terminal (default Table)
	DefaultPiped Format   // when -o is not given and stdout is not a terminal (default DefaultTTY)
}

// StandardSpec is the output format of most commands: table/json/yaml, table by default.
var StandardSpec = Spec{Allowed: Standard, DefaultTTY: Table, DefaultPiped: Table}

// StreamingSpec (decode, dump): table/json/yaml/ndjson, table on a terminal, ndjson when piped.
var StreamingSpec = Spec{Allowed: Streaming, DefaultTTY: Table, DefaultPiped: NDJSON}

// FormatError says that -o has a value the command does not accept.
type FormatError struct {
	Value   string
	Allowed []Format
}

func (e *FormatError) Error() string {
	names := make([]string, len(e.Allowed))
	for i, f := range e.Allowed {
		names[i] = string(f)
	}
	return fmt.Sprintf("invalid output format %q: valid values are %s", e.Value, strings.Join(names, ", "))
}

// Resolve turns the -o value (empty when not given) into a Format, per spec and whether
// stdout is a terminal. The error is a *FormatError.
func (s Spec) Resolve(value string, io *iostreams.IOStreams) (Format, error) {
	allowed := s.Allowed
	if len(allowed) == 0 {
		allowed = Standard
	}
	if value == "" {
		def := s.DefaultTTY
		if def == "" {
			def = Table
		}
		if !io.IsStdoutTTY() && s.DefaultPiped != "" {
			def = s.DefaultPiped
		}
		return def, nil
	}
	v := Format(strings.ToLower(strings.TrimSpace(value)))
	for _, f := range allowed {
		if f == v {
			return f, nil
		}
	}
	return "", &FormatError{Value: value, Allowed: allowed}
}

// Names returns the names of formats, for help text and completion.
func Names(fs []Format) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = string(f)
	}
	return out
}
