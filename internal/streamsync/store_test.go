package streamsync

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

type dirtyCall struct {
	cluster string
	groups  []string
	members bool
}

// recEvents records what a Store tells its engine.
type recEvents struct {
	mu       sync.Mutex
	dirties  []dirtyCall
	wakes    int
	received map[string]int // by cluster/group
}

func (r *recEvents) Received(cluster, group string, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.received == nil {
		r.received = map[string]int{}
	}
	r.received[cluster+"/"+group] += n
}

// takeReceived returns the own commits recorded since the last call, and forgets them.
func (r *recEvents) takeReceived() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.received
	r.received = nil
	return got
}

func (r *recEvents) Dirty(cluster string, groups []string, members bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dirties = append(r.dirties, dirtyCall{cluster, slices.Clone(groups), members})
}

func (r *recEvents) Wake() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wakes++
}

// take returns what was recorded since the last take, and forgets it.
func (r *recEvents) take() ([]dirtyCall, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, w := r.dirties, r.wakes
	r.dirties, r.wakes = nil, 0
	return d, w
}

// storeEnv is a Store of cluster scus fed through an offsetsTopic.
type storeEnv struct {
	t     *testing.T
	s     *Store
	ev    *recEvents
	topic offsetsTopic
}

func newStoreEnv(t *testing.T) *storeEnv {
	ev := &recEvents{}
	s := NewStore("scus", ev)
	s.SetPartitions(testParts)
	return &storeEnv{t: t, s: s, ev: ev}
}

func (se *storeEnv) replayed(c kop.OffsetCommit) {
	p, m := se.topic.commitMessage(c)
	se.s.Replayed(p, m)
}

func (se *storeEnv) live(c kop.OffsetCommit, from string) {
	p, m := se.topic.commitMessage(c)
	m.ReplicatedFrom = from
	feedLive(se.s, p, pulsarx.TailMessage{Message: m, ReplicatedFrom: from})
}

func (se *storeEnv) liveGroup(group string, members int) {
	p := loader.PartitionFor(group, testParts)
	feedLive(se.s, p, pulsarx.TailMessage{Message: groupMessage(p, se.topic.next(p), group, members)})
}

// offsets fails the test unless group's offsets are readable, and returns them by partition.
func (se *storeEnv) offsets(group string) map[int32]int64 {
	se.t.Helper()
	cos, ok := se.s.Offsets(group)
	if !ok {
		se.t.Fatalf("Offsets(%s): partition not read", group)
	}
	out := map[int32]int64{}
	for _, co := range cos {
		if co.Topic != topic1 {
			se.t.Fatalf("Offsets(%s): topic %s", group, co.Topic)
		}
		out[co.Partition] = co.Offset
	}
	return out
}

func (se *storeEnv) unread(group string) {
	se.t.Helper()
	if cos, ok := se.s.Offsets(group); ok {
		se.t.Fatalf("Offsets(%s) = %v, true: want its partition unread", group, cos)
	}
}

func (se *storeEnv) catchUpAll() {
	for p := range testParts {
		se.s.Begin(p)
	}
	for p := range testParts {
		se.s.CaughtUp(p)
	}
}

// TestStoreNothingBeforeCaughtUp: before its partition has caught up, a group's offsets
// are not known (the cluster is neither source nor target), and the engine hears nothing.
func TestStoreNothingBeforeCaughtUp(t *testing.T) {
	var before Store
	if _, ok := before.Offsets("g"); ok {
		t.Fatal("Offsets known before SetPartitions")
	}
	if before.Complete() {
		t.Fatal("complete before SetPartitions")
	}
	se := newStoreEnv(t)
	se.unread("g")
	p := loader.PartitionFor("g", testParts)
	se.s.Begin(p)
	se.replayed(commitOf("g", 0, 100))
	se.unread("g")
	// Live messages before the catch-up are not the live state: ignored.
	se.live(commitOf("g", 0, 101), "")
	se.unread("g")
	if d, w := se.ev.take(); len(d) != 0 || w != 0 {
		t.Fatalf("events before the catch-up: %v dirty, %d wakes", d, w)
	}
	if se.s.Complete() || len(se.s.Groups()) != 0 {
		t.Fatalf("complete %v, groups %v before any catch-up", se.s.Complete(), se.s.Groups())
	}
}

