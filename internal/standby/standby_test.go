package standby

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

const topic = "persistent://public/default/orders"

// target is the kept cluster's offsets partition of the group: what replicated and what
// the Keeper wrote, replayed as KoP's loader (and watch) read it.
type target struct {
	t      *testing.T
	r      *loader.Replayer
	seq    int
	writes int
}

func newTarget(t *testing.T) *target {
	return &target{t: t, r: loader.NewReplayer(0, loader.OrderingKoP)}
}

func (w *target) replicate(offset int64) {
	m := kop.Message(0, w.seq, kop.OffsetCommit{Group: "G", Topic: topic, Partition: 0, Offset: offset, CommitTime: time.UnixMilli(1_000)})
	m.ReplicatedFrom = "scus"
	w.seq++
	if err := w.r.ApplyMessage(m); err != nil {
		w.t.Fatal(err)
	}
}

func (w *target) Keep(_ context.Context, cs []kop.OffsetCommit, mark loader.KeptMark) (int32, pulsar.MessageID, error) {
	key, v, err := kop.EncodeKeep(cs)
	if err != nil {
		return 0, nil, err
	}
	w.writes++
	m := loader.Message{MessageID: fmt.Sprintf("1:%d:0:-1", w.seq), Key: key, Value: v, Kept: &mark}
	w.seq++
	return 0, nil, w.r.ApplyMessage(m)
}

func (w *target) offsets() []loader.CommittedOffset { return w.r.Result().Offsets() }

func (w *target) offset() loader.CommittedOffset {
	c, ok := w.r.Result().Lookup("G", topic, 0)
	if !ok {
		w.t.Fatal("no offset for G")
	}
	return c
}

// copies is one cluster's copy of the topic.
func copies(ids []uint64) fakes.MemCopies {
	return fakes.MemCopies{Topics: map[string][]uint64{"orders": ids}}
}

// setup is a Keeper of wus with the copies src (scus) and dst (wus) of the topic, writing
// into the target it returns; dst is the wus copy, to grow.
func setup(t *testing.T, src, dst []uint64) (*Keeper, *target, fakes.MemCopies) {
	w, d := newTarget(t), copies(dst)
	k := &Keeper{Cluster: "wus", KafkaNamespace: "public/default", Sources: map[string]align.Source{"scus": copies(src), "wus": d}, Writer: w,
		Now: func() time.Time { return time.UnixMilli(5_000) }}
	return k, w, d
}

func keep(t *testing.T, k *Keeper, w *target, up bool) Result {
	t.Helper()
	res := k.Keep(context.Background(), "G", k.Want(w.offsets()), func(string) bool { return up })
	for _, err := range res.Errors {
		t.Fatal(err)
	}
	return res
}

func TestKeepAligned(t *testing.T) {
	k, w, _ := setup(t, fakes.Sequence(0, 1000), fakes.Sequence(0, 1000))
	w.replicate(900)
	res := keep(t, k, w, true)
	c := w.offset()
	if len(res.Kept) != 1 || c.Offset != 900 || c.Origin != "" || c.Kept == nil || !c.Kept.Current || c.Kept.Source != 900 || c.Kept.From != "scus" {
		t.Fatalf("kept %+v; offset %+v kept %+v", res.Kept, c, c.Kept)
	}
	if c.CommitTimestamp != 1_000 {
		t.Fatalf("commit time %d, want the source's 1000", c.CommitTimestamp)
	}
	// Kept: nothing more to do until the next replicated commit.
	if want := k.Want(w.offsets()); len(want) != 0 {
		t.Fatalf("kept offsets wanted again: %+v", want)
	}
}

func TestKeepMisaligned(t *testing.T) {
	// 300 messages on scus that never replicated: scus 6000 is wus 5700.
	k, w, _ := setup(t, append(fakes.Sequence(1<<40, 1<<40+300), fakes.Sequence(0, 6500)...), fakes.Sequence(0, 6500))
	for _, o := range []int64{6000, 6100, 6250} {
		w.replicate(o)
		keep(t, k, w, true)
		if c := w.offset(); c.Offset != o-300 || c.Kept.Source != o {
			t.Fatalf("replicated %d: kept %d (source %d), want %d", o, c.Offset, c.Kept.Source, o-300)
		}
	}
	if st := k.Stats(); st.Builds != 1 {
		t.Fatalf("%d builds for three commits, want 1 (then incremental)", st.Builds)
	}
}

