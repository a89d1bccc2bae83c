// Package clitest is the plumbing the command and output tests share: golden files and
// running a command under test with captured streams. It is imported only by tests.
package clitest

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

// update is the -update flag of every test binary that imports this package.
var update = flag.Bool("update", false, "rewrite the golden files")

// Golden compares got with the golden file at path (relative to the test's package, as
// testdata/name.golden). With -update it rewrites the file instead.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n--- got\n%s--- want\n%s", path, got, want)
	}
}
