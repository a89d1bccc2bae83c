//go:build kop

package kop

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
)

// TestSyncFollowsResets is issue 51's resets on real KoP, through streaming sync, on a
// misaligned topic (300 messages on scus alone: scus N is wus N-300). The group is homed on
// scus, consumes to 600, and is reset the ways operators reset an empty group (an
// OffsetCommit of the computed position, as kafka-consumer-groups --reset-offsets does): by a
// negative shift, to an explicit offset, to the earliest, and forward to the latest. After
// each, wus serves the exact translation of the reset point (the tool's own commit there is
// no floor), and a Kafka consumer of the group on wus starts at the first message after it.
// Then the group is homed on wus (its newer own commit there) and moved back there: scus
// follows it back exactly, its 300 messages of its own (below the group's position there)
// still consumed.
func TestSyncFollowsResets(t *testing.T) {
	topic, group, _ := settledGroup(t, "sync-reset")
	shiftedCopies(t, topic, 300, 600)
	syncSetUp(t, "--group", group)
	scus, wus := kafkaAdmin(t, "scus"), kafkaAdmin(t, "wus")
	cfg := labtest.ConfigCopy(t, theLab, "sync-reset")
	listen := labtest.FreeListen(t)
	p := startSync(t, cfg, listen, "10s", group)

	step := func(on string, offset, want int64, what string) {
		t.Helper()
		from, to := scus, wus
		if on == "wus" {
			from, to = wus, scus
		}
		commitOn(t, from, on, group, topic, offset)
		d, got, ok := servedWithin(context.Background(), to, group, topic, want, 10*time.Second)
		if !ok {
			t.Fatalf("%s: %s committed %d; the other cluster serves %d 10 s later, want %d; sync log:\n%s",
				what, on, offset, got, want, grepLines(p.stderr(), group, 20))
		}
		t.Logf("%s: %s %d -> the other cluster serves %d after %s", what, on, offset, want, d.Round(time.Millisecond))
	}
	// firstOnWus: a consumer of the group on wus starts at want, the record scus holds at
	// scusAt (the same message).
	firstOnWus := func(want, scusAt int64) {
		t.Helper()
		first := labtest.FirstRecord(t, theLab, "wus", group, topic)
		next := recordAt(t, "scus", topic, scusAt)
		if first.Offset != want || string(first.Key) != string(next.Key) {
			t.Fatalf("a consumer on wus starts at %d %s, want %d %s (scus %d)", first.Offset, first.Key, want, next.Key, scusAt)
		}
		t.Logf("a consumer of the group on wus starts at %d, key %s: scus's %d", first.Offset, first.Key, scusAt)
		waitNoMembers(t, "wus", group)
	}

	step("scus", 600, 300, "consumed to 600 on scus")
	step("scus", 500, 200, "reset by a shift of -100")
	firstOnWus(200, 500)
	step("scus", 350, 50, "reset to the offset 350")
	step("scus", 0, 0, "reset to the earliest")
	firstOnWus(0, 300) // scus's first 300 are scus's alone: wus's first is scus's 300
	end := endOf(t, "scus", topic)
	step("scus", end, end-300, "reset forward to the latest")

	// Homed on wus now: its own commit there is newer. It is moved back on wus (the group
	// had reached wus 600 on scus): scus follows exactly, its own 300 messages below the
	// group's position there still consumed; then forward, then to wus's earliest.
	time.Sleep(50 * time.Millisecond)
	step("wus", 400, 700, "the group commits 400 on wus (back from 600)")
	step("wus", 550, 850, "then 550 on wus")
	step("wus", 0, 300, "reset to the earliest on wus")
	first := labtest.FirstRecord(t, theLab, "scus", group, topic)
	if first.Offset != 300 || string(first.Key) != string(recordAt(t, "wus", topic, 0).Key) {
		t.Fatalf("a consumer on scus starts at %d %s, want 300, wus's first message", first.Offset, first.Key)
	}
	t.Logf("a consumer of the group on scus starts at %d, key %s: wus's first message", first.Offset, first.Key)
	if strings.Contains(p.stderr(), `"level":"ERROR"`) {
		t.Errorf("sync logged errors:\n%s", grepLines(p.stderr(), `"level":"ERROR"`, 10))
	}
}

