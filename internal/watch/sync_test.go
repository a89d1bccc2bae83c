package watch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/streamsync"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

// kopFront is one cluster's KoP front door as sync uses it: an OffsetCommit is written into
// the cluster's offsets topic (the tail), as KoP does, and served by the fake KoP; members
// are set by the test.
type kopFront struct {
	mu      sync.Mutex
	tail    *memTail
	k       *fakes.KoP
	members map[string]int
	fail    error // DescribeGroups fails
	commits int
	at      func() time.Time
	// gate, when set, is called before each Commit, outside mu (TestSyncSendsInParallel).
	gate func()
}

func (f *kopFront) Commit(_ context.Context, group string, cs []kop.SyncCommit) error {
	if f.gate != nil {
		f.gate()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range cs {
		f.tail.commit("", kop.OffsetCommit{Group: group, Topic: "persistent://public/default/" + c.Topic, Partition: c.Partition,
			Offset: c.Offset, Metadata: c.Metadata, CommitTime: f.at()})
		f.k.Set(group, c.Topic, c.Partition, c.Offset)
	}
	f.commits++
	return nil
}

func (f *kopFront) Delete(context.Context, string, map[string][]int32) error { return nil }
func (f *kopFront) DeleteGroup(context.Context, string) error                { return nil }

func (f *kopFront) DescribeGroups(_ context.Context, groups []string) (map[string]kop.GroupActivity, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	out := map[string]kop.GroupActivity{}
	for _, g := range groups {
		out[g] = kop.GroupActivity{State: "Empty", Members: f.members[g]}
	}
	return out, nil
}

// setMembers sets the members of group g and, as KoP does when a rebalance completes or the
// group goes empty, writes a group record into the offsets topic.
func (f *kopFront) setMembers(g string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.members[g] = n
	f.tail.group(g, n)
}

func (f *kopFront) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.commits
}

// syncEnv is two clusters in sync mode, the offsets topic not replicated: topic-1 holds 300
// messages on scus that wus never had, so scus offset N is wus offset N-300.
func syncEnv(t *testing.T, o Options) (e *env, scus, wus *kopFront) {
	t.Helper()
	o.Sync = true
	e = newEnv(t, o)
	e.w.clusters[0].Data = fakes.MemCopies{Topics: map[string][]uint64{"topic-1": append(fakes.Sequence(1<<40, 1<<40+300), fakes.Sequence(0, 20_000)...)}}
	e.w.clusters[1].Data = fakes.MemCopies{Topics: map[string][]uint64{"topic-1": fakes.Sequence(0, 20_000)}}
	scus = &kopFront{tail: e.scus, k: e.kScus, members: map[string]int{}, at: e.clock.Now}
	wus = &kopFront{tail: e.wus, k: e.kWus, members: map[string]int{}, at: e.clock.Now}
	for i, f := range []*kopFront{scus, wus} {
		e.w.clusters[i].Committer, e.w.clusters[i].Members = f, f
		e.w.clusters[i].Reloader = nil
	}
	e.syncEngine()
	return e, scus, wus
}

// syncEngine makes the watcher's sync job anew, of its clusters as they are now.
func (e *env) syncEngine() {
	e.w.sync = e.w.newSyncJob()
}

