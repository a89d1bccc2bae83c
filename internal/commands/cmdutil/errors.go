// Package cmdutil holds what every command shares: the Factory (streams, lazily loaded
// config, cluster selection, lazy client constructors), the exit-code errors, and flag
// helpers. Modelled on cli/cli's pkg/cmdutil.
package cmdutil

import (
	"context"
	"errors"
	"fmt"

	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/output"
)

// Exit codes, per docs (cli.md).
const (
	ExitOK          = 0 // done; nothing found that --fail-on names
	ExitDrift       = 1 // drift found / findings
	ExitUsage       = 2 // usage or configuration error; nothing was contacted
	ExitUnreachable = 3 // a cluster or endpoint could not be reached or answered with errors
	ExitWriteFailed = 4 // a write did not achieve its goal
)

// ExitError carries the exit code of a failed command. Silent means the command already
// printed everything (its result, the failures marked in it) and only the code remains:
// nothing more is printed to stderr.
type ExitError struct {
	Code   int
	Err    error
	Silent bool
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit code %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// UsageError wraps err as a bad flag, argument or combination (exit 2).
func UsageError(err error) error { return &ExitError{Code: ExitUsage, Err: err} }

// UsageErrorf formats a UsageError.
func UsageErrorf(format string, args ...any) error {
	return UsageError(fmt.Errorf(format, args...))
}

// ConfigError wraps err as a configuration that cannot be used (exit 2).
func ConfigError(err error) error { return &ExitError{Code: ExitUsage, Err: err} }

// UnreachableError wraps err as a cluster or endpoint that could not be reached or answered
// with errors (exit 3).
func UnreachableError(err error) error { return &ExitError{Code: ExitUnreachable, Err: err} }

// DriftError wraps err as drift or findings that were found (exit 1).
func DriftError(err error) error { return &ExitError{Code: ExitDrift, Err: err} }

// WriteFailedError wraps err as a write that did not achieve its goal (exit 4).
func WriteFailedError(err error) error { return &ExitError{Code: ExitWriteFailed, Err: err} }

// SilentError ends the command with code after it printed its result (code 0 returns nil).
func SilentError(code int) error {
	if code == ExitOK {
		return nil
	}
	return &ExitError{Code: code, Silent: true}
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

// ExitCode maps any error a command returned to the process exit code. It is the one
// place where errors become exit codes:
//   - nil: 0
//   - *ExitError: its Code
//   - *FlagError, *output.FormatError, *config.Error / config.Errors, ErrCancel: 2
//   - context.DeadlineExceeded: 3
//   - anything else: 3 (an endpoint failed in a way the command did not classify).
//
// Commands classify local problems (an unreadable --input file, bad input) with
// UsageError themselves, so they do not fall through to 3.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	var fe *FlagError
	var ofe *output.FormatError
	var ce *config.Error
	switch {
	case errors.As(err, &fe), errors.As(err, &ofe), errors.As(err, &ce), errors.Is(err, ErrCancel):
		return ExitUsage
	case errors.Is(err, context.DeadlineExceeded):
		return ExitUnreachable
	}
	return ExitUnreachable
}

// IsSilent reports whether err needs no message on stderr.
func IsSilent(err error) bool {
	var ee *ExitError
	return errors.As(err, &ee) && ee.Silent
}
