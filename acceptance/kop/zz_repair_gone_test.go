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
	// Long enough that a second wait on scus cannot hide in the reload of wus's bundle (seconds
	// on a fresh lab; tens of seconds when it holds thousands of groups of other tests).
	const timeout = time.Minute
	start := time.Now()
	code, out := cli.Run(t, "--timeout", timeout.String(), "repair", "--lock-file", filepath.Join(t.TempDir(), "repair.lock"),
		"--cluster", "wus", "--group", group, "--yes", "-o", "json")
	took := time.Since(start)
	var d struct {
		Stale       []struct{ Group string }
		PeersUnread []string
		After       *struct{ Stale []struct{ Group string } }
		ExitCode    int
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("repair: exit %d, not a document: %v", code, err)
	}
	t.Logf("repair --cluster wus, scus stopped: exit %d in %s (one --timeout is %s), peersUnread %v", code, took.Round(time.Millisecond), timeout, d.PeersUnread)
	labtest.WantServed(t, theLab, "wus", group, topic, "10900", "after the repair wus serves %s, want 10900")
	if code != 0 || d.ExitCode != 0 || !slices.Equal(d.PeersUnread, []string{"scus"}) || len(d.Stale) != 1 || d.After == nil || len(d.After.Stale) != 0 {
		t.Fatalf("repair: exit %d, want 0 with peersUnread [scus]: %+v", code, d)
	}
	// One wait on scus, then the reload of one bundle: less than a second wait.
	if took < timeout || took > 2*timeout {
		t.Errorf("repair took %s: want one --timeout (%s) on scus, not two or more", took.Round(time.Millisecond), timeout)
	}
}