// startSync starts this build's watch --sync of groups on listen with config cfg (--timeout
// timeout, --verbose, no audit file) and waits until it is ready and holds the leases.
func startSync(t *testing.T, cfg, listen, timeout string, groups ...string) *process {
	t.Helper()
	args := []string{"--timeout", timeout, "--verbose", "watch", "--sync", "--listen", listen, "--audit-file", ""}
	for _, g := range groups {
		args = append(args, "--group", g)
	}
	p := startProcess(t, labtest.Binary(t), "sync", cfg, args...)
	labtest.WaitReady(t, "http://"+listen+"/readyz", func() error { return nil })
	waitActive(t, listen, 1)
	return p
}

// commitOn commits offset for group's topic/0 through KoP on cluster with adm (the group
// empty: as a reset does).
func commitOn(t *testing.T, adm *kadm.Client, cluster, group, topic string, offset int64) {
	t.Helper()
	commitParts(t, adm, cluster, group, topic, map[int32]int64{0: offset})
}

// TestSyncEmptyTopic: on a topic with no message on either cluster (a new topic, or one whose
// messages all expired), commits past the log end are synced exactly: positions of messages
// not written yet, the same on both sides (issue 47: the Tracker ran 1,000 ahead, 2000 -> 3000).
func TestSyncEmptyTopic(t *testing.T) {
	topic, group, _ := settledGroup(t, "sync-empty")
	syncSetUp(t, "--group", group)
	scus, wus := kafkaAdmin(t, "scus"), kafkaAdmin(t, "wus")
	cfg := labtest.ConfigCopy(t, theLab, "sync-empty")
	listen := labtest.FreeListen(t)
	p := startSync(t, cfg, listen, "10s", group)
	for _, o := range []int64{1000, 2000, 2500, 2400} {
		commitOn(t, scus, "scus", group, topic, o)
		d, got, ok := servedWithin(context.Background(), wus, group, topic, o, 10*time.Second)
		if !ok {
			t.Fatalf("scus committed %d on an empty topic; wus serves %d 10 s later, want %d; sync log:\n%s", o, got, o, grepLines(p.stderr(), group, 20))
		}
		t.Logf("scus %d on an empty topic: wus serves %d after %s", o, got, d.Round(time.Millisecond))
	}
}

