package align

import (
	"context"
	"testing"
)

// failback is the copies after a failback: scus wrote 300 messages before replication
// started (never on wus), then 1000 replicated (scus offset 300+i is wus offset i); the
// group's own commit on scus was 1100 (wus 800) before it failed over to wus.
func failback() (wus, scus *mem) {
	return &mem{ids: seq(1000, 2000)}, &mem{ids: cat(seq(0, 300), seq(1000, 2000))}
}

func TestFloorFailback(t *testing.T) {
	wus, scus := failback()
	ctx := context.Background()
	cases := []struct {
		name          string
		offset, floor int64
		want          int64
		floored       bool
		unmatched     int64
	}{
		{"no floor: the messages only scus holds come first", 900, -1, 0, false, 900},
		{"the group's own commit on scus is where it starts", 900, 1100, 1200, true, 0},
		{"never below the own commit", 700, 1100, 1100, true, 0},
		{"a floor past the copy's end is none", 900, 5000, 0, false, 900},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := BuildFrom(ctx, "wus", "scus", wus, scus, "t", 0, c.offset, c.floor, 0)
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.Translate(c.offset)
			if err != nil {
				t.Fatal(err)
			}
			if got.Translated != c.want || (got.Floor != nil) != c.floored || got.Unmatched != c.unmatched {
				t.Fatalf("wus %d floor %d: %s (floor %v, unmatched %d); want scus %d, floored %v, unmatched %d",
					c.offset, c.floor, got, got.Floor, got.Unmatched, c.want, c.floored, c.unmatched)
			}
			// (At the floor itself the message is past what the source read: no claim.)
			if got.Translated != c.floor && got.TargetOnly == c.floored {
				t.Fatalf("target only %v: %s", got.TargetOnly, got)
			}
		})
	}
}

// TestFloorNoSkip checks the no-skip rule from the floor: every target message from the
// floor to the translation was consumed on the source, for every offset and floor.
func TestFloorNoSkip(t *testing.T) {
	wus, scus := failback()
	ctx := context.Background()
	for _, floor := range []int64{300, 650, 1100, 1299, 1300} {
		for o := int64(0); o <= 1000; o += 37 {
			m, err := BuildFrom(ctx, "wus", "scus", wus, scus, "t", 0, o, floor, 0)
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.Translate(o)
			if err != nil {
				t.Fatal(err)
			}
			if got.Translated < floor {
				t.Fatalf("floor %d, wus %d: landed below the floor: %s", floor, o, got)
			}
			for off := floor; off < got.Translated; off++ {
				if w := off - 300; w >= o {
					t.Fatalf("floor %d, wus %d → scus %d skips scus %d (wus %d, not consumed)", floor, o, got.Translated, off, w)
				}
			}
			if want := max(o+300, floor); got.Translated != want {
				t.Fatalf("floor %d, wus %d → scus %d, want %d", floor, o, got.Translated, want)
			}
		}
	}
}

func TestAlignerFloorOnlyWhenBelow(t *testing.T) {
	wus, scus := failback()
	a := &Aligner{Sources: map[string]Source{"wus": wus, "scus": scus}}
	plain := Request{From: "wus", To: "scus", Topic: "t", Offset: 900}
	floored := plain
	floored.Floor = 1100
	// A floor below the plain answer changes nothing (aligned part of the copy).
	low := Request{From: "scus", To: "wus", Topic: "t", Offset: 1200, Floor: 500}
	res := a.TranslateAll(context.Background(), []Request{plain, floored, low})
	if r := res[plain]; r.Err != nil || r.Translated != 0 || r.Floor != nil {
		t.Fatalf("plain: %+v", r)
	}
	if r := res[floored]; r.Err != nil || r.Translated != 1200 || r.Floor == nil {
		t.Fatalf("floored: %+v", r)
	}
	if r := res[low]; r.Err != nil || r.Translated != 900 || r.Floor != nil {
		t.Fatalf("floor below the answer: %+v", r)
	}
}

