//go:build kop

package kop

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
)

// TestDisasterEmptyTopic is issue 47 item 1 on KoP for keep and failover (sync has
// TestSyncEmptyTopic): on a topic with no message on either cluster (a new topic, or one whose
// messages all expired), scus's commits past the log end (1000, 2000, 2500) are kept on wus
// exactly, never ahead (the Tracker once kept 2000 as 3000 and 2500 as 3500: a skip the day
// messages arrive); with scus stopped, failover --source-gone lands the group on 2500.
func TestDisasterEmptyTopic(t *testing.T) {
	topic, group, part := settledGroup(t, "disaster-empty")
	commits := []int64{1000, 2000, 2500}
	listen := labtest.FreeListen(t)
	stop := cli.StartWatchArgs(t, listen, 20, "--keep-translations", "--interval", "2s", "--group", group)
	for i, o := range commits {
		labtest.Commit(t, theLab, "scus", group, topic, o)
		labtest.WaitReplicated(t, theLab, "scus", "wus", part)
		keptCount(t, listen, "wus", i+1)
	}
	if code, stopped := stop(); !stopped || code != 0 {
		t.Fatalf("watch: exit %d (stopped %v)", code, stopped)
	}
	// Every offset wus's offsets topic holds for the group, replicated or kept, is one of
	// scus's commits: none ahead.
	code, out := cli.Run(t, "--cluster", "wus", "dump", "--group", group, "-o", "json")
	var d struct {
		Records []struct {
			Group, Topic string
			Offset       int64
		}
	}
	if err := json.Unmarshal([]byte(out), &d); code != 0 || err != nil {
		t.Fatalf("dump of wus: exit %d: %v", code, err)
	}
	seen := 0
	for _, r := range d.Records {
		if r.Group != group || !strings.HasSuffix(r.Topic, "/"+topic) { // dump names topics in full
			continue
		}
		seen++
		if r.Offset != 1000 && r.Offset != 2000 && r.Offset != 2500 {
			t.Errorf("wus's offsets topic holds %d for %s, not one of scus's commits %v: a translation ahead", r.Offset, group, commits)
		}
	}
	if seen < 2*len(commits) {
		t.Fatalf("wus's offsets topic holds %d records of %s/%s, want the %d replicated and %d kept", seen, group, topic, len(commits), len(commits))
	}

	resume := labtest.PauseCluster(t, theLab, "scus")
	defer resume()
	f, took := disasterFailover(t, group)
	if f.ExitCode != 0 || len(f.Plan.Rows) != 1 || f.Plan.Rows[0].Landing != "kept" || labtest.Val(f.Plan.Rows[0].Translated) != "2500" {
		t.Fatalf("failover --source-gone: exit %d in %s, want 0 landing kept 2500: %+v", f.ExitCode, took, f.Plan)
	}
	labtest.WantServed(t, theLab, "wus", group, topic, "2500", "after the failover wus serves %s, want 2500")
	t.Logf("empty topic: scus %v kept on wus exactly (%d records of the group there); failover --source-gone landed 2500 in %s", commits, seen, took)
}
