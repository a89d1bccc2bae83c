// Package wait holds the test helper that waits for a goroutine with a deadline. It imports
// nothing of the project, so that any package's tests can use it.
package wait

import (
	"testing"
	"time"
)

// Await waits at most d for the error a goroutine sends on done (a command's run, a
// process's exit) and returns it. When none comes in time it fails the test at once with
// msg.
func Await(t testing.TB, done <-chan error, d time.Duration, msg string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatal(msg)
		return nil
	}
}