// TestStoreCaughtUpMakesThePartitionDue: after Begin, Replayed, CaughtUp the replayed
// offsets are read, and every group of the partition is due, its members to be asked
// again; the engine is woken.
func TestStoreCaughtUpMakesThePartitionDue(t *testing.T) {
	se := newStoreEnv(t)
	gs := groupsWithPartitions("g", 2, true)
	other := groupsWithPartitions("o", int(testParts), false)
	p := loader.PartitionFor(gs[0], testParts)
	se.s.Begin(p)
	se.replayed(commitOf(gs[0], 0, 100))
	se.replayed(commitOf(gs[0], 1, 200))
	se.replayed(commitOf(gs[1], 0, 300))
	se.replayed(commitOf(gs[0], 0, 150)) // the latest commit of a key wins
	se.s.CaughtUp(p)
	if got := se.offsets(gs[0]); len(got) != 2 || got[0] != 150 || got[1] != 200 {
		t.Fatalf("offsets of %s = %v, want {0:150 1:200}", gs[0], got)
	}
	if got := se.offsets(gs[1]); len(got) != 1 || got[0] != 300 {
		t.Fatalf("offsets of %s = %v, want {0:300}", gs[1], got)
	}
	d, w := se.ev.take()
	want := []dirtyCall{{"scus", slices.Sorted(slices.Values(gs)), true}}
	if len(d) != 1 || d[0].cluster != want[0].cluster || !d[0].members || !slices.Equal(slices.Sorted(slices.Values(d[0].groups)), want[0].groups) {
		t.Fatalf("dirty = %+v, want %+v", d, want)
	}
	if w != 1 {
		t.Fatalf("%d wakes, want 1", w)
	}
	// A group of another, unread, partition is not known; the store is not complete.
	for _, g := range other {
		if loader.PartitionFor(g, testParts) != p {
			se.unread(g)
		}
	}
	if se.s.Complete() {
		t.Fatal("complete with one partition of four caught up")
	}
	for q := range testParts {
		if q != p {
			se.s.Begin(q)
			se.s.CaughtUp(q)
		}
	}
	if !se.s.Complete() {
		t.Fatal("not complete with every partition caught up")
	}
	if got := slices.Sorted(slices.Values(se.s.Groups())); !slices.Equal(got, slices.Sorted(slices.Values(gs))) {
		t.Fatalf("Groups = %v, want %v", got, gs)
	}
	// A group with no offsets anywhere is read (an empty partition is read too): no offsets.
	if got := se.offsets(other[0]); len(got) != 0 {
		t.Fatalf("offsets of a group never committed: %v", got)
	}
	// CaughtUp without a Begin (nothing replaying) changes nothing.
	se.ev.take()
	se.s.CaughtUp(p)
	if d, w := se.ev.take(); len(d) != 0 || w != 0 {
		t.Fatalf("CaughtUp without Begin: %v dirty, %d wakes", d, w)
	}
	// Setting the same partition count again keeps the state.
	se.s.SetPartitions(testParts)
	if got := se.offsets(gs[1]); got[0] != 300 {
		t.Fatalf("offsets after SetPartitions of the same count: %v", got)
	}
}

// TestStoreLive: a live own commit is read at once and makes its group due; the tool's own
// commit (marked) wakes nothing; a group record makes the group due with its members to be
// asked again.
func TestStoreLive(t *testing.T) {
	se := newStoreEnv(t)
	se.catchUpAll()
	se.ev.take()

	se.live(commitOf("orders", 0, 6000), "")
	if got := se.offsets("orders"); got[0] != 6000 {
		t.Fatalf("offsets after a live commit: %v, want 6000", got)
	}
	d, _ := se.ev.take()
	if len(d) != 1 || d[0].cluster != "scus" || !slices.Equal(d[0].groups, []string{"orders"}) || d[0].members {
		t.Fatalf("own commit: dirty %+v, want [{scus [orders] false}]", d)
	}

	// Read again after another feed: the new state, not a stale view.
	se.live(commitOf("orders", 0, 6001), "")
	if got := se.offsets("orders"); got[0] != 6001 {
		t.Fatalf("offsets after a second live commit: %v, want 6001", got)
	}
	se.ev.take()

	// The tool's commit, synced from wus: in the state, wakes nothing.
	c := commitOf("orders", 1, 5000)
	c.Metadata = marked("wus", 4700)
	se.live(c, "")
	if got := se.offsets("orders"); got[1] != 5000 {
		t.Fatalf("offsets after the tool's commit: %v, want partition 1 at 5000", got)
	}
	if d, w := se.ev.take(); len(d) != 0 || w != 0 {
		t.Fatalf("the tool's own commit woke the engine: %+v, %d wakes", d, w)
	}

	// Metadata that only looks like a mark is the client's own: a commit of the group.
	c = commitOf("orders", 1, 5001)
	c.Metadata = "kop-offsets-sync:not a mark"
	se.live(c, "")
	if d, _ := se.ev.take(); len(d) != 1 || d[0].members {
		t.Fatalf("a client's commit with mark-like metadata: dirty %+v, want one, members false", d)
	}

	// The tool's commit that came by replication is news (the offsets topic replicates):
	// the group is due.
	if se.s.Replicating("orders", time.Now()) {
		t.Fatal("replicating before any commit of the tool's arrived by replication")
	}
	c = commitOf("orders", 1, 5002)
	c.Metadata = marked("wus", 4702)
	se.live(c, "wus")
	if d, _ := se.ev.take(); len(d) != 1 || !slices.Equal(d[0].groups, []string{"orders"}) {
		t.Fatalf("the tool's commit replicated back: dirty %+v, want [orders]", d)
	}
	if !se.s.Replicating("orders", time.Now()) || se.s.Replicating("other", time.Now()) {
		t.Fatal("the tool's commit replicated back, read live, does not say the group's offsets topic replicates")
	}
	if se.s.Replicating("orders", time.Now().Add(replicatingFor+time.Second)) {
		t.Fatal("still replicating long after the last commit of the tool's came by replication")
	}

	se.liveGroup("orders", 2)
	d, w := se.ev.take()
	if len(d) != 1 || !slices.Equal(d[0].groups, []string{"orders"}) || !d[0].members || w != 0 {
		t.Fatalf("group record: dirty %+v, %d wakes, want [{scus [orders] true}], 0", d, w)
	}
	if got := se.offsets("orders"); got[0] != 6001 || got[1] != 5002 {
		t.Fatalf("a group record changed the offsets: %v", got)
	}

	// A message of a partition out of range is dropped.
	feedLive(se.s, testParts, pulsarx.TailMessage{Message: kop.Message(testParts, 0, commitOf("orders", 0, 1))})
	if d, _ := se.ev.take(); len(d) != 0 {
		t.Fatalf("a message of partition %d (of %d): dirty %+v", testParts, testParts, d)
	}
}

