package loader

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
	"github.com/kop-offsets/kop-offsets/internal/offsetlog/offsetlogtest"
)

const t1 = "persistent://public/default/topic-1"

// replayBoth feeds the messages through ApplyMessage and, separately, through Decode+Apply,
// and checks that both paths agree.
func replayBoth(t *testing.T, ordering TxnOrdering, values ...[]byte) *PersistedOffsets {
	t.Helper()
	fast := NewReplayer(7, ordering)
	slow := NewReplayer(7, ordering)
	for i, v := range values {
		_ = fast.ApplyMessage(Message{Partition: 7, MessageID: "1:" + itoa(i) + ":7:-1", Key: []byte("k"), Value: v})
		recs, _ := offsetlog.Decode(nil, v)
		for _, r := range recs {
			slow.Apply(r)
		}
	}
	a, b := fast.Result(), slow.Result()
	if ja, jb := mustJSON(t, a.Offsets()), mustJSON(t, b.Offsets()); ja != jb {
		t.Fatalf("fast and slow replay differ:\n%s\n%s", ja, jb)
	}
	if ja, jb := mustJSON(t, a.Groups()), mustJSON(t, b.Groups()); ja != jb {
		t.Fatalf("fast and slow replay differ on groups:\n%s\n%s", ja, jb)
	}
	return a
}

func mustOffset(t *testing.T, p *PersistedOffsets, group string, part int32) int64 {
	t.Helper()
	c, ok := p.Lookup(group, t1, part)
	if !ok {
		t.Fatalf("no offset for %s/%d", group, part)
	}
	return c.Offset
}

func TestReplayLastValueWinsAndTombstones(t *testing.T) {
	p := replayBoth(t, OrderingKoP,
		offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.OffsetRec("G", 0, 100), offsetlogtest.OffsetRec("G", 1, 5)),
		offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.OffsetRec("G", 0, 10900)),
		offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.KV{offsetlogtest.OffsetKey(1, "G", t1, 1), nil}),
		offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.OffsetRec("H", 0, 1)),
	)
	if got := mustOffset(t, p, "G", 0); got != 10900 {
		t.Errorf("G/0 = %d", got)
	}
	if _, ok := p.Lookup("G", t1, 1); ok {
		t.Error("G/1 survived its tombstone")
	}
	if p.Len() != 2 || len(p.GroupOffsets("G")) != 1 {
		t.Errorf("offsets %s", mustJSON(t, p.Offsets()))
	}
	c := p.Counts
	if c.Messages != 4 || c.OffsetCommits != 4 || c.OffsetTombstones != 1 {
		t.Errorf("counts %+v", c)
	}
	g, ok := p.Group("G")
	if !ok || g.HasMetadata || g.State != GroupEmpty || g.Offsets != 1 || g.OffsetsPartition != 7 {
		t.Errorf("group %+v", g)
	}
}

func TestReplayGroupTombstoneKeepsOffsets(t *testing.T) {
	p := replayBoth(t, OrderingKoP,
		offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.OffsetRec("G", 0, 5)),
		offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.KV{offsetlogtest.GroupKey("G"), offsetlogtest.GroupValue(1, 2)}),
		offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.KV{offsetlogtest.GroupKey("G"), offsetlogtest.GroupValue(1, 1)}),
		offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.KV{offsetlogtest.GroupKey("X"), offsetlogtest.GroupValue(1, 1)}),
	)
	g, _ := p.Group("G")
	if !g.HasMetadata || g.State != GroupStable || len(g.Members) != 1 || *g.Generation != 7 || g.Offsets != 1 {
		t.Fatalf("group %s", mustJSON(t, g))
	}
	p = replayBoth(t, OrderingKoP,
		offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.OffsetRec("G", 0, 5)),
		offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.KV{offsetlogtest.GroupKey("G"), offsetlogtest.GroupValue(1, 2)}),
		offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.KV{offsetlogtest.GroupKey("G"), nil}),
	)
	if got := mustOffset(t, p, "G", 0); got != 5 {
		t.Errorf("offset %d", got)
	}
	g, ok := p.Group("G")
	if !ok || g.HasMetadata || g.State != GroupEmpty {
		t.Errorf("group after tombstone %s", mustJSON(t, g))
	}
	if rg := p.RemovedGroups(); len(rg) != 1 || rg[0] != "G" {
		t.Errorf("removed %v", rg)
	}
	// metadata without members: Empty
	p = replayBoth(t, OrderingKoP, offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.KV{offsetlogtest.GroupKey("E"), offsetlogtest.GroupValue(2, 0)}))
	if g, _ := p.Group("E"); g.State != GroupEmpty || !g.HasMetadata {
		t.Errorf("empty group %s", mustJSON(t, g))
	}
}

