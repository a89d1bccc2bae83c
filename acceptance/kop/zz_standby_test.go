//go:build kop

package kop

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest/labcli"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// This file runs last in the suite (zz_s after zz_scale): it stops scus.

// failoverDoc is what the tests read of `failover -o json`.
type failoverDoc struct {
	Plan struct {
		SourceDown string
		Rows       []struct {
			Group      string
			Action     string
			Source     int64
			Translated *int64
			Why        string
			Kept       *loader.Kept
		}
	}
	Result *struct {
		Proof []struct {
			OK           bool
			TargetServes *int64
		}
		Error string
	}
	ExitCode int
}

func failover(t *testing.T, args ...string) (int, failoverDoc, time.Duration) {
	t.Helper()
	start := time.Now()
	code, out := cli.Run(t, append([]string{"--timeout", "10s", "failover", "-o", "json", "--yes"}, args...)...)
	took := time.Since(start)
	var d failoverDoc
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("failover: exit %d, not a document: %v", code, err)
	}
	return code, d, took
}

// keptCount waits until watch has written at least n kept translations on cluster (its
// /metrics) and returns the count.
func keptCount(t *testing.T, listen, cluster string, n int) int {
	t.Helper()
	re := regexp.MustCompile(`(?m)^kop_offsets_watch_kept_translations_total\{cluster="` + cluster + `",from="[a-z]+",result="written"\} (\d+)`)
	got := 0
	labtest.WaitMetrics(t, listen, func(m string) bool {
		got = 0
		for _, s := range re.FindAllStringSubmatch(m, -1) {
			v, _ := strconv.Atoi(s[1])
			got += v
		}
		return got >= n
	})
	if got < n {
		t.Fatalf("%s: %d kept translations, want %d", cluster, got, n)
	}
	return got
}

