package loader

import (
	"slices"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/offsetlog/offsetlogtest"
)

// A long-lived Replayer (watch) must not grow with group-name churn: a group whose offsets
// are deleted and whose group record is a tombstone is forgotten, names and slots reused.
func TestReplayerForgetsDeletedGroups(t *testing.T) {
	r := NewReplayer(0, OrderingKoP)
	round := func(i int) {
		g := "churn-" + itoa(i)
		_ = r.ApplyMessage(Message{Key: []byte("k"), Value: offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{},
			offsetlogtest.OffsetRec(g, 0, 1), offsetlogtest.OffsetRec(g, 1, 2), offsetlogtest.KV{offsetlogtest.GroupKey(g), offsetlogtest.GroupValue(1, 1)})})
		_ = r.ApplyMessage(Message{Key: []byte("k"), Value: offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.KV{offsetlogtest.OffsetKey(1, g, t1, 0), nil},
			offsetlogtest.KV{offsetlogtest.OffsetKey(1, g, t1, 1), nil}, offsetlogtest.KV{offsetlogtest.GroupKey(g), nil})})
		// a transaction that ends in ABORT leaves nothing either
		_ = r.ApplyMessage(Message{Key: []byte("k"), Value: offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{Txn: true, PID: 5}, offsetlogtest.OffsetRec(g+"-t", 0, 3))})
		_ = r.ApplyMessage(Message{Key: []byte("k"), Value: offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{Txn: true, Control: true, PID: 5}, offsetlogtest.KV{offsetlogtest.ControlKey(false), offsetlogtest.ControlValue()})})
	}
	_ = r.ApplyMessage(Message{Key: []byte("k"), Value: offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.OffsetRec("stays", 0, 9))})
	for i := range 50 {
		round(i)
	}
	s := r.st
	size := func() []int {
		return []int{len(s.groups.strs), len(s.ginfo), len(s.topics.strs), int(s.loaded.used), len(s.pending)}
	}
	before := size()
	for i := 50; i < 1000; i++ {
		round(i)
	}
	if after := size(); !slices.Equal(before, after) {
		t.Errorf("the state grew with churn: %v -> %v", before, after)
	}
	p := r.Result()
	if p.Len() != 1 || len(p.Groups()) != 1 || len(s.groups.ids) != 1 || len(s.topics.ids) != 1 {
		t.Errorf("live: %d offsets, groups %v, names %d/%d", p.Len(), p.Groups(), len(s.groups.ids), len(s.topics.ids))
	}
	if c := p.Counts; c.OffsetCommits != 3001 || c.OffsetTombstones != 2000 || c.GroupTombstones != 1000 || c.TxnAborts != 1000 {
		t.Errorf("counts %+v", c)
	}
}

// Result is a snapshot: what the Replayer applies afterwards does not change it. Finish
// moves the state and leaves an empty Replayer.
func TestResultSnapshotAndFinish(t *testing.T) {
	r := NewReplayer(3, OrderingKoP)
	_ = r.ApplyMessage(Message{Key: []byte("k"), Value: offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.OffsetRec("G", 0, 1), offsetlogtest.KV{offsetlogtest.GroupKey("G"), offsetlogtest.GroupValue(1, 1)})})
	snap := r.Result()
	_ = r.ApplyMessage(Message{Key: []byte("k"), Value: offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.OffsetRec("G", 0, 2), offsetlogtest.OffsetRec("H", 0, 7),
		offsetlogtest.KV{offsetlogtest.GroupKey("G"), offsetlogtest.GroupValue(2, 3)})})
	_ = r.ApplyMessage(Message{Key: []byte("k"), Value: offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.KV{offsetlogtest.OffsetKey(1, "G", t1, 0), nil})})
	if c, ok := snap.Lookup("G", t1, 0); !ok || c.Offset != 1 || snap.Len() != 1 {
		t.Errorf("snapshot changed: %+v %v len %d", c, ok, snap.Len())
	}
	if g, _ := snap.Group("G"); len(g.Members) != 1 || *g.Generation != 7 {
		t.Errorf("snapshot group %s", mustJSON(t, g))
	}
	done := r.Finish()
	if _, ok := done.Lookup("G", t1, 0); ok || done.Len() != 1 || done.Counts.Messages != 3 {
		t.Errorf("finished: len %d counts %+v", done.Len(), done.Counts)
	}
	if g, _ := done.Group("G"); len(g.Members) != 3 || g.Offsets != 0 {
		t.Errorf("finished group %s", mustJSON(t, g))
	}
	if r.Counts().Messages != 0 || r.Result().Len() != 0 {
		t.Error("the Replayer is not empty after Finish")
	}
}

