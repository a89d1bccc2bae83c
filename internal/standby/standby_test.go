package standby

import (
	"context"
	"fmt"
	"math/rand/v2"
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

func (w *target) replicate(offset int64) { w.replicateAt(offset, 1_000) }

// replicateAt is replicate with the source's commit time (Unix ms).
func (w *target) replicateAt(offset, at int64) {
	m := kop.Message(0, w.seq, kop.OffsetCommit{Group: "G", Topic: topic, Partition: 0, Offset: offset, CommitTime: time.UnixMilli(at)})
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
	// the group's own commit, one placing that commit in scus's numbering (does the floor
	// still hold: align.Pool.FloorHolds); the later commits are read incrementally.
	if st := k.Stats(); st.Builds != 3 {
		t.Fatalf("%d builds, want 3", st.Builds)
	}
	// The group is reset on scus below where its own commit here stands (wus 1100 is scus
	// 800): the kept translation follows it back, exactly to the reset point, the 300
	// messages only wus holds still consumed (issue 51: a failover lands at the reset point).
	for _, c := range []struct{ source, want int64 }{{100, 400}, {0, 300}, {850, 1150}} {
		w.replicate(c.source)
		keep(t, k, w, true)
		if got := w.offset(); got.Offset != c.want || got.Kept == nil || got.Kept.Source != c.source {
			t.Fatalf("reset to %d on scus: kept %d (%+v), want %d", c.source, got.Offset, got.Kept, c.want)
		}
	}
}

// TestKeepFencedAgainstANewerCommit is issue 51's race: the keeper decided on scus's 500,
// and scus's 10900 replicated in before its write landed; then the group's own commit here
// was hidden the same way. KoP loads the last entry of a key: the next keep writes the newer
// commit's translation (or the group's own number back), so the tool's older write is never
// the last word.
func TestKeepFencedAgainstANewerCommit(t *testing.T) {
	k, w, _ := setup(t, fakes.Sequence(0, 20000), fakes.Sequence(0, 20000))
	w.replicateAt(500, 1_000)
	stale := k.Want(w.offsets()) // decided now, written after 10900 landed
	w.replicateAt(10900, 2_000)
	if res := k.Keep(context.Background(), "G", stale, func(string) bool { return true }); len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	if c := w.offset(); c.Offset != 500 || c.Newer == nil || c.Newer.Offset != 10900 || c.Newer.Origin != "scus" {
		t.Fatalf("the late kept 500: %+v newer %+v", c, c.Newer)
	}
	keep(t, k, w, true)
	if c := w.offset(); c.Offset != 10900 || c.Newer != nil || c.Kept == nil || c.Kept.Source != 10900 || !c.Kept.Current {
		t.Fatalf("kept again: %+v kept %+v newer %+v", c, c.Kept, c.Newer)
	}
	// The group's own commit here, hidden by a kept translation decided before it.
	w.replicateAt(11000, 3_000)
	stale = k.Want(w.offsets())
	if err := w.r.ApplyMessage(kop.Message(0, 99, kop.OffsetCommit{Group: "G", Topic: topic, Offset: 12000, CommitTime: time.UnixMilli(4_000)})); err != nil {
		t.Fatal(err)
	}
	if res := k.Keep(context.Background(), "G", stale, func(string) bool { return true }); len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	if c := w.offset(); c.Offset != 11000 || c.Newer == nil || c.Newer.Origin != "" || c.Newer.Offset != 12000 {
		t.Fatalf("the late kept 11000 over the group's own 12000: %+v newer %+v", c, c.Newer)
	}
	keep(t, k, w, true)
	if c := w.offset(); c.Offset != 12000 || c.Newer != nil || c.Floor() != 12000 {
		t.Fatalf("the group's own commit written back: %+v newer %+v floor %d", c, c.Newer, c.Floor())
	}
	if want := k.Want(w.offsets()); len(want) != 0 {
		t.Fatalf("still wanted after the fence: %+v", want)
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

// TestKeepFenceProperty: whatever lands between the keeper's decision and its write (scus's
// commits replicated in, the group's own commits here), the key's last entry is never an
// older commit than the newest one without Newer naming that one, and one keep afterwards
// makes the newest commit the last word again (aligned copies: its exact number).
func TestKeepFenceProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 2))
	for run := range 300 {
		k, w, _ := setup(t, fakes.Sequence(0, 5000), fakes.Sequence(0, 5000))
		var clock, newestAt, newest int64
		commitSomething := func() {
			clock++
			newest, newestAt = rng.Int64N(5000), clock*1000
			if rng.IntN(3) == 0 {
				if err := w.r.ApplyMessage(kop.Message(0, w.seq, kop.OffsetCommit{Group: "G", Topic: topic, Offset: newest, CommitTime: time.UnixMilli(newestAt)})); err != nil {
					t.Fatal(err)
				}
				w.seq++
				return
			}
			w.replicateAt(newest, newestAt)
		}
		var log []string
		check := func(what string) {
			c := w.offset()
			log = append(log, fmt.Sprintf("%s: %d@%d newer %+v (newest %d@%d)", what, c.Offset, c.CommitTimestamp, c.Newer, newest, newestAt))
			if int64(c.CommitTimestamp) < newestAt && (c.Newer == nil || int64(c.Newer.CommitTimestamp) != newestAt) {
				t.Fatalf("run %d: an older last word than %d@%d, nothing says so:\n%v", run, newest, newestAt, log)
			}
		}
		commitSomething()
		for range 1 + rng.IntN(12) {
			switch rng.IntN(3) {
			case 0:
				commitSomething()
			case 1:
				stale := k.Want(w.offsets())
				for range rng.IntN(3) {
					commitSomething()
				}
				if res := k.Keep(context.Background(), "G", stale, func(string) bool { return true }); len(res.Errors) > 0 {
					t.Fatal(res.Errors)
				}
			default:
				keep(t, k, w, true)
			}
			check("step")
		}
		keep(t, k, w, true)
		check("kept")
		if c := w.offset(); c.Offset != newest || int64(c.CommitTimestamp) != newestAt || c.Newer != nil {
			t.Fatalf("run %d: after a keep, %d@%d (newer %+v), want the newest %d@%d:\n%v", run, c.Offset, c.CommitTimestamp, c.Newer, newest, newestAt, log)
		}
	}
}
