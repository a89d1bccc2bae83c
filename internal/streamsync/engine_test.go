package streamsync

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/kop"
)

// TestEngineSyncsALiveCommit: once both clusters are up and every partition has caught
// up, a group's own commit read live on scus is committed on wus, translated into wus's
// numbering and marked; the tool's commit read back on wus makes nothing due.
func TestEngineSyncsALiveCommit(t *testing.T) {
	env := newEngineEnv(t, Options{Window: 10 * time.Millisecond}, nil, nil)
	env.scus.setMembers("orders", 1)
	env.scus.start()
	env.wus.start()
	env.up()
	env.run()
	env.scus.live(commitOf("orders", 0, 6000))
	waitFor(t, "orders synced to wus", env.wus.hasCommit("orders", 0, 6000-extra))
	want := []kop.SyncCommit{{Topic: "topic-1", Partition: 0, Offset: 6000 - extra, Metadata: marked("scus", 6000)}}
	if got := env.wus.commitsOf("orders"); !slices.Equal(got, want) {
		t.Fatalf("commits on wus = %+v, want %+v", got, want)
	}
	waitFor(t, "the step reported", func() bool { return len(env.obs.stepsSeen()) > 0 })
	for _, s := range env.obs.stepsSeen() {
		if s.due != 0 || s.late != 0 {
			t.Fatalf("after a step, %d groups due and %d left for later: the tool's commit read back on wus made the group due, or the sync was not finished", s.due, s.late)
		}
	}
	res := env.obs.resultsOf("orders")
	if len(res) != 1 || res[0].Source != "scus" || len(res[0].Synced) != 1 || res[0].Synced[0].Translated != 6000-extra || len(res[0].Errors) != 0 {
		t.Fatalf("results = %+v, want one from scus, 5700 synced", res)
	}
	// The tool's commit is on wus's Store, as KoP wrote it.
	cos, ok := env.wus.store.Offsets("orders")
	if !ok || len(cos) != 1 || cos[0].Offset != 6000-extra || cos[0].Metadata != marked("scus", 6000) {
		t.Fatalf("wus's Store holds %+v, %v", cos, ok)
	}
	if n := env.scus.commitCalls(); n != 0 {
		t.Fatalf("%d commits on scus, the source", n)
	}
}

// TestEngineSyncsWhatWasReplayed: a group committed while nothing ran is synced once every
// partition has caught up, without a live commit.
func TestEngineSyncsWhatWasReplayed(t *testing.T) {
	env := newEngineEnv(t, Options{Window: 10 * time.Millisecond}, nil, nil)
	env.scus.setMembers("orders", 1)
	env.run()
	env.scus.start(commitOf("orders", 0, 6000), commitOf("orders", 1, 1000))
	env.wus.start()
	env.up()
	waitFor(t, "orders[0] synced", env.wus.hasCommit("orders", 0, 6000-extra))
	waitFor(t, "orders[1] synced", env.wus.hasCommit("orders", 1, 1000-extra))
}

// TestEngineWindowCoalesces: the commits of one group read within one Window are one
// commit on the target, the latest.
func TestEngineWindowCoalesces(t *testing.T) {
	const window = 400 * time.Millisecond
	env := newEngineEnv(t, Options{Window: window}, nil, nil)
	env.scus.setMembers("orders", 1)
	env.scus.start()
	env.wus.start()
	env.up()
	// Run starts after start, and each of its rounds sleeps Window before it takes the due
	// groups: no step takes orders before start+window, and the commits fed before then are
	// all read by the first step that does.
	start := time.Now()
	env.run()
	for o := int64(6001); o <= 6050; o++ {
		env.scus.live(commitOf("orders", 0, o))
	}
	took := time.Since(start)
	waitFor(t, "orders synced to wus", env.wus.hasCommit("orders", 0, 6050-extra))
	if took >= window {
		t.Skipf("feeding 50 commits took %s, longer than the window %s: inconclusive", took, window)
	}
	want := []kop.SyncCommit{{Topic: "topic-1", Partition: 0, Offset: 6050 - extra, Metadata: marked("scus", 6050)}}
	if got := env.wus.commitsOf("orders"); !slices.Equal(got, want) {
		t.Fatalf("50 commits within one window: commits on wus %+v, want only %+v", got, want)
	}
}

