package align_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

func pool(src, dst []uint64) *align.Pool {
	return &align.Pool{Sources: map[string]align.Source{
		"scus": fakes.MemCopies{Topics: map[string][]uint64{"orders": src}},
		"wus":  fakes.MemCopies{Topics: map[string][]uint64{"orders": dst}},
	}}
}

func poolTranslate(t *testing.T, p *align.Pool, offset, floor int64, group string) int64 {
	t.Helper()
	tr, err := p.Translate(context.Background(), "scus", "wus", "orders", 0, offset, floor, group)
	if err != nil {
		t.Fatal(err)
	}
	return tr.Translated
}

// TestPoolSharesTrackers: groups of one partition share its Tracker; a pair of clusters the
// other way round is another.
func TestPoolSharesTrackers(t *testing.T) {
	p := pool(fakes.Sequence(0, 100), fakes.Sequence(0, 100))
	for _, g := range []string{"a", "b", "c"} {
		if got := poolTranslate(t, p, 50, 0, g); got != 50 {
			t.Fatalf("group %s: %d, want 50", g, got)
		}
	}
	if _, err := p.Translate(context.Background(), "wus", "scus", "orders", 0, 40, 0, "a"); err != nil {
		t.Fatal(err)
	}
	if n, st := p.Trackers(), p.Stats(); n != 2 || st.Builds != 2 || st.Translations != 4 {
		t.Fatalf("%d trackers, stats %+v; want 2 trackers, 2 builds, 4 translations", n, st)
	}
}

// TestPoolFloor: wus wrote 300 messages alone first (it was the primary) and the group's own
// commit there is 1100; the shared answer would send it to wus's first message, the group's
// own Tracker starts from its commit.
func TestPoolFloor(t *testing.T) {
	shared := fakes.Sequence(0, 1000)
	p := pool(shared, append(fakes.Sequence(1<<40, 1<<40+300), shared...))
	if got := poolTranslate(t, p, 900, 0, "G"); got != 0 {
		t.Fatalf("no floor: %d, want 0 (wus's own messages first)", got)
	}
	for _, o := range []int64{900, 950} {
		if got := poolTranslate(t, p, o, 1100, "G"); got != o+300 {
			t.Fatalf("floor 1100, %d: %d, want %d", o, got, o+300)
		}
	}
	if n := p.Trackers(); n != 2 {
		t.Fatalf("%d trackers, want the shared one and G's", n)
	}
	// A floor the shared Tracker already clears drops the group's own.
	if got := poolTranslate(t, p, 0, 0, "G"); got != 0 || p.Trackers() != 1 {
		t.Fatalf("no floor again: %d, %d trackers", got, p.Trackers())
	}
}

// TestPoolForgetsIdleTrackers: a partition whose groups stopped committing gives its Tracker
// back after TrackerIdle; what it read stays counted.
func TestPoolForgetsIdleTrackers(t *testing.T) {
	p := pool(fakes.Sequence(0, 100), fakes.Sequence(0, 100))
	now := time.UnixMilli(5_000)
	p.Now = func() time.Time { return now }
	poolTranslate(t, p, 50, 0, "G")
	before := p.Stats()
	if p.Trackers() != 1 || before.Builds != 1 {
		t.Fatalf("%d trackers, stats %+v", p.Trackers(), before)
	}
	now = now.Add(align.TrackerIdle + 2*time.Minute)
	if got := poolTranslate(t, p, 60, 0, "G"); got != 60 { // the old Tracker is swept before this one is made
		t.Fatalf("translated %d, want 60", got)
	}
	if st := p.Stats(); st.Builds != 2 || st.SourceReads < before.SourceReads || p.Trackers() != 1 {
		t.Fatalf("after the sweep: stats %+v, before %+v, %d trackers", st, before, p.Trackers())
	}
}

func TestPoolUnknownCluster(t *testing.T) {
	p := pool(fakes.Sequence(0, 10), fakes.Sequence(0, 10))
	_, err := p.Translate(context.Background(), "scus", "eus", "orders", 0, 5, 0, "G")
	if err == nil || !strings.Contains(err.Error(), "eus") {
		t.Fatalf("err = %v, want one naming eus", err)
	}
}

// gated is a copy whose reads wait (up to 2 s) until another read of the same cluster is in
// flight, counting the most at once.
type gated struct {
	align.RangeSource
	mu             sync.Mutex
	inFlight, most int
}

