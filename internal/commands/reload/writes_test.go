package reload

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/audit"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/session"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/lease"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
)

// guarded makes the harness's sessions take the lease of broker and write the trail at
// file, as NewSessionFunc's do.
func guarded(h *harness, broker lease.Broker, file string) {
	base := h.opts.NewSession
	h.opts.NewSession = func(target config.Cluster, all []config.Cluster) (*session.Session, error) {
		s, err := base(target, all)
		if err != nil {
			return nil, err
		}
		s.Guard(session.Writes{AuditFile: file}, target, broker, nil)
		return s, nil
	}
}

var jump = lease.Holder{Who: audit.Who{Host: "jump-1", User: "ops", PID: 4242, Command: "kop-offsets repair --yes"},
	Since: time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)}

// heldElsewhere guards h with a broker whose lease jump holds and a trail in a temporary
// directory, and returns the broker and the trail's path.
func heldElsewhere(t *testing.T, h *harness) (*lease.MemBroker, string) {
	t.Helper()
	b := &lease.MemBroker{}
	b.Hold(jump)
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	guarded(h, b, file)
	return b, file
}

func TestReloadRefusedWhileTheLeaseIsHeldElsewhere(t *testing.T) {
	h := newHarness(t)
	h.opts.Yes = true
	_, file := heldElsewhere(t, h)
	err := reloadRun(context.Background(), h.opts)
	if cmdutil.OutcomeOf(err) != outcome.Unreachable {
		t.Fatalf("exit %d (%v), want 3", cmdutil.ExitCode(err), err)
	}
	for _, want := range []string{"cluster scus: the writer lease", `"kop-offsets repair --yes" (pid 4242, user ops, host jump-1)`, "nothing was written"} {
		if !strings.Contains(h.err.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, h.err)
		}
	}
	if len(h.admin.Writes()) != 0 {
		t.Errorf("wrote %v without the lease", h.admin.Writes())
	}
	if _, err := os.Stat(file); err != nil {
		t.Errorf("the trail is opened before the lease is asked: %v", err)
	}
	if recs := readTrail(t, file); len(recs) != 0 {
		t.Errorf("records of writes never sent: %+v", recs)
	}
}

func TestReloadTakesTheLeaseAndRecordsEachWrite(t *testing.T) {
	h := newHarness(t)
	h.opts.Yes = true
	b := &lease.MemBroker{}
	file := filepath.Join(t.TempDir(), "state", "audit.jsonl")
	guarded(h, b, file)
	if err := reloadRun(context.Background(), h.opts); err != nil {
		t.Fatalf("%v\n%s", err, h.err)
	}
	if b.Claims != 1 || b.Holder != nil {
		t.Errorf("claims %d, holder after the run %v: taken once, given back at Close", b.Claims, b.Holder)
	}
	recs := readTrail(t, file)
	var unloads, lookups int
	for _, r := range recs {
		switch r.Action {
		case audit.ActionUnload:
			unloads++
		case audit.ActionLookup:
			lookups++
		}
		if r.Cluster != "scus" || r.Reason != "reload: requested groups" || r.Result != audit.ResultOK ||
			!strings.Contains(strings.Join(r.Groups, ","), "G") || r.Who.PID != os.Getpid() {
			t.Errorf("record %+v", r)
		}
	}
	if unloads != 1 || lookups != len(h.admin.Writes())-1 {
		t.Errorf("%d unloads, %d lookups recorded; admin saw %v", unloads, lookups, h.admin.Writes())
	}
}

func TestReloadDryRunTakesNoLease(t *testing.T) {
	h := newHarness(t)
	h.opts.DryRun = true
	b, file := heldElsewhere(t, h)
	if err := reloadRun(context.Background(), h.opts); err != nil {
		t.Fatal(err)
	}
	if b.Claims != 0 {
		t.Errorf("a dry run asked for the lease")
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("a dry run created the trail: %v", err)
	}
}

