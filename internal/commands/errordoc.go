package commands

import (
	"cmp"
	"errors"
	"io"
	"strings"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/explain"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/output"
)

// ErrorDocument is what a command asked for -o json or -o yaml prints when it ends with an
// error before it printed its own document: a script reads the same schemaVersion, errors
// and exitCode on every exit (docs/contract-changes.md).
type ErrorDocument struct {
	SchemaVersion int               `json:"schemaVersion"`
	Errors        []explain.Problem `json:"errors"`
	ExitCode      outcome.Outcome   `json:"exitCode"`
}

// printErrorDoc prints err's document on stdout when -o json or yaml was asked for.
// A flag that could not be parsed stops cobra before -o: args are read for it then.
func printErrorDoc(f *cmdutil.Factory, args []string, err error) {
	if _, ok := errors.AsType[*output.FormatError](err); ok {
		return // -o itself is what is wrong
	}
	var format output.Format
	switch cmp.Or(f.Flags.Output, outputArg(args)) {
	case "json":
		format = output.JSON
	case "yaml":
		format = output.YAML
	default:
		return
	}
	doc := ErrorDocument{SchemaVersion: 1, ExitCode: cmdutil.OutcomeOf(err)}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			doc.Errors = append(doc.Errors, explain.ProblemOf(e))
		}
	} else {
		doc.Errors = []explain.Problem{explain.ProblemOf(err)}
	}
	_ = output.Print(f.IOStreams, format, doc, nil)
}

// outputArg is the value of -o or --output in args ("": none).
func outputArg(args []string) string {
	v := ""
	for i, a := range args {
		switch {
		case a == "--":
			return v
		case (a == "-o" || a == "--output") && i+1 < len(args):
			v = args[i+1]
		case strings.HasPrefix(a, "--output="):
			v = strings.TrimPrefix(a, "--output=")
		case strings.HasPrefix(a, "-o") && len(a) > 2 && !strings.HasPrefix(a, "--"):
			v = strings.TrimPrefix(strings.TrimPrefix(a, "-o"), "=")
		}
	}
	return v
}

// counter counts what a command wrote on stdout: nothing written, the error document is
// printed in its place.
type counter struct {
	w io.Writer
	n int64
}

func (c *counter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// fdCounter keeps the terminal's file descriptor visible (its width, iostreams.TerminalWidth).
type fdCounter struct {
	*counter
	fd interface{ Fd() uintptr }
}

func (c fdCounter) Fd() uintptr { return c.fd.Fd() }

// countOut puts a counter in front of ios's stdout, its terminal answer kept as it was.
func countOut(ios *iostreams.IOStreams) *counter {
	ios.SetStdoutTTY(ios.IsStdoutTTY())
	c := &counter{w: ios.Out}
	if fd, ok := ios.Out.(interface{ Fd() uintptr }); ok {
		ios.Out = fdCounter{c, fd}
	} else {
		ios.Out = c
	}
	return c
}
