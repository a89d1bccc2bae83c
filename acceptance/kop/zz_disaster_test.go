//go:build kop

package kop

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest/labcli"
)

// disasterDoc is what TestDisasterLandsWhatCanLand reads of `failover -o json`.
type disasterDoc struct {
	Plan struct {
		SourceDown string
		Landings   map[string]int
		Rows       []struct {
			Group      string
			Action     string
			Landing    string
			Translated *int64
			Served     *int64
			Persisted  *int64
			Why        string
		}
	}
	Result *struct {
		Proof []struct {
			Group        string
			OK           bool
			TargetServes *int64
		}
		Proven int
		Error  string
	}
	// Omitted: the rows a document of many rows leaves out (landed kept, proven served).
	Omitted  *struct{ Rows, Groups int }
	ExitCode int
}

// TestDisasterLandsWhatCanLand is issue 47's disaster on KoP: one offsets partition of wus
// (so one bundle) holds two groups of a misaligned topic (scus offset N is wus N-300).
// kept: consumed scus to 600 while watch --keep-translations ran (kept on wus as 300). held:
// committed 400 on scus, which wus's KoP loaded untranslated (it serves 400, wus's scus 700:
// 300 messages past the group), then 500 after watch stopped, never translated. scus stops.
//   - failover without --source-gone refuses (exit 3), naming the flag: nothing written;
//   - with --source-gone, kept lands on 300 and a consumer of it on wus starts at k-300
//     (the first message it had not consumed on scus); held has no safe position newer
//     than what KoP serves (the earliest, 0, would move it back from 400), so it is left
//     and named, and its served 400 is held: the reload of the shared bundle that lands
//     kept does not make it serve the untranslated 500. Exit 1 (rows left).
func TestDisasterLandsWhatCanLand(t *testing.T) {
	topic, kept, part := settledGroup(t, "disaster")
	held := sameOffsetsPartition(kept, "disaster-held")
	labtest.Settle(t, theLab, held)
	shiftedCopies(t, topic, 300, 1000)

	labtest.Commit(t, theLab, "scus", held, topic, 400)
	labtest.WaitReplicated(t, theLab, "scus", "wus", part)
	labtest.LoadOn(t, theLab, "wus", held)
	labtest.WantServed(t, theLab, "wus", held, topic, "400", "wus serves %s for the held group, want the untranslated 400")

	listen := labtest.FreeListen(t)
	stop := cli.StartWatchArgs(t, listen, 20, "--keep-translations", "--interval", "2s", "--group", kept)
	labtest.Commit(t, theLab, "scus", kept, topic, 600)
	labtest.WaitReplicated(t, theLab, "scus", "wus", part)
	keptCount(t, listen, "wus", 1)
	if code, stopped := stop(); !stopped || code != 0 {
		t.Fatalf("watch: exit %d (stopped %v)", code, stopped)
	}
	labtest.Commit(t, theLab, "scus", held, topic, 500)
	labtest.WaitReplicated(t, theLab, "scus", "wus", part)

	resume := labtest.PauseCluster(t, theLab, "scus")
	defer resume()
	start := time.Now()
	code, _, errOut := labcli.RunCLI(context.Background(), theLab, "--timeout", "10s", "failover", "--from", "scus", "--to", "wus", "--group", kept, "--group", held, "--yes")
	t.Logf("failover without --source-gone: exit %d in %s\n%s", code, time.Since(start).Round(time.Millisecond), errOut)
	if code != 3 || !strings.Contains(errOut, "--source-gone") {
		t.Fatalf("failover without --source-gone, scus stopped: exit %d, want 3 naming the flag", code)
	}
	labtest.WantServed(t, theLab, "wus", held, topic, "400", "wus serves %s for the held group after a refused failover, want 400")

	d, took := disasterFailover(t, kept, held)
	t.Logf("failover --source-gone: exit %d in %s, landings %v", d.ExitCode, took.Round(time.Millisecond), d.Plan.Landings)
	rows := map[string]int{}
	for i, r := range d.Plan.Rows {
		rows[r.Group] = i
		t.Logf("row %s: %s (%s) translated %s: %s", r.Group, r.Action, r.Landing, labtest.Val(r.Translated), r.Why)
	}
	if d.ExitCode != 1 || len(d.Plan.Rows) != 2 || d.Result == nil || d.Plan.Landings["kept"] != 1 || d.Plan.Landings["left"] != 1 {
		t.Fatalf("failover --source-gone: exit %d, want 1 (a row left), %+v", d.ExitCode, d)
	}
	k, h := d.Plan.Rows[rows[kept]], d.Plan.Rows[rows[held]]
	if k.Landing != "kept" || labtest.Val(k.Translated) != "300" || (k.Action != "reload" && k.Action != "write") {
		t.Fatalf("kept row %+v", k)
	}
	if h.Landing != "left" || h.Action != "hold" || labtest.Val(h.Translated) != "400" || !strings.Contains(h.Why, "no kept translation of scus's 500") ||
		!strings.Contains(h.Why, "serves 400") {
		t.Fatalf("held row %+v", h)
	}
	for _, p := range d.Result.Proof {
		if !p.OK {
			t.Fatalf("proof %+v: %s", d.Result.Proof, d.Result.Error)
		}
	}
	labtest.WantServed(t, theLab, "wus", held, topic, "400", "wus serves %s for the held group after the failover, want 400 (never the untranslated 500)")
	labtest.WantServed(t, theLab, "wus", kept, topic, "300", "wus serves %s for the kept group, want 300")
	// A load the tool does not control (a broker restart) serves the same.
	labtest.LoadOn(t, theLab, "wus", held)
	labtest.WantServed(t, theLab, "wus", held, topic, "400", "after another load wus serves %s for the held group, want 400")
	first := labtest.FirstRecord(t, theLab, "wus", kept, topic)
	if first.Offset != 300 || string(first.Key) != "k-300" {
		t.Fatalf("a consumer of %s on wus starts at offset %d key %s, want 300 k-300", kept, first.Offset, first.Key)
	}
	if took > 2*time.Minute {
		t.Errorf("failover --source-gone took %s", took)
	}
}

// disasterFailover runs failover --source-gone of the groups from scus to wus.
func disasterFailover(t *testing.T, groups ...string) (disasterDoc, time.Duration) {
	t.Helper()
	args := []string{"--timeout", "10s", "failover", "-o", "json", "--yes", "--source-gone", "--from", "scus", "--to", "wus"}
	for _, g := range groups {
		args = append(args, "--group", g)
	}
	start := time.Now()
	code, out := cli.Run(t, args...)
	took := time.Since(start)
	var d disasterDoc
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("failover: exit %d, not a document: %v\n%s", code, err, out)
	}
	if d.ExitCode != code {
		t.Fatalf("failover: exit %d, document says %d", code, d.ExitCode)
	}
	return d, took
}

// sameOffsetsPartition is a new group name starting with prefix that lives in group's
// offsets partition, hence in its bundle.
func sameOffsetsPartition(group, prefix string) string {
	want := loader.PartitionFor(group, lab.OffsetsTopicPartitions)
	base := labtest.Name(prefix)
	for i := 0; ; i++ {
		if g := fmt.Sprintf("%s-%d", base, i); loader.PartitionFor(g, lab.OffsetsTopicPartitions) == want {
			return g
		}
	}
}