// TestEngineSentNeverMoreThanReceived: the offsets of a synced group's own commits read on
// its source are reported received (another group's, out of Options.Groups, and the tool's
// commits read back on the target are not); coalesced, the offsets committed on the target
// for them are fewer.
func TestEngineSentNeverMoreThanReceived(t *testing.T) {
	env := newEngineEnv(t, Options{Window: 50 * time.Millisecond, Groups: []string{"ord*"}}, nil, nil)
	env.scus.setMembers("orders", 1)
	env.scus.start()
	env.wus.start()
	env.up()
	env.run()
	for o := int64(6001); o <= 6050; o++ {
		env.scus.live(commitOf("orders", 0, o), commitOf("payments", 0, o))
	}
	waitFor(t, "orders synced to wus", env.wus.hasCommit("orders", 0, 6050-extra))
	if got := env.obs.receivedOn("scus"); got != 50 {
		t.Fatalf("received on scus: %d, want the 50 own commits of orders (not payments')", got)
	}
	if got := env.obs.receivedOn("wus"); got != 0 {
		t.Fatalf("received on wus: %d, want 0 (the tool's commits read back)", got)
	}
	sent := len(env.wus.commitsOf("orders")) + len(env.wus.commitsOf("payments"))
	if sent == 0 || sent > 50 {
		t.Fatalf("%d offsets committed on wus for 50 received, want 1 to 50", sent)
	}
}

// TestEngineMembershipCached: DescribeGroups is asked once for a group; its further commits
// are synced without it, until the stream shows a group record of it on a cluster, which
// asks that cluster again (and only it).
func TestEngineMembershipCached(t *testing.T) {
	env := newEngineEnv(t, Options{Window: 10 * time.Millisecond}, nil, nil)
	env.scus.setMembers("orders", 1)
	env.scus.start()
	env.wus.start()
	env.up()
	env.run()
	env.scus.live(commitOf("orders", 0, 6000))
	waitFor(t, "first sync", env.wus.hasCommit("orders", 0, 5700))
	for i, f := range []*fakeCluster{env.scus, env.wus} {
		if n, last := f.describes(); n != 1 || !slices.Equal(last, []string{"orders"}) {
			t.Fatalf("cluster %d: %d DescribeGroups (last %v), want 1 of [orders]", i, n, last)
		}
	}
	for o := int64(6001); o <= 6003; o++ {
		env.scus.live(commitOf("orders", 0, o))
		waitFor(t, "sync of a further commit", env.wus.hasCommit("orders", 0, o-extra))
	}
	sn, _ := env.scus.describes()
	wn, _ := env.wus.describes()
	if sn != 1 || wn != 1 {
		t.Fatalf("DescribeGroups asked again for a group whose members are known: scus %d, wus %d", sn, wn)
	}
	// A rebalance on scus: its group record makes orders due, scus asked again.
	results := len(env.obs.resultsOf("orders"))
	env.scus.liveGroup("orders", 2)
	waitFor(t, "a step after the group record", func() bool { return len(env.obs.resultsOf("orders")) > results })
	sn, _ = env.scus.describes()
	wn, _ = env.wus.describes()
	if sn != 2 || wn != 1 {
		t.Fatalf("after a group record on scus: DescribeGroups scus %d, wus %d, want 2, 1", sn, wn)
	}
	// Nothing new to commit: wus already holds 5703.
	if got := env.wus.commitsOf("orders"); len(got) != 4 {
		t.Fatalf("%d commits on wus, want 4", len(got))
	}
}

