//go:build kop

package kop

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
)

// TestRepairWithTheSourceGone is issue 47 item 4 on KoP: the user's story on wus (KoP
// serves 500, the offsets topic holds the kept translation of scus's 10900), then scus stops
// (SIGSTOP: a region gone). `repair --cluster wus` asks scus once, within --timeout (the
// first check); the reload plan, its re-plan and the second check do not wait on it again.
// wus serves 10900 afterwards and the run exits 0 naming scus in peersUnread: "wus repaired,
// scus unreachable", not 3, which a runbook reads as "repair failed". Seen before the fix:
// exit 3 after four timeouts.
func TestRepairWithTheSourceGone(t *testing.T) {
	topic, group, part := labtest.StoryAt500(t, theLab, "repair-gone")
	listen := labtest.FreeListen(t)
	stop := cli.StartWatchArgs(t, listen, 20, "--keep-translations", "--interval", "2s", "--group", group)
	keptCount(t, listen, "wus", 1) // the replicated 500
	labtest.Commit(t, theLab, "scus", group, topic, 10900)
	labtest.WaitReplicated(t, theLab, "scus", "wus", part)
	keptCount(t, listen, "wus", 2)
	if code, stopped := stop(); !stopped || code != 0 {
		t.Fatalf("watch: exit %d (stopped %v)", code, stopped)
	}
	labtest.WantServed(t, theLab, "wus", group, topic, "500", "wus serves %s before the repair, want the stale 500")

	resume := labtest.PauseCluster(t, theLab, "scus")
	defer resume()
	const timeout = 40 * time.Second
	start := time.Now()
	code, out := cli.Run(t, "--timeout", timeout.String(), "repair", "--lock-file", filepath.Join(t.TempDir(), "repair.lock"),
		"--cluster", "wus", "--group", group, "--yes", "-o", "json")
	took := time.Since(start)
	var d struct {
		Stale       []struct{ Group string }
		PeersUnread []string
		After       *struct{ Stale []struct{ Group string } }
		Clusters    []struct {
			Execution *struct {
				Bundles []struct{ UnloadedAt, VerifiedAt *time.Time }
			}
		}
		ExitCode int
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("repair: exit %d, not a document: %v", code, err)
	}
	t.Logf("repair --cluster wus, scus stopped: exit %d in %s (one --timeout is %s), peersUnread %v", code, took.Round(time.Millisecond), timeout, d.PeersUnread)
	labtest.WantServed(t, theLab, "wus", group, topic, "10900", "after the repair wus serves %s, want 10900")
	if code != 0 || d.ExitCode != 0 || !slices.Equal(d.PeersUnread, []string{"scus"}) || len(d.Stale) != 1 || d.After == nil || len(d.After.Stale) != 0 {
		t.Fatalf("repair: exit %d, want 0 with peersUnread [scus]: %+v", code, d)
	}
	// The reload of wus's bundle takes seconds on a fresh lab, minutes when the bundle holds
	// thousands of groups of other tests: the waits are read around it. Before the unload: the
	// first check's one wait on scus, then the plan (scus not asked: a second wait would be
	// another timeout); after the verification: the second check (scus not dialled).
	if len(d.Clusters) != 1 || d.Clusters[0].Execution == nil || len(d.Clusters[0].Execution.Bundles) != 1 ||
		d.Clusters[0].Execution.Bundles[0].UnloadedAt == nil || d.Clusters[0].Execution.Bundles[0].VerifiedAt == nil {
		t.Fatalf("repair: no execution of one bundle with its times: %+v", d.Clusters)
	}
	b := d.Clusters[0].Execution.Bundles[0]
	before, reload, after := b.UnloadedAt.Sub(start), b.VerifiedAt.Sub(*b.UnloadedAt), start.Add(took).Sub(*b.VerifiedAt)
	t.Logf("first check and plan %s, reload and verification %s, second check %s", before.Round(time.Millisecond), reload.Round(time.Millisecond), after.Round(time.Millisecond))
	if before < timeout || before > 2*timeout || after > timeout {
		t.Errorf("scus waited on more than once: %s before the unload (one --timeout is %s), %s after the verification", before.Round(time.Millisecond), timeout, after.Round(time.Millisecond))
	}
}