// TestSyncFollowsTheSource: a group live on scus commits; as each commit is read, the latest
// is committed on wus through KoP, translated, and served there at once; the commits of one
// window are one commit on wus. The consumer moves to wus; its commits flow back into scus's
// numbering.
func TestSyncFollowsTheSource(t *testing.T) {
	e, scus, wus := syncEnv(t, Options{SyncWindow: 300 * time.Millisecond})
	scus.setMembers("orders", 1)
	e.scus.commit("", commit("orders", 0, 6000))
	e.kScus.Set("orders", "topic-1", 0, 6000)
	e.start()
	e.cycleUntilReady()
	e.cycleUntil("synced 6000", servedIs("orders", "wus", 5700))
	// 50 commits within one window: one commit on wus, the latest (two if the first was
	// read just before a step took the group).
	before := wus.count()
	for o := int64(6001); o <= 6050; o++ {
		e.scus.commit("", commit("orders", 0, o))
	}
	e.kScus.Set("orders", "topic-1", 0, 6050)
	e.cycleUntil("synced 6050", servedIs("orders", "wus", 5750))
	if n := wus.count() - before; n < 1 || n > 2 {
		t.Errorf("%d commits on wus for 50 commits on scus within one window, want 1 (2 at most)", n)
	}
	e.settle() // the tool's commits landing on wus, read back
	if scus.count() != 0 {
		t.Fatalf("the tool's own commits on wus were synced back to scus (%d)", scus.count())
	}
	// The group moves to wus.
	scus.setMembers("orders", 0)
	wus.setMembers("orders", 1)
	e.clock.add(time.Minute)
	e.wus.commit("", commit("orders", 0, 5800))
	e.kWus.Set("orders", "topic-1", 0, 5800)
	e.cycleUntil("synced back", servedIs("orders", "scus", 6100))
	// The fake KoP serves a commit before the engine records it: wait for the count.
	e.waitFor("the sync back counted", func() bool {
		return testutil.ToFloat64(e.w.m.sync.Synced.WithLabelValues("scus", "wus", "written")) >= 1
	})
	if n := testutil.ToFloat64(e.w.m.sync.Synced.WithLabelValues("scus", "wus", "written")); n != 1 {
		t.Errorf("synced wus→scus %v, want 1", n)
	}
}

// TestSyncSplitBrainAndUnknown: members on both clusters leave the group alone (reported);
// a cluster whose members are unknown is neither source nor target until it answers.
func TestSyncSplitBrainAndUnknown(t *testing.T) {
	e, scus, wus := syncEnv(t, Options{})
	scus.setMembers("orders", 1)
	wus.setMembers("orders", 1)
	e.scus.commit("", commit("orders", 0, 6000))
	e.kScus.Set("orders", "topic-1", 0, 6000)
	e.start()
	e.cycleUntilReady()
	e.waitFor("split brain counted", func() bool { return testutil.ToFloat64(e.w.m.sync.Skipped.WithLabelValues("split_brain")) > 1 })
	if wus.count() != 0 {
		t.Fatalf("split brain: %d commits on wus, skipped %v", wus.count(), testutil.ToFloat64(e.w.m.sync.Skipped.WithLabelValues("split_brain")))
	}
	if n := strings.Count(e.logText(), "split brain (logged once"); n != 1 {
		t.Errorf("split brain logged %d times over several cycles, want once", n)
	}
	wus.setMembers("orders", 0)
	wus.mu.Lock()
	wus.fail = errDown
	wus.mu.Unlock()
	e.waitFor("DescribeGroups failure logged", func() bool { return strings.Contains(e.logText(), "DescribeGroups failed") })
	e.settle()
	if wus.count() != 0 {
		t.Fatalf("committed on a cluster whose members are unknown")
	}
	// It answers again: the group left for later is synced without a new commit.
	wus.mu.Lock()
	wus.fail = nil
	wus.mu.Unlock()
	e.cycleUntil("synced once wus answers", servedIs("orders", "wus", 5700))
}

// TestSyncDryRun commits nothing and counts what it would.
func TestSyncDryRun(t *testing.T) {
	e, scus, wus := syncEnv(t, Options{DryRun: true})
	scus.setMembers("orders", 1)
	e.scus.commit("", commit("orders", 0, 6000))
	e.start()
	e.cycleUntilReady()
	e.waitFor("dry run counted", func() bool {
		return testutil.ToFloat64(e.w.m.sync.Synced.WithLabelValues("wus", "scus", "dry_run")) > 0
	})
	if wus.count() != 0 {
		t.Fatalf("dry run: %d commits", wus.count())
	}
	if !strings.Contains(e.logText(), "would sync (dry run)") {
		t.Fatal("dry run logged nothing")
	}
}

// waitFor runs cycles until cond holds (the sync engine works on its own goroutine).
func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: not reached after 5s", what)
		}
		e.w.Cycle(e.ctx)
		time.Sleep(10 * time.Millisecond)
	}
}

// settle runs cycles for 200 ms: forty sync windows, for a test that shows something does
// not happen.
func (e *env) settle() {
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
		e.w.Cycle(e.ctx)
		time.Sleep(10 * time.Millisecond)
	}
}

// servedIs holds when KoP on cluster serves v for group (the cached side of the report).
func servedIs(group, cluster string, v int64) func(*survey.Report) bool {
	return func(rep *survey.Report) bool {
		c, ok := cellOf(rep, group, cluster)
		return ok && c.Cached != nil && *c.Cached == v
	}
}