// TestEngineDescribeFailure: a cluster whose DescribeGroups failed is quiet: not asked at
// the next step, nothing committed to or from it; the group is synced again later, without
// a new commit, once the cluster answers.
func TestEngineDescribeFailure(t *testing.T) {
	const retry = 600 * time.Millisecond
	env := newEngineEnv(t, Options{Window: 10 * time.Millisecond, Retry: retry}, nil, nil)
	env.scus.setMembers("orders", 1)
	env.wus.setDescribeErr(errDown)
	env.scus.start()
	env.wus.start()
	env.up()
	env.run()
	env.scus.live(commitOf("orders", 0, 6000))
	waitFor(t, "the DescribeGroups failure reported", func() bool { return len(env.obs.describeFailures()) > 0 })
	waitFor(t, "the first result", func() bool { return len(env.obs.resultsOf("orders")) > 0 })
	if f := env.obs.describeFailures(); f[0].cluster != "wus" || f[0].groups != 1 || !errors.Is(f[0].err, errDown) {
		t.Fatalf("DescribeFailed = %+v, want wus, 1 group, %v", f[0], errDown)
	}
	if res := env.obs.resultsOf("orders")[0]; res.Source != "scus" || len(res.Synced) != 0 || len(res.Left) == 0 {
		t.Fatalf("result with wus's members unknown: %+v, want scus the source, nothing synced, wus left", res)
	}
	// The next step, within the quiet: wus is not asked.
	env.scus.live(commitOf("orders", 0, 6001))
	waitFor(t, "the second result", func() bool { return len(env.obs.resultsOf("orders")) > 1 })
	if n, _ := env.wus.describes(); n != 1 {
		t.Fatalf("a quiet cluster was asked again: %d DescribeGroups", n)
	}
	if n := env.wus.commitCalls(); n != 0 {
		t.Fatalf("%d commits on a cluster whose members are unknown", n)
	}
	// It answers again: the group left for later is synced, without a new commit.
	env.wus.setDescribeErr(nil)
	waitFor(t, "synced once wus answers", env.wus.hasCommit("orders", 0, 6001-extra))
	if n, _ := env.wus.describes(); n != 2 {
		t.Fatalf("%d DescribeGroups on wus, want 2", n)
	}
	if got := env.wus.commitsOf("orders"); len(got) != 1 {
		t.Fatalf("commits on wus = %+v, want the latest only", got)
	}
}

// TestEngineCommitFailure: a commit refused leaves the group for later and forgets its
// members on every cluster: the retry asks DescribeGroups again, and commits.
func TestEngineCommitFailure(t *testing.T) {
	env := newEngineEnv(t, Options{Window: 10 * time.Millisecond, Retry: 200 * time.Millisecond}, nil, nil)
	env.scus.setMembers("orders", 1)
	env.scus.start()
	env.wus.start()
	env.up()
	env.wus.setCommitErr(errors.New("REBALANCE_IN_PROGRESS"))
	env.run()
	env.scus.live(commitOf("orders", 0, 6000))
	waitFor(t, "the failed result", func() bool { return len(env.obs.resultsOf("orders")) > 0 })
	if res := env.obs.resultsOf("orders")[0]; len(res.Errors) != 1 {
		t.Fatalf("result of a refused commit: %+v, want one error", res)
	}
	env.wus.setCommitErr(nil)
	waitFor(t, "synced on the retry", env.wus.hasCommit("orders", 0, 5700))
	sn, _ := env.scus.describes()
	wn, _ := env.wus.describes()
	if sn != 2 || wn != 2 {
		t.Fatalf("DescribeGroups scus %d, wus %d after a commit failure and its retry, want 2, 2", sn, wn)
	}
}