func TestUnwritableTrailStopsBeforeTheFirstWrite(t *testing.T) {
	h := newHarness(t)
	h.opts.Yes = true
	dir := t.TempDir()
	blocker := filepath.Join(dir, "f")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	guarded(h, &lease.MemBroker{}, filepath.Join(blocker, "audit.jsonl"))
	err := reloadRun(context.Background(), h.opts)
	if cmdutil.OutcomeOf(err) != outcome.Usage || len(h.admin.Writes()) != 0 || !strings.Contains(h.err.String(), "audit file") {
		t.Errorf("exit %d, writes %v, stderr %s", cmdutil.ExitCode(err), h.admin.Writes(), h.err)
	}
}

func readTrail(t *testing.T, p string) []audit.Record {
	t.Helper()
	recs, err := audit.ReadFile(p, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestWriteFlags(t *testing.T) {
	tests := []clitest.FlagCase[Options]{
		{Args: []string{"--group", "G"}, Want: Options{Writes: session.Writes{AuditFile: session.DefaultWrites().AuditFile}}},
		{Args: []string{"--group", "G", "--lease-topic", "persistent://{tenant}/locks/kop", "--lease-wait", "2m", "--audit-file", ""},
			Want: Options{Writes: session.Writes{LeaseTopic: "persistent://{tenant}/locks/kop", LeaseWait: 2 * time.Minute}}},
		{Args: []string{"--group", "G", "--no-lease"}, Want: Options{Writes: session.Writes{NoLease: true, AuditFile: session.DefaultWrites().AuditFile}}},
		{Args: []string{"--group", "G", "--audit-topic", "persistent://{tenant}/kop-offsets/audit"},
			Want: Options{Writes: session.Writes{AuditFile: session.DefaultWrites().AuditFile, AuditTopic: "persistent://{tenant}/kop-offsets/audit"}}},
		{Args: []string{"--group", "G", "--no-lease", "--lease-wait", "1m"}, Err: "--no-lease cannot be combined"},
		{Args: []string{"--group", "G", "--lease-wait", "-1s"}, Err: "--lease-wait must not be negative"},
	}
	clitest.CheckFlags(t, NewCmdReload, tests, func(got, want *Options) bool { return got.Writes == want.Writes })
}

type commitsSeen struct{ n int }

func (c *commitsSeen) CommitRequests(_ context.Context, reqs [][]kop.OffsetCommit) []kop.Sent {
	c.n += len(reqs)
	out := make([]kop.Sent, len(reqs))
	for i := range out {
		out[i].Partition = 1
	}
	return out
}

func TestFailoverCommitsTakeTheLeaseFirst(t *testing.T) {
	h := newHarness(t)
	b, file := heldElsewhere(t, h)
	s, err := h.opts.NewSession(config.Cluster{Name: "wus", Tenant: "public", MetadataNamespace: "__kafka"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	inner := &commitsSeen{}
	w := s.Commits(inner, "persistent://public/__kafka/__consumer_offsets")
	commits := []kop.OffsetCommit{{Group: "orders", Topic: "persistent://public/default/t", Offset: 5}}
	if s := w.CommitRequests(context.Background(), [][]kop.OffsetCommit{commits}); !errors.Is(s[0].Err, lease.ErrHeld) || inner.n != 0 {
		t.Fatalf("commit while the lease is held elsewhere: %v, %d written", s[0].Err, inner.n)
	}
	b.Holder = nil
	if s := w.CommitRequests(context.Background(), [][]kop.OffsetCommit{commits}); s[0].Err != nil || inner.n != 1 {
		t.Fatalf("%v, %d written", s[0].Err, inner.n)
	}
	s.Close()
	recs := readTrail(t, file)
	if len(recs) != 1 || recs[0].Action != audit.ActionCommit || recs[0].Cluster != "wus" || recs[0].Offsets[0].Offset != 5 ||
		recs[0].Topic != "persistent://public/__kafka/__consumer_offsets-partition-1" {
		t.Errorf("trail %+v", recs)
	}
}
