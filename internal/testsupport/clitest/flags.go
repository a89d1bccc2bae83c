package clitest

import "testing"

// ParseArgs is one case of a table-driven flag test: ParseFlags with a factory of its own
// (stdout a terminal when tty). It returns nil when the case expects wantErr.
func ParseArgs[O any](t testing.TB, newCmd NewCmdFunc[O], tty bool, wantErr string, args ...string) *O {
	t.Helper()
	f, _ := NewFactory("x", tty)
	return ParseFlags(t, f, newCmd, wantErr, args...)
}