func TestReplayTransactions(t *testing.T) {
	txn := func(pid int64, recs ...offsetlogtest.KV) []byte {
		return offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{Txn: true, PID: pid}, recs...)
	}
	marker := func(pid int64, commit bool) []byte {
		return offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{Txn: true, Control: true, PID: pid}, offsetlogtest.KV{offsetlogtest.ControlKey(commit), offsetlogtest.ControlValue()})
	}
	msgs := [][]byte{
		txn(1, offsetlogtest.OffsetRec("G", 0, 50), offsetlogtest.OffsetRec("G", 1, 51)),            // pid 1: commits
		txn(2, offsetlogtest.OffsetRec("G", 2, 60)),                                                 // pid 2: aborts
		txn(3, offsetlogtest.OffsetRec("G", 3, 70)),                                                 // pid 3: never finishes
		offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.OffsetRec("G", 1, 40)), // plain commit of G/1 before pid 1's marker
		marker(2, false),
		marker(1, true),
	}
	p := replayBoth(t, OrderingKoP, msgs...)
	if got := mustOffset(t, p, "G", 0); got != 50 {
		t.Errorf("committed txn offset G/0 = %d", got)
	}
	if c, _ := p.Lookup("G", t1, 0); c.ProducerID == nil || *c.ProducerID != 1 {
		t.Errorf("producerId %v", c.ProducerID)
	}
	// KoP: positions are (0,0) on both sides, the loaded plain commit is not "older".
	if got := mustOffset(t, p, "G", 1); got != 40 {
		t.Errorf("KoP ordering: G/1 = %d, want the plain commit 40", got)
	}
	if _, ok := p.Lookup("G", t1, 2); ok {
		t.Error("aborted offset applied")
	}
	if _, ok := p.Lookup("G", t1, 3); ok {
		t.Error("pending offset applied")
	}
	if pend := p.Pending(); len(pend) != 1 || pend[0].Offset != 70 || *pend[0].ProducerID != 3 {
		t.Errorf("pending %s", mustJSON(t, pend))
	}
	if c := p.Counts; c.TxnCommits != 1 || c.TxnAborts != 1 {
		t.Errorf("counts %+v", c)
	}
	// Kafka's log order: the transaction's records come first, so the later plain commit
	// still wins here...
	if got := mustOffset(t, replayBoth(t, OrderingLog, msgs...), "G", 1); got != 40 {
		t.Errorf("log ordering: G/1 = %d, want 40", got)
	}
	// ...and a transaction written after a plain commit replaces it only in log order.
	later := [][]byte{offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.OffsetRec("G", 1, 40)), txn(1, offsetlogtest.OffsetRec("G", 1, 51)), marker(1, true)}
	if got := mustOffset(t, replayBoth(t, OrderingLog, later...), "G", 1); got != 51 {
		t.Errorf("log ordering: G/1 = %d, want 51", got)
	}
	if got := mustOffset(t, replayBoth(t, OrderingKoP, later...), "G", 1); got != 40 {
		t.Errorf("KoP ordering: G/1 = %d, want 40", got)
	}
	// a transactional tombstone removes the pending offset only
	p = replayBoth(t, OrderingKoP, txn(1, offsetlogtest.OffsetRec("G", 0, 50)), txn(1, offsetlogtest.KV{offsetlogtest.OffsetKey(1, "G", t1, 0), nil}), marker(1, true))
	if _, ok := p.Lookup("G", t1, 0); ok {
		t.Error("txn tombstone ignored")
	}
}