// TestStoreFailedUntilReplayed: a partition whose reader failed is unread until a new replay
// catches up; the state read so far stays in use while a replay runs on a partition read.
func TestStoreFailedUntilReplayed(t *testing.T) {
	se := newStoreEnv(t)
	gs := groupsWithPartitions("g", 2, false)
	g, h := gs[0], gs[1]
	p := loader.PartitionFor(g, testParts)
	se.s.Begin(p)
	se.replayed(commitOf(g, 0, 100))
	se.s.CaughtUp(p)
	for q := range testParts {
		if q != p {
			se.s.Begin(q)
			se.s.CaughtUp(q)
		}
	}
	se.live(commitOf(h, 0, 7), "")
	if !se.s.Complete() {
		t.Fatal("not complete")
	}

	// A new replay of a partition read (no failure): the old state is served until it
	// catches up, then the replay's.
	se.s.Begin(p)
	se.replayed(commitOf(g, 0, 100))
	se.replayed(commitOf(g, 0, 120))
	if got := se.offsets(g); got[0] != 100 {
		t.Fatalf("during a replay: %v, want the state read so far (100)", got)
	}
	se.s.CaughtUp(p)
	if got := se.offsets(g); got[0] != 120 {
		t.Fatalf("after the replay caught up: %v, want 120", got)
	}

	se.s.Failed(p)
	se.unread(g)
	if se.s.Complete() {
		t.Fatal("complete with a partition failed")
	}
	if got := se.s.Groups(); slices.Contains(got, g) || !slices.Contains(got, h) {
		t.Fatalf("Groups with %s's partition failed = %v, want %s and not %s", g, got, h, g)
	}
	if got := se.offsets(h); got[0] != 7 {
		t.Fatalf("another partition's group after a failure: %v, want 7", got)
	}
	se.s.Begin(p)
	se.replayed(commitOf(g, 0, 100))
	se.replayed(commitOf(g, 0, 120))
	se.replayed(commitOf(g, 0, 130))
	se.unread(g)
	se.ev.take()
	se.s.CaughtUp(p)
	if got := se.offsets(g); got[0] != 130 {
		t.Fatalf("after the new replay caught up: %v, want 130", got)
	}
	if !se.s.Complete() {
		t.Fatal("not complete after the failed partition caught up again")
	}
	if d, w := se.ev.take(); len(d) != 1 || !slices.Equal(d[0].groups, []string{g}) || !d[0].members || w != 1 {
		t.Fatalf("catch-up after a failure: dirty %+v, %d wakes, want [{scus [%s] true}], 1", d, w, g)
	}
}

// TestStoreLiveCountsOwnCommits: each own commit made on the cluster and read live is one
// received offset of its group; the tool's commits (marked, read back or replicated), an
// own commit that arrived by replication (made elsewhere), a group record and whatever was
// replayed are none.
func TestStoreLiveCountsOwnCommits(t *testing.T) {
	se := newStoreEnv(t)
	p := loader.PartitionFor("orders", testParts)
	se.s.Begin(p)
	se.replayed(commitOf("orders", 0, 100)) // history: synced once at the catch-up, not received
	for q := range testParts {
		if q != p {
			se.s.Begin(q)
		}
		se.s.CaughtUp(q)
	}
	if got := se.ev.takeReceived(); len(got) != 0 {
		t.Fatalf("received after a replay: %v, want nothing", got)
	}
	se.live(commitOf("orders", 0, 101), "")
	se.live(commitOf("orders", 1, 7), "")
	se.live(commitOf("payments", 0, 9), "")
	c := commitOf("orders", 0, 102)
	c.Metadata = marked("wus", 4000)
	se.live(c, "")                             // the tool's, read back
	se.live(c, "wus")                          // the tool's, replicated
	se.live(commitOf("orders", 0, 103), "wus") // wus's own, replicated: made there
	se.liveGroup("orders", 1)
	got := se.ev.takeReceived()
	if len(got) != 2 || got["scus/orders"] != 2 || got["scus/payments"] != 1 {
		t.Fatalf("received = %v, want {scus/orders:2 scus/payments:1}", got)
	}
}
