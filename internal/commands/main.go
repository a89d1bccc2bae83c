// Package commands is the entry point of the kop-offsets CLI: it builds the Factory and the
// command tree, runs the command and maps its error to the exit code, in one place.
package commands

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/kop-offsets/kop-offsets/internal/buildinfo"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/factory"
	"github.com/kop-offsets/kop-offsets/internal/commands/root"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
)

// Main runs kop-offsets with the process's arguments and streams and returns the exit code.
func Main() int {
	ios := iostreams.System()
	f := factory.New(buildinfo.Get().Version, ios)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, f, root.NewCmdRoot(f), os.Args[1:])
}

// Run executes cmd (the root) with args, prints the error (if any, and not silent) to
// stderr and returns the exit code (see cmdutil.ExitCode).
func Run(ctx context.Context, f *cmdutil.Factory, cmd *cobra.Command, args []string) int {
	cmd.SetArgs(args)
	out := countOut(f.IOStreams)
	executed, err := cmd.ExecuteContextC(ctx)
	if err == nil {
		return outcome.OK.ExitCode()
	}
	// Errors before a command body ran come from cobra's parsing and validation: unknown
	// command, bad arguments, missing required flags, flag groups. All usage errors.
	var ee *cmdutil.ExitError
	if !root.Started(cmd) && !errors.As(err, &ee) {
		var fe *cmdutil.FlagError
		if !errors.As(err, &fe) {
			err = &cmdutil.FlagError{Err: err}
		}
	}
	if !cmdutil.IsSilent(err) {
		if out.n == 0 {
			printErrorDoc(f, args, err)
		}
		cmdutil.PrintError(f.IOStreams.ErrOut, err, f.Flags.Verbose)
		var fe *cmdutil.FlagError
		if errors.As(err, &fe) && executed != nil {
			fmt.Fprintf(f.IOStreams.ErrOut, "Run '%s --help' for usage.\n", executed.CommandPath())
		}
	}
	return cmdutil.ExitCode(err)
}