func TestReplayPlaceholdersAndErrors(t *testing.T) {
	r := NewReplayer(3, OrderingKoP)
	good := offsetlogtest.CommitMsg(t, "G", t1, 0, 1)
	bad := append([]byte(nil), good...)
	bad[len(bad)-1] ^= 1 // breaks the record framing (and the CRC)
	badCRC := append([]byte(nil), offsetlogtest.CommitMsg(t, "G", t1, 7, 70)...)
	badCRC[batchOffCRC] ^= 0xff // the CRC alone: KoP never checks it and loads the batch
	_ = r.ApplyMessage(Message{Key: []byte("k"), Value: nil})
	_ = r.ApplyMessage(Message{Key: nil, Value: good}) // KoP skips keyless messages
	if err := r.ApplyMessage(Message{MessageID: "9:9:3:-1", Key: []byte("k"), Value: bad}); !errors.Is(err, offsetlog.ErrMalformed) {
		t.Errorf("err %v", err)
	}
	if err := r.ApplyMessage(Message{MessageID: "9:10:3:-1", Key: []byte("k"), Value: badCRC}); err != nil {
		t.Errorf("bad CRC: err %v, want it read as KoP does", err)
	}
	_ = r.ApplyMessage(Message{Key: []byte("k"), Value: offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.KV{offsetlogtest.OffsetKey(1, "G", t1, 5), []byte{0, 9}}, offsetlogtest.OffsetRec("G", 6, 6))})
	p := r.Result()
	c := p.Counts
	if c.Messages != 5 || c.Placeholders != 2 || c.Keyless != 1 || c.Undecodable != 2 || c.OffsetCommits != 2 || c.BadCRC != 2 {
		t.Errorf("counts %+v", c)
	}
	if p.Len() != 2 || len(p.Errors) != 2 || p.Errors[0].MessageID != "9:9:3:-1" || !errors.Is(p.Errors[0], offsetlog.ErrMalformed) {
		t.Errorf("result %d offsets, errors %v", p.Len(), p.Errors)
	}
	if got := mustOffset(t, p, "G", 7); got != 70 {
		t.Errorf("bad-CRC batch: G/7 = %d, want 70", got)
	}
	if !errors.Is(r.Err(), offsetlog.ErrMalformed) {
		t.Errorf("first error %v", r.Err())
	}
	if k := c.ByKind(); k[offsetlog.KindUndecodable] != 2 || k[offsetlog.KindPlaceholder] != 2 {
		t.Errorf("by kind %v", k)
	}
	// KoP's load stops at the first record it cannot parse: nothing of the partition is served.
	f, ok := p.LoadFailure(3)
	if !ok || f.MessageID != "9:9:3:-1" || !strings.Contains(f.Reason, "headersCount") {
		t.Errorf("load failure %+v %v", f, ok)
	}
	if _, ok := p.Predict("G", t1, 7); ok {
		t.Error("Predict served an offset from a partition KoP cannot load")
	}
	if _, ok := p.Lookup("G", t1, 7); !ok {
		t.Error("Lookup lost what the topic holds")
	}
}

type fakeReader map[int32][]Message

func (f fakeReader) Partitions(context.Context) (int32, error) { return int32(len(f)), nil }
func (f fakeReader) ReadPartition(_ context.Context, p int32, fn func(Message) error) error {
	for _, m := range f[p] {
		if err := fn(m); err != nil {
			return err
		}
	}
	return nil
}

func TestReplayPartitionAndMerge(t *testing.T) {
	fr := fakeReader{
		0: {{Key: []byte("k"), Value: offsetlogtest.CommitMsg(t, "A", t1, 0, 1)}},
		1: {{Key: []byte("k"), Value: offsetlogtest.CommitMsg(t, "B", t1, 0, 2)}, {Key: []byte("k")}},
	}
	var parts []*PersistedOffsets
	for p := int32(0); p < 2; p++ {
		res, err := ReplayPartition(context.Background(), fr, p, OrderingKoP)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, res)
	}
	m := Merge(parts...)
	if m.Len() != 2 || m.Counts.Messages != 3 || m.Counts.Placeholders != 1 || len(m.Partitions) != 2 {
		t.Fatalf("merged %+v", m)
	}
	if b, _ := m.Lookup("B", t1, 0); b.OffsetsPartition != 1 {
		t.Errorf("offsets partition %d", b.OffsetsPartition)
	}
	if gs := m.Groups(); len(gs) != 2 || gs[0].Group != "A" {
		t.Errorf("groups %+v", gs)
	}
}

