package config

import (
	"errors"
	"strings"
)

// Sentinels wrapped by *Error, for errors.Is.
var (
	ErrNotFound       = errors.New("config file not found")
	ErrUnknownCluster = errors.New("unknown cluster")
	ErrInvalid        = errors.New("invalid config")
	ErrSecret         = errors.New("secret cannot be resolved")
)

// Error is any configuration problem: unreadable or invalid file, unknown cluster, a secret
// that cannot be resolved. It names the file, the cluster and the field where it can.
// Commands map it to exit code 2.
type Error struct {
	Path    string // config file, empty for an ad-hoc config
	Cluster string // cluster name, or "#N" (1-based) when the cluster has no valid name
	Field   string // dotted field path inside the cluster, e.g. "pulsarAuth.token"
	Msg     string
	Err     error // a sentinel above and/or the cause
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config")
	if e.Path != "" {
		b.WriteString(" ")
		b.WriteString(e.Path)
	}
	if e.Cluster != "" {
		b.WriteString(": cluster ")
		if strings.HasPrefix(e.Cluster, "#") {
			b.WriteString(e.Cluster)
		} else {
			b.WriteString(`"` + e.Cluster + `"`)
		}
	}
	if e.Field != "" {
		b.WriteString(": ")
		b.WriteString(e.Field)
	}
	b.WriteString(": ")
	switch {
	case e.Msg != "":
		b.WriteString(e.Msg)
	case e.Err != nil:
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes every *Error match ErrInvalid as well as its own sentinel.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// Errors is the list of problems validation found; it is itself an error (Unwrap() []error
// makes errors.As find the first *Error).
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the individual errors.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

func (es Errors) err() error {
	if len(es) == 0 {
		return nil
	}
	return es
}