func (g *gated) ScanFrom(ctx context.Context, topic string, p int32, from int64, fn func(align.Record) bool) (align.Bounds, error) {
	g.mu.Lock()
	g.inFlight++
	g.most = max(g.most, g.inFlight)
	g.mu.Unlock()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		g.mu.Lock()
		n := g.most
		g.mu.Unlock()
		if n >= 2 {
			break
		}
	}
	defer func() {
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	}()
	return g.RangeSource.ScanFrom(ctx, topic, p, from, fn)
}

func (g *gated) Scan(ctx context.Context, topic string, p int32, fn func(align.Record) bool) (align.Bounds, error) {
	return g.ScanFrom(ctx, topic, p, 0, fn)
}

// TestPoolWarm: Warm reads the partitions wanted several at once, up to the highest offset
// wanted of each; the translations that follow read nothing, and answer as without it.
func TestPoolWarm(t *testing.T) {
	topics := map[string][]uint64{}
	for i := range 4 {
		topics[fmt.Sprintf("t%d", i)] = fakes.Sequence(uint64(i)<<32, uint64(i)<<32+500)
	}
	scus := &gated{RangeSource: fakes.MemCopies{Topics: topics}}
	wus := &gated{RangeSource: fakes.MemCopies{Topics: topics}}
	p := &align.Pool{Sources: map[string]align.Source{"scus": scus, "wus": wus}}
	ctx := context.Background()
	var reqs []align.Request
	for i := range 4 {
		for _, o := range []int64{100, 400, 250} {
			reqs = append(reqs, align.Request{From: "scus", To: "wus", Topic: fmt.Sprintf("t%d", i), Offset: o})
		}
	}
	p.Warm(ctx, reqs, 4)
	if scus.most < 2 || wus.most < 2 {
		t.Errorf("reads at once: scus %d, wus %d; want several", scus.most, wus.most)
	}
	read := p.Stats()
	if read.Builds != 4 {
		t.Fatalf("%d Trackers built, want one per partition (4)", read.Builds)
	}
	for i := range 4 {
		for _, o := range []int64{100, 400, 250} {
			tr, err := p.Translate(ctx, "scus", "wus", fmt.Sprintf("t%d", i), 0, o, 0, "g")
			if err != nil || tr.Translated != o {
				t.Fatalf("t%d at %d: %+v %v, want %d", i, o, tr, err, o)
			}
		}
	}
	if after := p.Stats(); after.SourceReads != read.SourceReads || after.TargetReads != read.TargetReads {
		t.Errorf("translations after Warm read %d+%d messages, want none", after.SourceReads-read.SourceReads, after.TargetReads-read.TargetReads)
	}
}

// TestFloorFollowsAResetBelowIt: the group's own position on wus is 400 (scus 700: scus's
// copy starts with 300 messages of its own). scus's commits at or past 700 are floored; below
// it (a reset) the translation follows, to the exact message, including into the messages only
// scus holds, which land on wus's first message. Translating the floor back into scus's
// numbering stopped at scus's first message of its own (0), so no reset was ever followed.
func TestFloorFollowsAResetBelowIt(t *testing.T) {
	p := &align.Pool{Sources: map[string]align.Source{
		"scus": fakes.MemCopies{Topics: map[string][]uint64{"t": append(fakes.Sequence(1<<40, 1<<40+300), fakes.Sequence(0, 1000)...)}},
		"wus":  fakes.MemCopies{Topics: map[string][]uint64{"t": fakes.Sequence(0, 1000)}},
	}}
	ctx := context.Background()
	for _, c := range []struct {
		offset, want int64
		holds        bool
	}{{900, 600, true}, {700, 400, true}, {500, 200, false}, {100, 0, false}, {0, 0, false}, {699, 399, false}} {
		holds := p.FloorHolds(ctx, "scus", "wus", "t", 0, c.offset, 400, "G")
		got, err := p.TranslateFloored(ctx, "scus", "wus", "t", 0, c.offset, 400, "G")
		if err != nil || got.Translated != c.want || holds != c.holds {
			t.Errorf("scus %d: translated %d holds %v (%v), want %d holds %v", c.offset, got.Translated, holds, err, c.want, c.holds)
		}
	}
}