// TestStandbyWithoutThePrimary is issue 30's story on KoP. topic: 300 messages written on
// scus with replication off, then 1000 replicated (scus offset N is wus offset N-300); the
// aligned topic: the user's story (10900 messages, wus serving 500). With `watch
// --keep-translations` running, the group commits 600 then 900 on scus (kept on wus as 300
// and 600), and the aligned group 10900. Watch stops; the group reaches 1100 on scus
// (replicated, never translated). Then scus stops (SIGSTOP: a region gone) and:
//   - failover --source scus --target wus lands the group on 600 (the translation of 900, the
//     last kept): a consumer on wus starts at k-600, the first message it had not consumed
//     at 900; it re-reads k-600..k-799 (200 messages: what it consumed between the last
//     translated commit and the disaster), skips nothing;
//   - repair --cluster wus heals the aligned story (wus serves 10900) without scus.
//
// Then scus returns: the story's group, moved to wus, commits 11000 there; watch keeps it on
// scus, failover back lands scus on 11000, and check says ok.
func TestStandbyWithoutThePrimary(t *testing.T) {
	topic, group, part := settledGroup(t, "standby")
	story, storyGroup, storyPart := labtest.StoryAt500(t, theLab, "standby-story")
	shiftedCopies(t, topic, 300, 1000)
	scus, wus := theLab.Cluster("scus"), theLab.Cluster("wus")

	listen := labtest.FreeListen(t)
	stop := cli.StartWatchArgs(t, listen, 20, "--keep-translations", "--interval", "2s", "--group", group, "--group", storyGroup)
	keptCount(t, listen, "wus", 1) // the story's replicated 500, at the first cycle
	for i, o := range []int64{600, 900} {
		labtest.Commit(t, theLab, "scus", group, topic, o)
		labtest.WaitReplicated(t, theLab, "scus", "wus", part)
		keptCount(t, listen, "wus", i+2)
	}
	// Any load of wus now lands the kept translation (KoP loads it like any commit).
	labtest.LoadOn(t, theLab, "wus", group)
	labtest.WantServed(t, theLab, "wus", group, topic, "600", "after a load wus serves %s, want the kept translation 600")
	labtest.Commit(t, theLab, "scus", storyGroup, story, 10900)
	labtest.WaitReplicated(t, theLab, "scus", "wus", storyPart)
	keptCount(t, listen, "wus", 4)
	if code, stopped := stop(); !stopped || code != 0 {
		t.Fatalf("watch: exit %d (stopped %v)", code, stopped)
	}
	labtest.Commit(t, theLab, "scus", group, topic, 1100)
	labtest.WaitReplicated(t, theLab, "scus", "wus", part)

	resume := labtest.PauseCluster(t, theLab, "scus")
	code, d, took := failover(t, "--source", "scus", "--target", "wus", "--group", group, "--source-gone")
	t.Logf("failover without scus: exit %d in %s", code, took.Round(time.Millisecond))
	// 5: landed on an older kept translation (the group re-reads; issue 47).
	if code != 5 || d.Plan.SourceDown == "" || len(d.Plan.Rows) != 1 || d.Result == nil {
		t.Fatalf("failover without scus: exit %d, %+v", code, d)
	}
	r := d.Plan.Rows[0]
	if r.Action != "write" || labtest.Val(r.Translated) != "600" || r.Source != 1100 || !strings.Contains(r.Why, "newer commit 1100 could not be translated") {
		t.Fatalf("row %+v", r)
	}
	if p := d.Result.Proof; len(p) != 1 || !p[0].OK || labtest.Val(p[0].TargetServes) != "600" {
		t.Fatalf("proof %+v", d.Result)
	}
	if took > 2*time.Minute {
		t.Errorf("failover waited %s on the gone cluster (one 10s timeout expected)", took)
	}
	first := labtest.FirstRecord(t, theLab, "wus", group, topic)
	if first.Offset != 600 || string(first.Key) != "k-600" {
		t.Fatalf("a consumer on wus starts at offset %d key %s, want 600 k-600", first.Offset, first.Key)
	}
	t.Logf("re-read after the disaster: k-600..k-799, 200 messages (consumed on scus between the last kept translation, 900, and 1100)")

	start := time.Now()
	code, out := cli.Run(t, "--timeout", "10s", "repair", "--cluster", "wus", "--group", storyGroup, "--yes")
	t.Logf("repair of the aligned story without scus: exit %d in %s", code, time.Since(start).Round(time.Millisecond))
	if code != 3 && code != 0 {
		t.Errorf("repair without scus: exit %d, want 3 (scus unreachable, what could be checked repaired) or 0", code)
	}
	if got := labtest.Served(t, theLab, "wus", storyGroup, story); got != "10900" {
		t.Fatalf("after repair without scus wus serves %s, want 10900 (exit %d)\n%s", got, code, out)
	}

	// Failback. scus returns. The story's group, moved to wus, reads on and commits 11000
	// there; the misaligned group, moved to wus at 600, reads to 950 and commits it there:
	// scus 1250, counted from its own commit on scus (1100, wus 800), not from the 300
	// messages only scus holds. Watch keeps both on scus; failover back lands scus on 11000
	// and 1250, a consumer on scus starts at k-950, and check says ok.
	resume()
	labtest.Produce(t, scus, story, 100)
	labtest.WaitEndOffset(t, wus, story, 11000)
	labtest.Commit(t, theLab, "wus", storyGroup, story, 11000)
	labtest.Commit(t, theLab, "wus", group, topic, 950)
	labtest.WaitReplicated(t, theLab, "wus", "scus", storyPart)
	labtest.WaitReplicated(t, theLab, "wus", "scus", part)
	listen2 := labtest.FreeListen(t)
	stop2 := cli.StartWatchArgs(t, listen2, 20, "--keep-translations", "--interval", "2s", "--group", storyGroup, "--group", group)
	keptCount(t, listen2, "scus", 2)
	stop2()
	code, d, took = failover(t, "--source", "wus", "--target", "scus", "--group", storyGroup, "--group", group)
	t.Logf("failback: exit %d in %s", code, took.Round(time.Millisecond))
	want := map[string]string{storyGroup: "11000", group: "1250"}
	if code != 0 || len(d.Plan.Rows) != 2 {
		t.Fatalf("failback: exit %d, %+v", code, d)
	}
	for _, r := range d.Plan.Rows {
		if labtest.Val(r.Translated) != want[r.Group] {
			t.Fatalf("failback row %+v, want %s", r, want[r.Group])
		}
	}
	labtest.WantServed(t, theLab, "scus", storyGroup, story, "11000", "scus serves %s after failback, want 11000")
	labtest.WantServed(t, theLab, "scus", group, topic, "1250", "scus serves %s after failback, want 1250 (wus 950)")
	if first := labtest.FirstRecord(t, theLab, "scus", group, topic); first.Offset != 1250 || string(first.Key) != "k-950" {
		t.Fatalf("after failback a consumer on scus starts at offset %d key %s, want 1250 k-950", first.Offset, first.Key)
	}
	rep, code := cli.Check(t, "--group", storyGroup, "--group", group)
	for _, g := range []string{storyGroup, group} {
		if r := labcli.Row(t, rep, g); code != 0 || r.Status != verdict.StatusOK {
			t.Fatalf("check after failback: exit %d, %s %s %+v", code, g, r.Status, r.Cells)
		}
	}
}