// fakeLease is a lease another process may hold.
type fakeLease struct {
	mu           sync.Mutex
	other, mine  bool
	acquisitions int
}

func (l *fakeLease) Acquire(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.other {
		return errors.New("held by pid 42 on host b")
	}
	if !l.mine {
		l.acquisitions++
	}
	l.mine = true
	return nil
}

func (l *fakeLease) Release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mine = false
}

// state is whether this process holds the lease and how often it took it.
func (l *fakeLease) state() (mine bool, acquisitions int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mine, l.acquisitions
}

func (l *fakeLease) set(other bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.other = other
}

// TestSyncStandbyReplica: while another process holds a cluster's lease this one syncs
// nothing (and gives back the leases it took); when the holder's lease expires it takes
// over, syncs every group, and keeps the leases.
func TestSyncStandbyReplica(t *testing.T) {
	e, scus, wus := syncEnv(t, Options{})
	ls, lw := &fakeLease{}, &fakeLease{other: true}
	e.w.clusters[0].SyncLease, e.w.clusters[1].SyncLease = ls, lw
	e.syncEngine()
	scus.setMembers("orders", 1)
	e.scus.commit("", commit("orders", 0, 6000))
	e.start()
	e.cycleUntilReady()
	e.waitFor("standby logged", func() bool { return strings.Contains(e.logText(), "sync standby") })
	e.settle()
	if mine, _ := ls.state(); wus.count() != 0 || mine || testutil.ToFloat64(e.w.m.sync.Active) != 0 {
		t.Fatalf("standby synced (%d commits) or kept scus's lease (%v)", wus.count(), mine)
	}
	lw.set(false) // the active replica died
	e.cycleUntil("taken over", servedIs("orders", "wus", 5700))
	_, taken := ls.state()
	e.settle()
	sMine, sN := ls.state()
	wMine, wN := lw.state()
	if testutil.ToFloat64(e.w.m.sync.Active) != 1 || !sMine || !wMine || sN != taken || wN != 1 {
		t.Fatalf("after the takeover: active %v, leases %v/%v acquired %d/%d times", testutil.ToFloat64(e.w.m.sync.Active), sMine, wMine, sN, wN)
	}
	if n := strings.Count(e.logText(), "sync standby"); n != 1 {
		t.Errorf("standby logged %d times, want once", n)
	}
}

// TestSyncSendsInParallel: the groups of a cycle are sent to a target several at once (one
// OffsetCommit each is a round trip: one at a time, 1,000 groups took longer than the
// interval on real KoP), and each is recorded as its own.
func TestSyncSendsInParallel(t *testing.T) {
	e, scus, wus := syncEnv(t, Options{})
	var mu sync.Mutex
	inFlight, most := 0, 0
	wus.gate = func() {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		// Held until a second commit is in flight (or long enough to show there is none).
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) {
			mu.Lock()
			n := most
			mu.Unlock()
			if n >= 4 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
	}
	const n = 40
	for i := range n {
		g := fmt.Sprintf("g%02d", i)
		scus.setMembers(g, 1)
		e.scus.commit("", commit(g, 0, int64(6000+i)))
		e.kScus.Set(g, "topic-1", 0, int64(6000+i))
	}
	e.start()
	e.cycleUntilReady()
	e.cycleUntil("every group served on wus", func(rep *survey.Report) bool {
		for i := range n {
			if !servedIs(fmt.Sprintf("g%02d", i), "wus", int64(5700+i))(rep) {
				return false
			}
		}
		return true
	})
	if c := wus.count(); c != n {
		t.Errorf("%d commits on wus, want one per group (%d)", c, n)
	}
	mu.Lock()
	defer mu.Unlock()
	if most < 4 {
		t.Errorf("at most %d commits in flight at once, want several (up to %d)", most, streamsync.DefaultMaxInFlight)
	}
	e.waitFor("every sync counted", func() bool { // served before recorded: wait for the count
		return testutil.ToFloat64(e.w.m.sync.Synced.WithLabelValues("wus", "scus", "written")) >= float64(n)
	})
	if got := testutil.ToFloat64(e.w.m.sync.Synced.WithLabelValues("wus", "scus", "written")); got != float64(n) {
		t.Errorf("synced scus→wus %v, want %d", got, n)
	}
}