// TestTrackerFloor follows a group after its failback: the first translation builds from
// its own commit, later ones read only what replicated since.
func TestTrackerFloor(t *testing.T) {
	wus, scus := failback()
	tr := &Tracker{From: "wus", To: "scus", Topic: "t", Src: wus, Dst: scus, Floor: 1100}
	ctx := context.Background()
	got, err := tr.Translate(ctx, 900)
	if err != nil || got.Translated != 1200 || got.Floor == nil {
		t.Fatalf("first: %+v %v", got, err)
	}
	replicate(wus, scus, seq(5000, 5100)...)
	reads := wus.reads.Load() + scus.reads.Load()
	got, err = tr.Translate(ctx, 1050)
	if err != nil || got.Translated != 1350 || got.Floor == nil || *got.Floor != 1100 {
		t.Fatalf("after replication: %+v %v", got, err)
	}
	if s := tr.Stats(); s.Builds != 1 {
		t.Fatalf("%d builds, want 1 (lockstep after the first)", s.Builds)
	}
	// What each copy holds past the first answer (wus 900 to its end 1100), read ahead at
	// most once: the next translation inside it reads nothing.
	if n := wus.reads.Load() + scus.reads.Load() - reads; n > 2*201+2 {
		t.Fatalf("read %d messages for 200 new positions on each copy", n)
	}
	reads = wus.reads.Load() + scus.reads.Load()
	if got, err = tr.Translate(ctx, 1090); err != nil || got.Translated != 1390 {
		t.Fatalf("read ahead: %+v %v", got, err)
	}
	if n := wus.reads.Load() + scus.reads.Load() - reads; n != 0 {
		t.Fatalf("read %d messages for a position read ahead, want 0", n)
	}
}

// TestAlignerFloorShared: groups that moved together share their floor and one Map.
func TestAlignerFloorShared(t *testing.T) {
	wus, scus := failback()
	a := &Aligner{Sources: map[string]Source{"wus": wus, "scus": scus}}
	var reqs []Request
	for _, o := range []int64{900, 950, 990} {
		reqs = append(reqs, Request{From: "wus", To: "scus", Topic: "t", Offset: o, Floor: 1100})
	}
	res := a.TranslateAll(context.Background(), reqs)
	for _, r := range reqs {
		if got := res[r]; got.Err != nil || got.Translated != r.Offset+300 {
			t.Fatalf("wus %d: %+v, want scus %d", r.Offset, got, r.Offset+300)
		}
	}
	// The plain Map and one floored Map: each copy read at most twice.
	if wus.reads.Load() > 2*1000 || scus.reads.Load() > 2*1300 {
		t.Fatalf("read wus %d, scus %d messages: a Map per request?", wus.reads.Load(), scus.reads.Load())
	}
}

// TestBuildSinceFollowsAReset: the group stood at 1100 on scus (its own commit, wus 800),
// then was moved back on wus (a reset): the messages only scus holds, below 1100, count as
// consumed, and the translation lands exactly on the reset point, below the floor.
func TestBuildSinceFollowsAReset(t *testing.T) {
	wus, scus := failback()
	ctx := context.Background()
	for _, c := range []struct{ offset, want int64 }{{700, 1000}, {400, 700}, {0, 300}, {800, 1100}, {900, 1200}} {
		m, err := BuildSince(ctx, "wus", "scus", wus, scus, "t", 0, c.offset, 1100, 0)
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.Translate(c.offset)
		if err != nil {
			t.Fatal(err)
		}
		if got.Translated != c.want || got.Floor != nil || got.TargetOnly {
			t.Errorf("wus %d since 1100: %+v, want %d", c.offset, got, c.want)
		}
	}
	// A Tracker since the floor answers the same, then follows the group forward.
	tr := &Tracker{From: "wus", To: "scus", Topic: "t", Src: wus, Dst: scus, Floor: 1100, Since: true}
	for _, c := range []struct{ offset, want int64 }{{400, 700}, {500, 800}, {950, 1250}} {
		got, err := tr.Translate(ctx, c.offset)
		if err != nil || got.Translated != c.want {
			t.Errorf("tracker since 1100: wus %d -> %+v %v, want %d", c.offset, got, err, c.want)
		}
	}
}

// TestAlignerSince: a Since request follows a reset below the floor (BuildSince), a plain
// floored one holds at the floor, and both agree above it.
func TestAlignerSince(t *testing.T) {
	wus, scus := failback()
	a := &Aligner{Sources: map[string]Source{"wus": wus, "scus": scus}}
	held := Request{From: "wus", To: "scus", Topic: "t", Offset: 400, Floor: 1100}
	since := held
	since.Since = true
	above := Request{From: "wus", To: "scus", Topic: "t", Offset: 900, Floor: 1100, Since: true}
	res := a.TranslateAll(context.Background(), []Request{held, since, above})
	if r := res[held]; r.Err != nil || r.Translated != 1100 {
		t.Fatalf("held at the floor: %+v", r)
	}
	if r := res[since]; r.Err != nil || r.Translated != 700 || r.Floor != nil {
		t.Fatalf("since the floor: %+v, want 700", r)
	}
	if r := res[above]; r.Err != nil || r.Translated != 1200 {
		t.Fatalf("since, above the floor: %+v, want 1200", r)
	}
}
