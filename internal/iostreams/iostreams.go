// Package iostreams carries stdin, stdout and stderr plus what the commands need to know
// about them: whether each is a terminal (forceable in tests), whether colour is allowed,
// the terminal width, and a progress indicator that only ever draws on a terminal stderr.
// Modelled on cli/cli's pkg/iostreams.
package iostreams

import (
	"bytes"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// IOStreams is the set of streams a command reads and writes. Results go to Out, logs and
// progress to ErrOut.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	stdinTTY, stdoutTTY, stderrTTY *bool
	colorOverride                  *bool
	termWidth                      int
	noHeaders                      bool
}

// System returns the IOStreams of the process.
func System() *IOStreams {
	return &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
}

// Test returns IOStreams backed by buffers: stdin, stdout, stderr. Nothing is a terminal
// until a Set*TTY call says so.
func Test() (*IOStreams, *bytes.Buffer, *bytes.Buffer, *bytes.Buffer) {
	in, out, errOut := &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{
		In: in, Out: out, ErrOut: errOut,
		stdinTTY: ptr(false), stdoutTTY: ptr(false), stderrTTY: ptr(false),
		termWidth: 120,
	}, in, out, errOut
}

func ptr(b bool) *bool { return &b }

func isTerminal(v any) bool {
	f, ok := v.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// SetStdinTTY forces the answer of IsStdinTTY.
func (s *IOStreams) SetStdinTTY(v bool) { s.stdinTTY = ptr(v) }

// SetStdoutTTY forces the answer of IsStdoutTTY.
func (s *IOStreams) SetStdoutTTY(v bool) { s.stdoutTTY = ptr(v) }

// SetStderrTTY forces the answer of IsStderrTTY.
func (s *IOStreams) SetStderrTTY(v bool) { s.stderrTTY = ptr(v) }

// SetColorEnabled forces the answer of ColorEnabled.
func (s *IOStreams) SetColorEnabled(v bool) { s.colorOverride = ptr(v) }

// SetNoHeaders says whether tables are written without their header line (--no-headers).
func (s *IOStreams) SetNoHeaders(v bool) { s.noHeaders = v }

// NoHeaders reports whether tables are written without their header line.
func (s *IOStreams) NoHeaders() bool { return s.noHeaders }

// IsStdinTTY reports whether stdin is a terminal.
func (s *IOStreams) IsStdinTTY() bool {
	if s.stdinTTY != nil {
		return *s.stdinTTY
	}
	return isTerminal(s.In)
}

// IsStdoutTTY reports whether stdout is a terminal.
func (s *IOStreams) IsStdoutTTY() bool {
	if s.stdoutTTY != nil {
		return *s.stdoutTTY
	}
	return isTerminal(s.Out)
}

// IsStderrTTY reports whether stderr is a terminal.
func (s *IOStreams) IsStderrTTY() bool {
	if s.stderrTTY != nil {
		return *s.stderrTTY
	}
	return isTerminal(s.ErrOut)
}

// CanPrompt reports whether an interactive confirmation may be asked: stdin and stdout
// are both terminals.
func (s *IOStreams) CanPrompt() bool { return s.IsStdinTTY() && s.IsStdoutTTY() }

// ColorEnabled reports whether stdout may carry ANSI colour: only on a terminal, and never
// with NO_COLOR set or TERM=dumb.
func (s *IOStreams) ColorEnabled() bool {
	if s.colorOverride != nil {
		return *s.colorOverride
	}
	if _, ok := os.LookupEnv("NO_COLOR"); ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	return s.IsStdoutTTY()
}

// TerminalWidth returns the width of the stdout terminal, 80 when it cannot be told.
func (s *IOStreams) TerminalWidth() int {
	if s.termWidth > 0 {
		return s.termWidth
	}
	if f, ok := s.Out.(interface{ Fd() uintptr }); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	return 80
}

// ColorScheme returns helpers that colour text when ColorEnabled, and return it unchanged
// otherwise.
func (s *IOStreams) ColorScheme() *ColorScheme { return &ColorScheme{enabled: s.ColorEnabled()} }

// ColorScheme colours text for stdout.
type ColorScheme struct{ enabled bool }

func (c *ColorScheme) wrap(code, t string) string {
	if !c.enabled || t == "" {
		return t
	}
	return "\x1b[" + code + "m" + t + "\x1b[0m"
}

// Bold makes t bold.
func (c *ColorScheme) Bold(t string) string { return c.wrap("1", t) }

// Red colours t red (failures).
func (c *ColorScheme) Red(t string) string { return c.wrap("31", t) }

// Green colours t green (success).
func (c *ColorScheme) Green(t string) string { return c.wrap("32", t) }

// Yellow colours t yellow (warnings).
func (c *ColorScheme) Yellow(t string) string { return c.wrap("33", t) }

// Gray colours t gray (secondary information).
func (c *ColorScheme) Gray(t string) string { return c.wrap("90", t) }

// Status colours a status word: ok green, anything failed/error red, the rest yellow.
func (c *ColorScheme) Status(t string) string {
	switch strings.ToLower(t) {
	case "ok":
		return c.Green(t)
	case "failed", "error", "diverged", "unreachable":
		return c.Red(t)
	case "", "-":
		return t
	default:
		return c.Yellow(t)
	}
}