func TestKeepSourceDown(t *testing.T) {
	k, w, _ := setup(t, fakes.Sequence(0, 10), fakes.Sequence(0, 10))
	w.replicate(8)
	if res := keep(t, k, w, false); len(res.Kept) != 0 || w.writes != 0 {
		t.Fatalf("kept with the source down: %+v", res)
	}
	if c := w.offset(); c.Origin != "scus" || c.Kept != nil {
		t.Fatalf("offset changed: %+v", c)
	}
}

func TestKeepOwnCommitsAlone(t *testing.T) {
	k, w, _ := setup(t, fakes.Sequence(0, 10), fakes.Sequence(0, 10))
	if err := w.r.ApplyMessage(kop.Message(0, 0, kop.OffsetCommit{Group: "G", Topic: topic, Offset: 5})); err != nil {
		t.Fatal(err)
	}
	if want := k.Want(w.offsets()); len(want) != 0 {
		t.Fatalf("the cluster's own commit wanted: %+v", want)
	}
}

// TestKeepBehind: the commit replicated before the data it names; the kept translation is
// the log end as held, then rises as the messages arrive, without rewriting in between.
func TestKeepBehind(t *testing.T) {
	k, w, dst := setup(t, fakes.Sequence(0, 100), fakes.Sequence(0, 60))
	w.replicate(100)
	res := keep(t, k, w, true)
	if len(res.Kept) != 1 || !res.Kept[0].Behind || w.offset().Offset != 60 {
		t.Fatalf("behind: %+v, offset %d", res.Kept, w.offset().Offset)
	}
	if g := k.Again(); len(g) != 1 || g[0] != "G" {
		t.Fatalf("Again() = %v", g)
	}
	writes := w.writes
	keep(t, k, w, true) // nothing arrived: nothing written
	if w.writes != writes {
		t.Fatalf("rewrote an unchanged translation")
	}
	dst.Topics["orders"] = fakes.Sequence(0, 100)
	keep(t, k, w, true)
	if c := w.offset(); c.Offset != 100 || len(k.Again()) != 0 {
		t.Fatalf("after the data arrived: offset %d, behind %v", c.Offset, k.Again())
	}
}

// TestKeepFailback: the kept cluster was the primary (300 messages of its own that the other
// copy never got), the group committed 1100 here, failed over and committed on the other
// cluster; those commits come back replicated in its numbering. The group's own commit is
// where their translation starts: not the messages only this cluster holds.
func TestKeepFailback(t *testing.T) {
	shared := fakes.Sequence(0, 1000)
	k, w, _ := setup(t, shared, append(fakes.Sequence(1<<40, 1<<40+300), shared...))
	if err := w.r.ApplyMessage(kop.Message(0, 99, kop.OffsetCommit{Group: "G", Topic: topic, Offset: 1100})); err != nil {
		t.Fatal(err)
	}
	for _, o := range []int64{900, 950, 990} {
		w.replicate(o)
		keep(t, k, w, true)
		if c := w.offset(); c.Offset != o+300 || c.Kept == nil || c.Kept.Source != o || c.Own == nil || *c.Own != 1100 {
			t.Fatalf("replicated %d: kept %d (%+v, own %v), want %d", o, c.Offset, c.Kept, c.Own, o+300)
		}
	}
	// One build shared by the groups (it stops at the messages only wus holds), one from
	// the group's own commit; the later commits are read incrementally.
	if st := k.Stats(); st.Builds != 2 {
		t.Fatalf("%d builds, want 2", st.Builds)
	}
}

// TestKeepForgetsIdleTrackers: a partition whose groups stopped committing gives its Tracker
// back after TrackerIdle; what it read stays counted.
func TestKeepForgetsIdleTrackers(t *testing.T) {
	k, w, _ := setup(t, fakes.Sequence(0, 100), fakes.Sequence(0, 100))
	now := time.UnixMilli(5_000)
	k.Now = func() time.Time { return now }
	w.replicate(50)
	keep(t, k, w, true)
	before := k.Stats()
	if k.trackers().Trackers() != 1 || before.Builds != 1 {
		t.Fatalf("%d trackers, stats %+v", k.trackers().Trackers(), before)
	}
	now = now.Add(TrackerIdle + 2*time.Minute)
	w.replicate(60)
	keep(t, k, w, true) // the old Tracker is swept before this one is made
	if st := k.Stats(); st.Builds != 2 || st.SourceReads < before.SourceReads {
		t.Fatalf("after the sweep: stats %+v, before %+v", st, before)
	}
	if c := w.offset(); c.Offset != 60 {
		t.Fatalf("kept %d, want 60", c.Offset)
	}
}