// EachLive gives the live state in dump's order with the message that last wrote each
// record (for a committed transactional offset: the message of its commit record, not the
// marker); a message no live key refers to is forgotten.
func TestEachLiveKeepsMessages(t *testing.T) {
	r := NewReplayer(2, OrderingKoP)
	r.KeepMessages(false)
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	msgs := [][]byte{
		offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.OffsetRec("B", 0, 1), offsetlogtest.OffsetRec("A", 1, 2)),
		offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.KV{offsetlogtest.GroupKey("B"), offsetlogtest.GroupValue(1, 1)}, offsetlogtest.OffsetRec("B", 0, 3)),
		offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{Txn: true, PID: 4}, offsetlogtest.OffsetRec("A", 0, 4)),
		offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{Txn: true, Control: true, PID: 4}, offsetlogtest.KV{offsetlogtest.ControlKey(true), offsetlogtest.ControlValue()}),
		offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.OffsetRec("C", 0, 5)),
		offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.KV{offsetlogtest.OffsetKey(1, "C", t1, 0), nil}),
	}
	for i, v := range msgs {
		_ = r.ApplyMessage(Message{Partition: 2, MessageID: "1:" + itoa(i) + ":2:-1", PublishTime: at.Add(time.Duration(i) * time.Second), Key: []byte("k"), Value: v})
	}
	var got []string
	err := r.EachLive(func(m Message, g *Group, c *CommittedOffset) error {
		s := m.MessageID + "@" + itoa(m.PublishTime.Second()) + " "
		if g != nil {
			s += "group " + g.Group
		} else {
			s += c.Group + "/" + itoa(int(c.Partition)) + "=" + itoa(int(c.Offset))
		}
		got = append(got, s)
		return nil
	})
	want := []string{"1:2:2:-1@9 A/0=4", "1:0:2:-1@7 A/1=2", "1:1:2:-1@8 group B", "1:1:2:-1@8 B/0=3"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("EachLive:\n got %q\nwant %q", got, want)
	}
	if n := len(r.st.msgs.list) - 1 - len(r.st.msgs.free); n != 3 {
		t.Errorf("%d messages kept, want 3 (the ones live records refer to)", n)
	}
}

// AllOffsets and AllGroups over a Merge are sorted across partitions, as Offsets and Groups.
func TestAllOffsetsSortedAcrossPartitions(t *testing.T) {
	var parts []*PersistedOffsets
	for p := int32(0); p < 3; p++ {
		r := NewReplayer(p, OrderingKoP)
		for g := 0; g < 20; g++ {
			name := "g-" + itoa((g*7+int(p))%20) + "-" + itoa(int(p))
			_ = r.ApplyMessage(Message{Key: []byte("k"), Value: offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.OffsetRec(name, 2, 1), offsetlogtest.OffsetRec(name, 1, 1))})
		}
		parts = append(parts, r.Finish())
	}
	all := Merge(parts...)
	offs := all.Offsets()
	if len(offs) != 120 || !slices.IsSortedFunc(offs, func(a, b CommittedOffset) int {
		if a.Group != b.Group {
			return map[bool]int{true: -1, false: 1}[a.Group < b.Group]
		}
		return int(a.Partition - b.Partition)
	}) {
		t.Errorf("offsets not sorted: %d", len(offs))
	}
	gs := all.Groups()
	if len(gs) != 60 || !slices.IsSortedFunc(gs, func(a, b Group) int { return map[bool]int{true: -1, false: 1}[a.Group < b.Group] }) {
		t.Errorf("groups not sorted: %d", len(gs))
	}
}

// A PersistedOffsets is read by several goroutines at once (check's rows): no reader may
// write to the shared state (go test -race).
func TestPersistedOffsetsConcurrentReads(t *testing.T) {
	var parts []*PersistedOffsets
	for p := int32(0); p < 2; p++ {
		r := NewReplayer(p, OrderingKoP)
		for g := range 30 {
			_ = r.ApplyMessage(Message{Key: []byte("k"), Value: offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.OffsetRec(groupName(p, g), 0, int64(g)), offsetlogtest.OffsetRec(groupName(p, g), 1, 1))})
		}
		parts = append(parts, r.Finish())
	}
	all := Merge(parts...)
	done := make(chan int)
	for w := range 4 {
		go func() {
			n := 0
			for i := range 200 {
				g := groupName(int32(i%2), (i+w)%30)
				if c, ok := all.Lookup(g, t1, 0); ok && c.Group == g {
					n++
				}
				_, _ = all.Group(g)
				_ = all.GroupOffsets(g)
				_, _ = all.PendingOffset(g, t1, 0)
			}
			for range all.AllOffsets() {
				n++
			}
			done <- n
		}()
	}
	for range 4 {
		if n := <-done; n != 200+120 {
			t.Errorf("a reader saw %d, want 320", n)
		}
	}
}