// TestEngineStandby: while another process holds a lease nothing is committed, standby is
// reported once, and the leases taken are given back; once the lease is free, this process
// takes over and syncs what was left.
func TestEngineStandby(t *testing.T) {
	errHeld := errors.New("held by pid 42 on host b")
	scusLease, wusLease := &fakeLease{}, &fakeLease{err: errHeld}
	env := newEngineEnv(t, Options{Window: 10 * time.Millisecond, Retry: 150 * time.Millisecond}, scusLease, wusLease)
	env.scus.setMembers("orders", 1)
	env.scus.start()
	env.wus.start()
	env.up()
	env.run()
	env.scus.live(commitOf("orders", 0, 6000))
	waitFor(t, "standby reported", func() bool { return len(env.obs.activeCalls()) > 0 })
	// Tried again after Retry, still held.
	waitFor(t, "the lease tried again", func() bool { n, _, _ := wusLease.state(); return n >= 3 })
	if n := env.wus.commitCalls() + env.scus.commitCalls(); n != 0 {
		t.Fatalf("%d commits while another process holds a lease", n)
	}
	if res := env.obs.resultsOf("orders"); len(res) != 0 {
		t.Fatalf("a standby synced: %+v", res)
	}
	calls := env.obs.activeCalls()
	if len(calls) != 1 || calls[0].active || calls[0].cluster != "wus" || !errors.Is(calls[0].err, errHeld) {
		t.Fatalf("Active calls %+v, want one: false, wus, %v", calls, errHeld)
	}
	if attempts, _, releases := scusLease.state(); attempts == 0 || releases == 0 {
		t.Fatalf("scus's lease: %d acquisitions, %d releases: taken and given back expected", attempts, releases)
	}
	wusLease.setErr(nil)
	waitFor(t, "synced once active", env.wus.hasCommit("orders", 0, 5700))
	waitFor(t, "active reported", func() bool { return len(env.obs.activeCalls()) == 2 })
	if c := env.obs.activeCalls()[1]; !c.active || c.cluster != "" || c.err != nil {
		t.Fatalf("second Active call %+v, want true, \"\", nil", c)
	}
	env.shutdown()
	for i, l := range []*fakeLease{scusLease, wusLease} {
		if _, held, _ := l.state(); held {
			t.Fatalf("lease %d still held after Run returned", i)
		}
	}
}

// TestEngineSweepAll: SweepAll refuses before readiness; once ready it syncs every group
// once and counts it.
func TestEngineSweepAll(t *testing.T) {
	env := newEngineEnv(t, Options{Window: 10 * time.Millisecond}, nil, nil)
	ctx := env.ctx
	if _, err := env.e.SweepAll(ctx); !errors.Is(err, ErrNotReady) {
		t.Fatalf("SweepAll before anything: %v, want ErrNotReady", err)
	}
	var cs []kop.OffsetCommit
	for _, g := range []string{"a", "b", "c", "e"} {
		env.scus.setMembers(g, 1)
		cs = append(cs, commitOf(g, 0, 1000), commitOf(g, 1, 2000))
	}
	env.wus.setMembers("d", 1)
	env.wus.setMembers("e", 1) // live on both: split brain
	env.scus.start(cs...)
	env.wus.start(commitOf("d", 0, 100))
	if _, err := env.e.SweepAll(ctx); !errors.Is(err, ErrNotReady) {
		t.Fatalf("SweepAll with the clusters' state unknown: %v, want ErrNotReady", err)
	}
	env.up()
	env.e.Store("wus").Failed(0)
	if _, err := env.e.SweepAll(ctx); !errors.Is(err, ErrNotReady) {
		t.Fatalf("SweepAll with a partition unread: %v, want ErrNotReady", err)
	}
	// Partition 0 replays again (what it holds: d's commit, when d is of it).
	env.e.Store("wus").Begin(0)
	if p, m := env.wus.topic.commitMessage(commitOf("d", 0, 100)); p == 0 {
		env.e.Store("wus").Replayed(0, m)
	}
	env.e.Store("wus").CaughtUp(0)
	sw, err := env.e.SweepAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := Sweep{Groups: 5, Synced: 4, Offsets: 7, Again: []string{"e"}, SplitBrain: []string{"e"}}
	if sw.Groups != want.Groups || sw.Synced != want.Synced || sw.Offsets != want.Offsets || sw.Deleted != 0 ||
		!slices.Equal(sw.Again, want.Again) || !slices.Equal(sw.SplitBrain, want.SplitBrain) || len(sw.Down) != 0 {
		t.Fatalf("sweep = %+v, want %+v", sw, want)
	}
	for _, g := range []string{"a", "b", "c"} {
		if !env.wus.hasCommit(g, 0, 1000-extra)() || !env.wus.hasCommit(g, 1, 2000-extra)() {
			t.Fatalf("%s not synced to wus: %+v", g, env.wus.commitsOf(g))
		}
	}
	// wus's 100 on scus: the messages only scus holds come first, none consumed on wus.
	if !env.scus.hasCommit("d", 0, 0)() {
		t.Fatalf("d not synced to scus: %+v", env.scus.commitsOf("d"))
	}
	if got := append(env.wus.commitsOf("e"), env.scus.commitsOf("e")...); len(got) != 0 {
		t.Fatalf("split brain group e committed: %+v", got)
	}
	// A second sweep finds everything synced: nothing sent again.
	before := env.wus.commitCalls() + env.scus.commitCalls()
	sw, err = env.e.SweepAll(ctx)
	if err != nil || sw.Groups != 5 || sw.Synced != 0 || sw.Offsets != 0 {
		t.Fatalf("second sweep = %+v, %v, want 5 groups, nothing synced", sw, err)
	}
	if n := env.wus.commitCalls() + env.scus.commitCalls(); n != before {
		t.Fatalf("second sweep sent %d commits", n-before)
	}
	// A cluster down keeps no one from sweeping (its partitions need not be read): reported Down.
	env.e.SetUp("wus", false)
	sw, err = env.e.SweepAll(ctx)
	if err != nil || !slices.Equal(sw.Down, []string{"wus"}) {
		t.Fatalf("sweep with wus down = %+v, %v, want Down [wus]", sw, err)
	}
}