// TestSyncTargetCutOff is issue 46's cut link on real KoP: a group commits on scus every
// 100 ms on a misaligned topic while wus is stopped (SIGSTOP: connections open, nothing
// answers) for 60 s. When wus resumes, it serves the translation of scus's newest commit
// within seconds (nothing queued beyond the latest per group), never a value no commit of the
// group translates to, and the OffsetCommits sent to wus stay fewer than the commits made.
func TestSyncTargetCutOff(t *testing.T) {
	topic, group, _ := settledGroup(t, "sync-cut")
	shiftedCopies(t, topic, 300, 3000)
	syncSetUp(t, "--group", group)
	scus, wus := kafkaAdmin(t, "scus"), kafkaAdmin(t, "wus")
	cfg := labtest.ConfigCopy(t, theLab, "sync-cut")
	listen := labtest.FreeListen(t)
	p := startSync(t, cfg, listen, "5s", group)

	made := map[int64]bool{}
	var last int64
	commitFor := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			last += 5
			commitOn(t, scus, "scus", group, topic, 300+last)
			made[last] = true
		}
	}
	commitFor(5 * time.Second)
	resume := labtest.PauseCluster(t, theLab, "wus")
	before := len(made)
	commitFor(60 * time.Second)
	during := len(made) - before
	resume()
	resumed, want := time.Now(), last
	var served []int64
	for {
		got, ok := servedBy(context.Background(), wus, group, topic)
		if ok {
			served = append(served, got)
		}
		if ok && got == want {
			t.Logf("wus resumed after 60 s cut off: it serves %d (scus's newest, %d, translated) %s later", got, 300+want, time.Since(resumed).Round(time.Millisecond))
			break
		}
		if time.Since(resumed) > time.Minute {
			t.Fatalf("wus serves %d (%v) a minute after it resumed, want %d; sync log:\n%s", got, ok, want, labtest.Tail(p.stderr(), 30))
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, v := range served {
		if !made[v] {
			t.Errorf("wus served %d after it resumed: no commit of the group translates to it", v)
		}
	}
	sent := metric(t, listen, "kop_offsets_sync_commits_total", `cluster="wus"`)
	t.Logf("%d commits on scus (%d while wus was cut off); %v offsets committed on wus; what the sync logged:\n%s", len(made), during, sent,
		grepLines(strings.ReplaceAll(p.stderr(), `"level":"DEBUG"`, ""), `"level":"`, 20))
	if sent > float64(len(made)) {
		t.Errorf("%v offsets committed on wus for %d commits on scus", sent, len(made))
	}
}

// TestSyncAfterUndo is issue 51's switch of modes on real KoP: sync (the tool's commits land
// on wus), `sync setup --undo` (the offsets topic replicates again and carries what it missed,
// the tool's commits included, while the group commits on scus), then `sync setup` and
// `watch --sync` again: the tool's commits that replicated meanwhile are history, not a sign
// that the topic replicates now. The group's next commit is synced, once.
func TestSyncAfterUndo(t *testing.T) {
	topic, group, part := settledGroup(t, "sync-undo")
	labtest.Produce(t, theLab.Cluster("scus"), topic, 500)
	labtest.WaitEndOffset(t, theLab.Cluster("wus"), topic, 500)
	scus, wus := kafkaAdmin(t, "scus"), kafkaAdmin(t, "wus")
	cfg := labtest.ConfigCopy(t, theLab, "sync-undo")
	watchSync := func() (*process, string) {
		listen := labtest.FreeListen(t)
		p := startSync(t, cfg, listen, "10s", group)
		return p, listen
	}
	served := func(o int64) {
		t.Helper()
		if _, _, ok := servedWithin(context.Background(), wus, group, topic, o, 20*time.Second); !ok {
			t.Fatalf("wus does not serve %d 20 s after scus committed it", o)
		}
	}
	syncSetUp(t, "--group", group)
	p, _ := watchSync()
	for _, o := range []int64{100, 150} {
		commitOn(t, scus, "scus", group, topic, o)
		served(o)
	}
	stopProcess(t, p)
	if code, out := cli.Run(t, "sync", "setup", "--undo", "--yes", "--audit-file", ""); code != 0 {
		t.Fatalf("sync setup --undo: exit %d: %s", code, out)
	}
	commitOn(t, scus, "scus", group, topic, 200) // the replication model: replicated to wus
	labtest.WaitReplicated(t, theLab, "scus", "wus", part)
	labtest.WaitReplicated(t, theLab, "wus", "scus", part)

	syncSetUp(t, "--group", group)
	p, listen := watchSync()
	commitOn(t, scus, "scus", group, topic, 300)
	served(300)
	// A commit of the tool's still carried back by a draining replicator holds the group for
	// 30 s at most; then, and from then on, the group's commits are synced.
	time.Sleep(31 * time.Second)
	refused := metric(t, listen, "kop_offsets_sync_groups_skipped_total", `reason="replicated"`)
	commitOn(t, scus, "scus", group, topic, 350)
	served(350)
	if n := metric(t, listen, "kop_offsets_sync_groups_skipped_total", `reason="replicated"`); n != refused {
		t.Errorf("the group was refused as replicating 31 s after sync setup again (%v times); sync log:\n%s", n-refused, grepLines(p.stderr(), "replicat", 10))
	}
	if n := metric(t, listen, "kop_offsets_sync_commits_total", `cluster="wus"`); n < 2 || n > 3 {
		t.Errorf("%v offsets committed on wus after setup again for two commits (and the seed's), want 2 or 3", n)
	}
	t.Logf("after sync, --undo and sync again: scus's 300 served on wus; sync log:\n%s", grepLines(p.stderr(), "replicat", 5))
}
