package labrun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/audit"
)

func TestProcessStart(t *testing.T) {
	if processStart(os.Getpid()) == "" {
		t.Error("no start time for the test process")
	}
	if processStart(-1) != "" || processStart(1<<30) != "" {
		t.Error("start time for a pid that does not exist")
	}
	// Under `go test` the parent is the go command; a binary run by hand has another parent.
	if pid, start, ok := goTestParent(); ok && (pid != os.Getppid() || start == "") {
		t.Errorf("goTestParent %d %q", pid, start)
	}
}

func TestIsolateAuditTrail(t *testing.T) {
	if auditFileEnv != audit.EnvFile {
		t.Fatalf("the lab isolates %s, the product reads %s", auditFileEnv, audit.EnvFile)
	}
	t.Setenv(audit.EnvFile, "/home/op/trail.jsonl")
	restore := IsolateAuditTrail()
	p := audit.DefaultFile(os.Getenv)
	if p == "/home/op/trail.jsonl" || !strings.HasPrefix(p, os.TempDir()) {
		t.Fatalf("isolated trail %s", p)
	}
	f := &audit.File{Path: p}
	if err := f.Write(audit.Record{Action: audit.ActionUnload}); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	restore()
	if got := os.Getenv(audit.EnvFile); got != "/home/op/trail.jsonl" {
		t.Errorf("restored %q", got)
	}
	if _, err := os.Stat(filepath.Dir(p)); !os.IsNotExist(err) {
		t.Errorf("temp dir left: %v", err)
	}
}