// TestEngineSweepAllStandby: SweepAll without every lease is ErrStandby, naming the
// lease's error.
func TestEngineSweepAllStandby(t *testing.T) {
	errHeld := errors.New("held by pid 42 on host b")
	env := newEngineEnv(t, Options{}, &fakeLease{err: errHeld}, nil)
	env.scus.start()
	env.wus.start()
	env.up()
	_, err := env.e.SweepAll(env.ctx)
	if !errors.Is(err, ErrStandby) || !errors.Is(err, errHeld) {
		t.Fatalf("SweepAll with a lease held elsewhere: %v, want ErrStandby and %v", err, errHeld)
	}
}

// TestEngineGroupsFilter: only the groups Options.Groups matches are made due.
func TestEngineGroupsFilter(t *testing.T) {
	e := New(nil, Options{Groups: []string{"ord*"}})
	e.dirty("scus", []string{"payments", "orders", "orders-eu"}, false)
	if got := e.q.take(time.Now(), 10); !slices.Equal(got, []string{"orders", "orders-eu"}) {
		t.Fatalf("due = %v, want [orders orders-eu]", got)
	}
}

// TestEngineRunStops: Run returns once its context ends, also while it waits for work.
func TestEngineRunStops(t *testing.T) {
	env := newEngineEnv(t, Options{}, nil, nil)
	ctx, cancel := context.WithCancel(env.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		env.e.Run(ctx)
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5s of its context's end")
	}
}

// TestEngineResync: Resync asks every group's members again and syncs every group; nothing
// is committed again where the target already holds the translation.
func TestEngineResync(t *testing.T) {
	env := newEngineEnv(t, Options{Window: 10 * time.Millisecond}, nil, nil)
	env.scus.setMembers("orders", 1)
	env.scus.start()
	env.wus.start()
	env.up()
	env.run()
	env.scus.live(commitOf("orders", 0, 6000))
	waitFor(t, "first sync", env.wus.hasCommit("orders", 0, 5700))
	waitFor(t, "first result", func() bool { return len(env.obs.resultsOf("orders")) == 1 })
	env.e.Resync()
	waitFor(t, "a step after Resync", func() bool { return len(env.obs.resultsOf("orders")) == 2 })
	sn, _ := env.scus.describes()
	wn, _ := env.wus.describes()
	if sn != 2 || wn != 2 {
		t.Fatalf("DescribeGroups after Resync: scus %d, wus %d, want 2, 2", sn, wn)
	}
	if n := env.wus.commitCalls(); n != 1 {
		t.Fatalf("%d commits on wus, want 1: the target held the translation already", n)
	}
}

