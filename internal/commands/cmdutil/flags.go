package cmdutil

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/kop-offsets/kop-offsets/internal/output"
)

// OutputFormat resolves the global -o value for a command that accepts spec (see
// output.Spec): an invalid value is an *output.FormatError (exit 2).
func (f *Factory) OutputFormat(spec output.Spec) (output.Format, error) {
	return spec.Resolve(f.Flags.Output, f.IOStreams)
}

// SetOutputFormats records which -o values cmd accepts, for --help and shell completion.
// Call it in NewCmdX for commands that accept more than output.Standard.
func SetOutputFormats(cmd *cobra.Command, spec output.Spec) {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	names := output.Names(spec.Allowed)
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ","
		}
		s += n
	}
	cmd.Annotations[AnnotationOutputFormats] = s
}

// AnnotationOutputFormats is the cobra annotation that lists a command's -o values.
const AnnotationOutputFormats = "kop-offsets/output-formats"

// NoArgs is cobra.NoArgs with an exit-2 FlagError.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return FlagErrorf("unexpected argument %q for %q", args[0], cmd.CommandPath())
	}
	return nil
}

// ExactArgs is cobra.ExactArgs with an exit-2 FlagError and a message.
func ExactArgs(n int, msg string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return FlagErrorf("%s", msg)
		}
		return nil
	}
}

// MinimumArgs is cobra.MinimumNArgs with an exit-2 FlagError and a message.
func MinimumArgs(n int, msg string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return FlagErrorf("%s", msg)
		}
		return nil
	}
}

// MutuallyExclusive returns a FlagError when more than one of the conditions holds.
func MutuallyExclusive(message string, conditions ...bool) error {
	n := 0
	for _, c := range conditions {
		if c {
			n++
		}
	}
	if n > 1 {
		return FlagErrorf("%s", message)
	}
	return nil
}

// Examples trims the leading and trailing newlines of a raw-string Example, keeping the
// indentation of its first line.
func Examples(s string) string { return strings.Trim(s, "\n") }
