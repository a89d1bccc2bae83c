//go:build kop

package kop

import (
	"context"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
)

// TestSyncAfterFailover is issue 51's switch of modes on real KoP, with commits in every
// phase, counting the commits sync sends: replication with watch --keep-translations (the
// group commits on scus; its last commit is never kept), a disaster failover to wus with scus
// stopped (SIGSTOP; the failover writes its record) and resumed, then sync setup and watch
// --sync while the group commits on wus and then on scus again. The failover's record is the
// group's own position on wus, the kept translations under it history: scus follows it once
// (the seed), watch --sync sends nothing for it (the issue saw the same commit sent to wus
// every cycle, 29 times in 30 s), syncs each of the group's commits on wus to scus exactly
// once, and follows it back to scus.
func TestSyncAfterFailover(t *testing.T) {
	topic, group, part := settledGroup(t, "sync-after-failover")
	shiftedCopies(t, topic, 300, 3000) // scus N is wus N-300
	scus, wus := kafkaAdmin(t, "scus"), kafkaAdmin(t, "wus")

	// Replication with the keeper: the group runs on scus.
	listen := labtest.FreeListen(t)
	stop := cli.StartWatchArgs(t, listen, 20, "--keep-translations", "--cluster", "wus", "--interval", "2s", "--group", group)
	for i, o := range []int64{1300, 2295} {
		commitOn(t, scus, "scus", group, topic, o)
		labtest.WaitReplicated(t, theLab, "scus", "wus", part)
		keptCount(t, listen, "wus", i+1)
	}
	if code, stopped := stop(); !stopped || code != 0 {
		t.Fatalf("watch --keep-translations: exit %d (stopped %v)", code, stopped)
	}
	// A commit the keeper never translated: the failover writes its record over it.
	commitOn(t, scus, "scus", group, topic, 2395)
	labtest.WaitReplicated(t, theLab, "scus", "wus", part)

	// The disaster: scus stops, the group fails over to wus; scus comes back.
	resume := labtest.PauseCluster(t, theLab, "scus")
	code, d, took := failover(t, "--source", "scus", "--target", "wus", "--group", group, "--source-gone")
	resume()
	// 5: an older kept translation (2395 was not translated: the group re-reads).
	if code != 5 || d.Result == nil || len(d.Plan.Rows) != 1 || labtest.Val(d.Plan.Rows[0].Translated) != "1995" {
		t.Fatalf("failover without scus: exit %d in %s, %+v", code, took, d)
	}
	if r := d.Plan.Rows[0]; r.Action != "write" {
		t.Fatalf("failover row %+v: want its record written (scus's 2395 was not translated)", r)
	}
	t.Logf("failover without scus: wus lands the group on 1995 (the kept translation of scus's 2295; 2395 was not translated) in %s", took.Round(time.Millisecond))

	// Sync: nothing to send for the failover's record; the group's commits on wus are synced
	// to scus, once each; then it moves back to scus.
	syncSetUp(t, "--group", group)
	cfg := labtest.ConfigCopy(t, theLab, "sync-after-failover")
	slisten := labtest.FreeListen(t)
	p := startSync(t, cfg, slisten, "10s", group)
	sent := func(cluster string) float64 {
		return metric(t, slisten, "kop_offsets_sync_commits_total", `cluster="`+cluster+`"`)
	}
	// The failover's record is the group's newest word: scus follows it (sync setup's seed,
	// before watch started), the group re-reading there too what it re-reads on wus.
	if _, got, ok := servedWithin(context.Background(), scus, group, topic, 2295, 10*time.Second); !ok {
		t.Fatalf("scus serves %d after sync setup, want 2295 (wus's 1995, where the failover landed the group)", got)
	}
	time.Sleep(5 * time.Second)
	if s, w := sent("scus"), sent("wus"); s+w > 0 {
		t.Fatalf("%v offsets committed on scus and %v on wus with nothing new after the failover; sync log:\n%s", s, w, grepLines(p.stderr(), group, 20))
	}
	for _, c := range []struct {
		on         string
		offset     int64
		want       int64
		sentToScus float64
		sentToWus  float64
	}{
		{"wus", 2100, 2400, 1, 0},
		{"wus", 2400, 2700, 2, 0},
		{"scus", 2800, 2500, 2, 1},
	} {
		from, to := wus, scus
		if c.on == "scus" {
			from, to = scus, wus
		}
		commitOn(t, from, c.on, group, topic, c.offset)
		d, got, ok := servedWithin(context.Background(), to, group, topic, c.want, 10*time.Second)
		if !ok {
			t.Fatalf("%s committed %d; the other cluster serves %d 10 s later, want %d; sync log:\n%s", c.on, c.offset, got, c.want, grepLines(p.stderr(), group, 20))
		}
		time.Sleep(2 * time.Second) // a repeat would show within the coalescing windows
		if s, w := sent("scus"), sent("wus"); s != c.sentToScus || w != c.sentToWus {
			t.Fatalf("after %s committed %d: %v offsets committed on scus, %v on wus; want %v and %v; sync log:\n%s", c.on, c.offset, s, w, c.sentToScus, c.sentToWus, grepLines(p.stderr(), group, 20))
		}
		t.Logf("%s %d -> the other cluster serves %d after %s; offsets committed so far: %v on scus, %v on wus", c.on, c.offset, c.want, d.Round(time.Millisecond), c.sentToScus, c.sentToWus)
	}
}