// TestEngineClusterBack: a target down is neither read nor written, and the group is not
// retried while it is down; when it comes back every group is synced again.
func TestEngineClusterBack(t *testing.T) {
	env := newEngineEnv(t, Options{Window: 10 * time.Millisecond, Retry: 50 * time.Millisecond}, nil, nil)
	env.scus.setMembers("orders", 1)
	env.scus.start()
	env.wus.start()
	env.up()
	env.run()
	env.e.SetUp("wus", false)
	env.scus.live(commitOf("orders", 0, 6000))
	waitFor(t, "a result with wus down", func() bool { return len(env.obs.resultsOf("orders")) > 0 })
	if res := env.obs.resultsOf("orders")[0]; len(res.Synced) != 0 {
		t.Fatalf("synced to a cluster down: %+v", res)
	}
	if n, _ := env.wus.describes(); n != 0 {
		t.Fatalf("%d DescribeGroups on a cluster down", n)
	}
	waitFor(t, "the step reported", func() bool { return len(env.obs.stepsSeen()) > 0 })
	if s := env.obs.stepsSeen()[0]; s.late != 0 {
		t.Fatalf("%d groups left for later with the target down, want 0: synced when it comes back", s.late)
	}
	env.e.SetUp("wus", true)
	waitFor(t, "synced once wus is back", env.wus.hasCommit("orders", 0, 5700))
}

// TestEngineLearnsAClusterIsBack: a cluster the probe saw down is asked again once its quiet
// ends (with a short timeout), and the first answer syncs what it missed, before the probe
// (one watch cycle later) says it is up.
func TestEngineLearnsAClusterIsBack(t *testing.T) {
	env := newEngineEnv(t, Options{Window: 10 * time.Millisecond, Retry: 50 * time.Millisecond}, nil, nil)
	env.scus.setMembers("orders", 1)
	env.scus.start()
	env.wus.start()
	env.up()
	env.run()
	env.wus.setDescribeErr(errDown)
	env.e.SetUp("wus", false)
	env.scus.live(commitOf("orders", 0, 6000))
	waitFor(t, "wus asked again while down", func() bool { n, _ := env.wus.describes(); return n >= 2 })
	if env.wus.hasCommit("orders", 0, 5700)() {
		t.Fatal("committed on wus while it did not answer")
	}
	env.wus.setDescribeErr(nil) // back; the probe has not seen it yet
	waitFor(t, "synced once wus answers", env.wus.hasCommit("orders", 0, 5700))
}

// TestEngineNoSecondCommitBeforeReadBack is issue 46's 20 moves: the group is made due again
// (a member leaving the source writes a group record) after its commit to wus was
// acknowledged but before wus's offsets topic was read back with it. Planned on wus's old
// value, the same translation was sent a second time; the acknowledged commit now stands in
// until the Store shows it, and a newer commit is still sent.
func TestEngineNoSecondCommitBeforeReadBack(t *testing.T) {
	env := newEngineEnv(t, Options{Window: 5 * time.Millisecond}, nil, nil)
	env.scus.start()
	env.wus.start()
	env.up()
	env.run()
	env.wus.setHoldReadBack(true)
	env.scus.live(commitOf("orders", 0, 6000))
	waitFor(t, "orders synced to wus", func() bool { return env.wus.commitCalls() == 1 })
	for range 3 {
		env.scus.liveGroup("orders", 0) // the member left: a group record, due again
		time.Sleep(30 * time.Millisecond)
	}
	if n := env.wus.commitCalls(); n != 1 {
		t.Fatalf("%d commits sent to wus for one commit on scus, before wus read it back: %+v", n, env.wus.commitsOf("orders"))
	}
	env.wus.releaseReadBack()
	env.scus.live(commitOf("orders", 0, 6100))
	waitFor(t, "the next commit synced", env.wus.hasCommit("orders", 0, 6100-extra))
	if n := env.wus.commitCalls(); n != 2 {
		t.Fatalf("%d commits sent to wus for two commits on scus", n)
	}
}
