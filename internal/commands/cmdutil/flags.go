package cmdutil

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kop-offsets/kop-offsets/internal/match"
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

// AnnotationCluster marks a flag whose value is a configured cluster's name: the root
// completes every flag so marked with the config's names (MarkCluster).
const AnnotationCluster = "kop-offsets/cluster-name"

// MarkCluster marks the flags names of fl as taking a cluster name, for completion.
func MarkCluster(fl *pflag.FlagSet, names ...string) {
	for _, n := range names {
		if err := fl.SetAnnotation(n, AnnotationCluster, []string{"true"}); err != nil {
			panic(err) // a flag that is not defined: a programming error
		}
	}
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

// PatternsVar defines the repeatable flag name (--group, --topic) of every command: names
// or globs in internal/match's grammar, each checked as it is parsed (an invalid glob is a
// flag error, exit 2, in every command alike). Values are not split at commas.
func PatternsVar(fl *pflag.FlagSet, p *[]string, name, usage string) {
	fl.Var(&patterns{p: p}, name, usage)
}

// NamesVar is PatternsVar for a command that needs one name per value (locate and doctor
// hash a group to its one offsets partition, and audit a topic by its name): the same
// grammar, but a value must match exactly one name (no unescaped * ? [; `a\*b` is the name
// "a*b"), else it is refused as it is parsed, with why. p receives the names, unescaped.
func NamesVar(fl *pflag.FlagSet, p *[]string, name, usage, why string) {
	fl.Var(&patterns{p: p, names: why}, name, usage)
}

// patterns is PatternsVar's and NamesVar's pflag.Value.
type patterns struct {
	p     *[]string
	set   bool
	names string // non-empty: globs refused, for this reason
}

func (v *patterns) Set(s string) error {
	s, err := v.check(s)
	if err != nil {
		return err
	}
	if !v.set { // the first --x replaces a default, as pflag's StringArray does
		*v.p, v.set = nil, true
	}
	*v.p = append(*v.p, s)
	return nil
}

// check validates s and returns the value to keep: s, or under NamesVar the name it denotes.
func (v *patterns) check(s string) (string, error) {
	if err := match.Valid(s); err != nil || v.names == "" {
		return s, err
	}
	return OneName(s, v.names)
}

// OneName is the name pattern denotes, or an error saying why (a command that needs one
// name per value) and how to name one with * ? or [ in it.
func OneName(pattern, why string) (string, error) {
	name, ok := match.Literal(pattern)
	if !ok {
		return "", fmt.Errorf("a name, not a glob: %s; write * ? [ in a name as \\* \\? \\[", why)
	}
	return name, nil
}

func (v *patterns) Type() string {
	if v.names != "" {
		return "name"
	}
	return "glob"
}

func (v *patterns) String() string {
	if len(*v.p) == 0 {
		return ""
	}
	return "[" + strings.Join(*v.p, ",") + "]"
}

// Append, Replace and GetSlice make it a pflag.SliceValue (shell completion and tools that
// read repeatable flags see each value).
func (v *patterns) Append(s string) error { return v.Set(s) }

func (v *patterns) Replace(ss []string) error {
	out := make([]string, len(ss))
	for i, s := range ss {
		var err error
		if out[i], err = v.check(s); err != nil {
			return err
		}
	}
	*v.p, v.set = out, true
	return nil
}

func (v *patterns) GetSlice() []string { return *v.p }
