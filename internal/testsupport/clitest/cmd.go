package clitest

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/factory"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
)

// Streams are the buffers behind a test Factory's IOStreams.
type Streams struct {
	In, Out, ErrOut *bytes.Buffer
}

// NewFactory returns the default Factory (factory.NewWithEnv) over iostreams.Test with an
// empty environment, and the buffers of its streams. tty says whether stdout is a terminal.
func NewFactory(appVersion string, tty bool) (*cmdutil.Factory, Streams) {
	ios, in, out, errOut := iostreams.Test()
	ios.SetStdoutTTY(tty)
	f := factory.NewWithEnv(appVersion, ios, func(string) string { return "" })
	return f, Streams{In: in, Out: out, ErrOut: errOut}
}

// NewCmdFunc is the constructor shape of the commands: a Factory and the run hook tests
// use in place of the command's body.
type NewCmdFunc[O any] func(f *cmdutil.Factory, runF func(*O) error) *cobra.Command

// ParseOptions builds the command with newCmd over f, runs `<name> args...` on a stand-in
// root (NewTestRoot) and returns the Options the run hook received (nil when the
// hook was not reached) and Execute's error.
func ParseOptions[O any](f *cmdutil.Factory, newCmd NewCmdFunc[O], args ...string) (*O, error) {
	var got *O
	cmd := newCmd(f, func(o *O) error { got = o; return nil })
	err := Execute(context.Background(), NewTestRoot(f, cmd), append([]string{cmd.Name()}, args...)...)
	return got, err
}

// Result is what a command run left: stdout, stderr, the error and the exit code the error
// maps to (cmdutil.ExitCode).
type Result struct {
	Out, ErrOut string
	Err         error
	Code        int
}

// Execute runs root with args under ctx and returns its error.
func Execute(ctx context.Context, root *cobra.Command, args ...string) error {
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

// Run runs root with args under ctx and returns what it wrote to s and its exit code.
func Run(ctx context.Context, root *cobra.Command, s Streams, args ...string) Result {
	err := Execute(ctx, root, args...)
	return Result{Out: s.Out.String(), ErrOut: s.ErrOut.String(), Err: err, Code: cmdutil.ExitCode(err)}
}

// ParseFlags is ParseOptions for the table-driven flag tests. With wantErr it checks that
// parsing fails with a usage error (exit 2) whose message contains wantErr and returns nil;
// without, it fails the test on any error and returns the Options the run hook received.
func ParseFlags[O any](t testing.TB, f *cmdutil.Factory, newCmd NewCmdFunc[O], wantErr string, args ...string) *O {
	t.Helper()
	got, err := ParseOptions(f, newCmd, args...)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) || cmdutil.ExitCode(err) != 2 {
			t.Errorf("%v: err %v (exit %d), want %q", args, err, cmdutil.ExitCode(err), wantErr)
		}
		return nil
	}
	if err != nil || got == nil {
		t.Fatalf("%v: %v", args, err)
	}
	return got
}

// NewTestRoot returns a stand-in root for tests of one command: the global flags bound to
// f.Flags, errors silenced, output to f.IOStreams, flag errors as *cmdutil.FlagError.
func NewTestRoot(f *cmdutil.Factory, cmds ...*cobra.Command) *cobra.Command {
	root := &cobra.Command{Use: "kop-offsets", SilenceErrors: true, SilenceUsage: true}
	cmdutil.BindGlobalFlags(root, f.Flags)
	root.SetOut(f.IOStreams.Out)
	root.SetErr(f.IOStreams.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &cmdutil.FlagError{Err: err} })
	root.AddCommand(cmds...)
	return root
}
