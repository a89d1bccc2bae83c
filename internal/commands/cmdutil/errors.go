// Package cmdutil holds what every command shares: the Factory (streams, lazily loaded
// config, cluster selection, lazy client constructors), the exit-code errors, and flag
// helpers. Modelled on cli/cli's pkg/cmdutil.
package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/explain"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/output"
)

// ExitError carries the outcome of a failed command. Silent means the command already
// printed everything (its result, the failures marked in it) and only the code remains:
// nothing more is printed to stderr.
type ExitError struct {
	Outcome outcome.Outcome
	Err     error
	Silent  bool
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit code %d", e.Outcome.ExitCode())
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// UsageError wraps err as a bad flag, argument or combination (exit 2).
func UsageError(err error) error { return &ExitError{Outcome: outcome.Usage, Err: err} }

// UsageErrorf formats a UsageError.
func UsageErrorf(format string, args ...any) error {
	return UsageError(fmt.Errorf(format, args...))
}

// ConfigError wraps err as a configuration that cannot be used (exit 2).
func ConfigError(err error) error { return &ExitError{Outcome: outcome.Usage, Err: err} }

// UnreachableError wraps err as a cluster or endpoint that could not be reached or answered
// with errors (exit 3).
func UnreachableError(err error) error { return &ExitError{Outcome: outcome.Unreachable, Err: err} }

// DriftError wraps err as drift or findings that were found (exit 1).
func DriftError(err error) error { return &ExitError{Outcome: outcome.Found, Err: err} }

// WriteFailedError wraps err as a write that did not achieve its goal (exit 4).
func WriteFailedError(err error) error { return &ExitError{Outcome: outcome.WriteFailed, Err: err} }

// SilentError ends the command with o after it printed its result (OK returns nil).
func SilentError(o outcome.Outcome) error {
	if o == outcome.OK {
		return nil
	}
	return &ExitError{Outcome: o, Silent: true}
}

// FlagError is a flag-parsing or argument error; cobra's usage line is printed with it.
type FlagError struct{ Err error }

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

// FlagErrorf formats a FlagError (exit 2, with the usage hint).
func FlagErrorf(format string, args ...any) error {
	return &FlagError{Err: fmt.Errorf(format, args...)}
}

// ErrCancel is returned when the user declined a confirmation: nothing was written, the
// request was not carried out (exit 2, as gh does).
var ErrCancel = errors.New("cancelled")

// ExitCode maps any error a command returned to the process exit code (the table of
// package outcome).
func ExitCode(err error) int { return OutcomeOf(err).ExitCode() }

// OutcomeOf maps any error a command returned to its outcome. It is the one place where
// errors become outcomes:
//   - nil: OK
//   - *ExitError: its Outcome
//   - *FlagError, *output.FormatError, *config.Error / config.Errors, ErrCancel: Usage
//   - context.DeadlineExceeded: Unreachable
//   - anything else: Unreachable (an endpoint failed in a way the command did not classify).
//
// Commands classify local problems (an unreadable --input file, bad input) with
// UsageError themselves, so they do not fall through to Unreachable.
func OutcomeOf(err error) outcome.Outcome {
	if err == nil {
		return outcome.OK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Outcome
	}
	var fe *FlagError
	var ofe *output.FormatError
	var ce *config.Error
	switch {
	case errors.As(err, &fe), errors.As(err, &ofe), errors.As(err, &ce), errors.Is(err, ErrCancel):
		return outcome.Usage
	case errors.Is(err, context.DeadlineExceeded):
		return outcome.Unreachable
	}
	return outcome.Unreachable
}

// IsSilent reports whether err needs no message on stderr.
func IsSilent(err error) bool {
	var ee *ExitError
	return errors.As(err, &ee) && ee.Silent
}

// PrintError prints err in the one error style of every command: "error: " and what failed,
// naming each cluster once, on one line; the fix on the next when the failure is an
// endpoint's; the library's own text (URLs, Go's error chain) only with verbose.
//
// Errors joined (errors.Join) are one failure each, printed one after the other.
func PrintError(w io.Writer, err error, verbose bool) {
	// The joined errors, when nothing wraps them but what adds no text (an ExitError).
	for x := err; x != nil; x = errors.Unwrap(x) {
		if j, ok := x.(interface{ Unwrap() []error }); ok && x.Error() == err.Error() {
			for _, e := range j.Unwrap() {
				PrintError(w, e, verbose)
			}
			return
		}
	}
	fmt.Fprint(w, explain.Lines(explain.Line(err), explain.FixOf(err)))
	if e := explain.Find(err); verbose && e != nil && e.Detail != "" {
		fmt.Fprintf(w, "  detail: %s\n", e.Detail)
	}
}