func TestReplayKoPLoaderQuirks(t *testing.T) {
	txn := func(pid int64, recs ...offsetlogtest.KV) []byte {
		return offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{Txn: true, PID: pid}, recs...)
	}
	ctl := func(pid int64, typ int16) []byte {
		return offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{Control: true, Txn: true, PID: pid}, offsetlogtest.KV{[]byte{0, 0, byte(typ >> 8), byte(typ)}, []byte{0, 0, 0, 0, 0, 0}})
	}
	// A control record of another type than COMMIT drops the producer's pending offsets.
	p := replayBoth(t, OrderingKoP, txn(4, offsetlogtest.OffsetRec("G", 0, 10)), ctl(4, 7), txn(4, offsetlogtest.OffsetRec("G", 1, 11)), ctl(4, 1))
	if _, ok := p.Lookup("G", t1, 0); ok {
		t.Error("offset of a transaction ended by an unknown control type was applied")
	}
	if got := mustOffset(t, p, "G", 1); got != 11 {
		t.Errorf("G/1 = %d, want 11", got)
	}
	if p.Counts.UnknownControl != 1 || len(p.LoadFailures()) != 0 {
		t.Errorf("counts %+v, load failures %v", p.Counts, p.LoadFailures())
	}
	// A record without a key inside a batch is skipped, not a failure.
	p = replayBoth(t, OrderingKoP, offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.KV{nil, []byte{0, 1}}, offsetlogtest.OffsetRec("G", 2, 20)))
	if got := mustOffset(t, p, "G", 2); got != 20 || p.Counts.KeylessRecords != 1 || len(p.LoadFailures()) != 0 {
		t.Errorf("G/2 = %d, counts %+v, failures %v", got, p.Counts, p.LoadFailures())
	}
	// An offset value v3 is applied as Kafka would, but KoP's load of the partition fails.
	v3 := offsetlogtest.KV{offsetlogtest.OffsetKey(1, "H", t1, 0), offsetlogtest.OffsetValue(3, 33, 5, "", 1700000000000, -1)}
	p = replayBoth(t, OrderingKoP, offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.OffsetRec("G", 3, 30)), offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, v3))
	f, ok := p.LoadFailure(7)
	if !ok || f.MessageID != "1:1:7:-1" || !strings.Contains(f.Reason, "offset value v3") {
		t.Fatalf("load failure %+v %v", f, ok)
	}
	if _, ok := p.Predict("G", t1, 3); ok {
		t.Error("Predict: KoP loads nothing of a partition it cannot parse")
	}
	if got := mustOffset(t, p, "G", 3); got != 30 {
		t.Errorf("Lookup G/3 = %d, want 30 (what the topic holds)", got)
	}
	// Pending transactional offsets stay visible beside the prediction.
	p = replayBoth(t, OrderingKoP, offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.OffsetRec("G", 0, 5)), txn(9, offsetlogtest.OffsetRec("G", 0, 600)))
	if c, ok := p.PendingOffset("G", t1, 0); !ok || c.Offset != 600 {
		t.Errorf("pending %+v %v", c, ok)
	}
	if c, ok := p.Predict("G", t1, 0); !ok || c.Offset != 5 {
		t.Errorf("predict %+v %v, want 5", c, ok)
	}
}

// GroupOffsets answers from an index built once: every group's offsets, and only its own,
// after a Merge of several partitions.
func TestGroupOffsetsIndexed(t *testing.T) {
	var parts []*PersistedOffsets
	for p := int32(0); p < 4; p++ {
		r := NewReplayer(p, OrderingKoP)
		for g := 0; g < 50; g++ {
			for tp := int32(0); tp < 3; tp++ {
				_ = r.ApplyMessage(Message{Key: []byte("k"), Value: offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.OffsetRec(groupName(p, g), tp, int64(g*10)+int64(tp)))})
			}
		}
		parts = append(parts, r.Result())
	}
	all := Merge(parts...)
	for p := int32(0); p < 4; p++ {
		for g := 0; g < 50; g++ {
			got := all.GroupOffsets(groupName(p, g))
			if len(got) != 3 {
				t.Fatalf("%s: %d offsets", groupName(p, g), len(got))
			}
			for i, c := range got {
				if c.Group != groupName(p, g) || c.Partition != int32(i) || c.Offset != int64(g*10+i) {
					t.Fatalf("%s: %+v", groupName(p, g), got)
				}
			}
		}
	}
	if got := all.GroupOffsets("nobody"); len(got) != 0 {
		t.Errorf("nobody: %+v", got)
	}
}

func groupName(p int32, g int) string { return "g-" + itoa(int(p)) + "-" + itoa(g) }

// A replayed group without members says so in JSON ("members": []), as a decoded one does
// (offsetlog's TestGroupWithoutMembersJSON).
func TestReplayedGroupWithoutMembersJSON(t *testing.T) {
	p := replayBoth(t, OrderingKoP, offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.KV{offsetlogtest.GroupKey("G"), offsetlogtest.GroupValue(1, 0)}))
	if gs := mustJSON(t, p.Groups()); !strings.Contains(gs, `"members":[]`) {
		t.Errorf("replayed group: %s", gs)
	}
}
