package repair

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/audit"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/session"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/lease"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
)

func TestRepairLeaseHeldElsewhere(t *testing.T) {
	h := newHarness(t)
	h.opts.Format = output.JSON
	b := &lease.MemBroker{}
	b.Hold(lease.Holder{Who: audit.Who{Host: "pod-7", User: "nobody", PID: 1, Command: "kop-offsets watch --repair"},
		Since: time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)})
	base := h.opts.NewSession
	h.opts.NewSession = func(target config.Cluster, all []config.Cluster) (*session.Session, error) {
		s, err := base(target, all)
		if err == nil {
			s.Lease = &lease.Lease{Cluster: target.Name, Topic: lease.DefaultTopic("public"), Broker: b}
		}
		return s, err
	}
	err := repairRun(context.Background(), h.opts)
	if cmdutil.OutcomeOf(err) != outcome.Unreachable {
		t.Fatalf("exit %d (%v), want 3", cmdutil.ExitCode(err), err)
	}
	if len(h.admin.Writes()) != 0 {
		t.Errorf("wrote %v without the lease", h.admin.Writes())
	}
	var doc Document
	if err := json.Unmarshal(h.out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Clusters) != 1 || !strings.Contains(doc.Clusters[0].Refusal, `held by "kop-offsets watch --repair" (pid 1, user nobody, host pod-7)`) ||
		doc.Clusters[0].Execution != nil {
		t.Errorf("cluster result %+v", doc.Clusters)
	}
	if doc.After == nil || len(doc.After.Stale) != 1 || h.checks != 1 {
		t.Errorf("after %+v, checks %d: nothing unloaded, the first check stands", doc.After, h.checks)
	}
}

func TestRepairWriteFlags(t *testing.T) {
	f, _ := clitest.NewFactory("test", false)
	o, err := clitest.ParseOptions(f, NewCmdRepair, "--no-lease", "--audit-file", "/var/log/a.jsonl")
	if err != nil || !o.Writes.NoLease || o.Writes.AuditFile != "/var/log/a.jsonl" {
		t.Errorf("%+v %v", o, err)
	}
	f, _ = clitest.NewFactory("test", false)
	if _, err := clitest.ParseOptions(f, NewCmdRepair, "--lease-wait", "-1s"); cmdutil.OutcomeOf(err) != outcome.Usage {
		t.Errorf("negative --lease-wait: %v", err)
	}
}

// The lock's default is in a directory of the user's, created 0700 when missing; never in
// the shared temporary directory.
func TestDefaultLockFileIsTheUsers(t *testing.T) {
	run := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", run)
	if got := DefaultLockFile(); got != filepath.Join(run, "kop-offsets-repair.lock") {
		t.Errorf("with $XDG_RUNTIME_DIR: %s", got)
	}
	home := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", "")
	path := DefaultLockFile()
	if !strings.HasPrefix(path, home+string(filepath.Separator)) || filepath.Dir(path) == os.TempDir() {
		t.Fatalf("without $XDG_RUNTIME_DIR: %s, want under %s", path, home)
	}
	unlock, err := takeLock(path)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if st, err := os.Stat(filepath.Dir(path)); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("lock directory %s: %v, %v; want 0700", filepath.Dir(path), st.Mode(), err)
	}
	// --lock-file '': no file, the writer lease alone.
	none, err := takeLock("")
	if err != nil {
		t.Fatal(err)
	}
	none()
}

// With no directory of the user's, repair asks for --lock-file rather than fall back to a
// shared one; --lock-file ” runs on the writer lease alone.
func TestNoLockDirectory(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "")
	clitest.ParseArgs(t, NewCmdRepair, false, "give --lock-file PATH", "--yes")
	if got := clitest.ParseArgs(t, NewCmdRepair, false, "", "--yes", "--lock-file", ""); got == nil || got.LockFile != "" {
		t.Errorf("--lock-file '': %+v", got)
	}
}
