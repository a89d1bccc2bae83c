package clitest

import "testing"

// ParseArgs is one case of a table-driven flag test: ParseFlags with a factory of its own
// (stdout a terminal when tty). It returns nil when the case expects wantErr.
func ParseArgs[O any](t testing.TB, newCmd NewCmdFunc[O], tty bool, wantErr string, args ...string) *O {
	t.Helper()
	f, _ := NewFactory("x", tty)
	return ParseFlags(t, f, newCmd, wantErr, args...)
}

// FlagCase is one row of a table-driven flag test: the arguments, whether stdout is a
// terminal, and either the Options the run hook must receive (as far as the test's match
// compares them) or, with Err, the usage error (exit 2) whose message must contain Err.
type FlagCase[O any] struct {
	Args []string
	TTY  bool
	Want O
	Err  string
}

// CheckFlags runs each case with ParseArgs and reports a case whose Options match does not
// accept (match(got, want) false).
func CheckFlags[O any](t testing.TB, newCmd NewCmdFunc[O], cases []FlagCase[O], match func(got, want *O) bool) {
	t.Helper()
	for _, c := range cases {
		got := ParseArgs(t, newCmd, c.TTY, c.Err, c.Args...)
		if got != nil && !match(got, &c.Want) {
			t.Errorf("%v: got %+v, want %+v", c.Args, got, c.Want)
		}
	}
}
