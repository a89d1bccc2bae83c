package align

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
)

// mem is a copy of one topic partition: message identities in offset order from start.
type mem struct {
	start int64
	ids   []uint64
	reads atomic.Int64 // Aligner scans copies from several goroutines
}

func (m *mem) Scan(_ context.Context, _ string, _ int32, fn func(Record) bool) (Bounds, error) {
	b := Bounds{Start: m.start, End: m.start + int64(len(m.ids))}
	for i, id := range m.ids {
		m.reads.Add(1)
		if !fn(Record{Offset: m.start + int64(i), ID: id}) {
			break
		}
	}
	return b, nil
}

func seq(from, to uint64) []uint64 {
	var out []uint64
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func cat(parts ...[]uint64) []uint64 {
	var out []uint64
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func translate(t *testing.T, src, dst *mem, o int64) Translation {
	t.Helper()
	return translateBetween(t, "scus", "wus", src, dst, o)
}

// translateBetween builds the map of t/0 from cluster from to cluster to up to o and
// translates o; the test stops on an error.
func translateBetween(t *testing.T, from, to string, src, dst *mem, o int64) Translation {
	t.Helper()
	m, err := Build(context.Background(), from, to, src, dst, "t", 0, o, 0)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := m.Translate(o)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// noSkip checks the rule on the whole copies: every target message before Translated was
// consumed on the source (is among its first o messages), and Translated is the largest such
// offset (the message at Translated was not consumed), unless it is the log end.
func noSkip(t *testing.T, src, dst *mem, o int64, tr Translation) {
	t.Helper()
	consumed := map[uint64]int{}
	for i := int64(0); i < o-src.start && i < int64(len(src.ids)); i++ {
		consumed[src.ids[i]]++
	}
	// Past the log end there is nothing to skip (positions of messages not yet written).
	for i := dst.start; i < min(tr.Translated, dst.start+int64(len(dst.ids))); i++ {
		id := dst.ids[i-dst.start]
		if consumed[id] == 0 {
			t.Fatalf("translated %d skips target offset %d (id %d), not consumed on the source", tr.Translated, i, id)
		}
		consumed[id]--
	}
	if end := dst.start + int64(len(dst.ids)); tr.Translated < end && consumed[dst.ids[tr.Translated-dst.start]] > 0 {
		t.Fatalf("translated %d re-reads more than needed: target offset %d was consumed", tr.Translated, tr.Translated)
	}
}

func TestTranslate(t *testing.T) {
	cases := []struct {
		name     string
		src, dst []uint64
		o        int64
		want     int64
		next     int64 // -1: none
		only     bool
		unmatch  int64
	}{
		{name: "aligned", src: seq(0, 100), dst: seq(0, 100), o: 60, want: 60, next: 60},
		{name: "aligned, all read", src: seq(0, 100), dst: seq(0, 100), o: 100, want: 100, next: -1},
		// Replication enabled after 10 messages existed on the source.
		{name: "older messages on the source only", src: seq(0, 100), dst: seq(10, 100), o: 60, want: 50, next: 60, unmatch: 10},
		// 1 message published on the target with replication off, before what the group read.
		{name: "a message on the target only", src: seq(0, 100), dst: cat(seq(0, 40), []uint64{1000}, seq(40, 100)), o: 60, want: 40, next: -1, only: true, unmatch: 20},
		// ...after what the group read: the numbers shift only past it.
		{name: "a target-only message after the committed offset", src: seq(0, 100), dst: cat(seq(0, 70), []uint64{1000}, seq(70, 100)), o: 60, want: 60, next: 60},
		// Producers on both sides: the target appended 5 and 6 in the other order.
		{name: "interleaved", src: seq(0, 10), dst: []uint64{0, 1, 2, 3, 4, 6, 5, 7, 8, 9}, o: 6, want: 5, next: 6, unmatch: 1},
		{name: "the source ran behind", src: seq(0, 100), dst: cat([]uint64{500, 501}, seq(0, 100)), o: 30, want: 0, next: -1, only: true, unmatch: 30},
		{name: "recreated on the target", src: seq(0, 100), dst: seq(1000, 1050), o: 30, want: 0, next: -1, only: true, unmatch: 30},
		{name: "committed past the log end of empty copies", src: nil, dst: nil, o: 2, want: 2, next: -1},
		{name: "committed past the log end, shifted", src: seq(0, 100), dst: seq(10, 100), o: 103, want: 93, next: -1, unmatch: 10},
		{name: "the same message twice", src: []uint64{7, 7, 7, 8}, dst: []uint64{7, 7, 7, 8}, o: 2, want: 2, next: 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src, dst := &mem{ids: c.src}, &mem{ids: c.dst}
			tr := translate(t, src, dst, c.o)
			if tr.Translated != c.want || tr.TargetOnly != c.only || tr.Unmatched != c.unmatch {
				t.Fatalf("got %+v (%s), want translated %d, target-only %v, unmatched %d", tr, tr, c.want, c.only, c.unmatch)
			}
			switch {
			case c.next < 0 && tr.Next != nil, c.next >= 0 && (tr.Next == nil || *tr.Next != c.next):
				t.Fatalf("next: %v, want %d", tr.Next, c.next)
			}
			noSkip(t, src, dst, c.o, tr)
			if tr.Aligned() != (c.want == c.o) {
				t.Fatalf("Aligned() = %v", tr.Aligned())
			}
		})
	}
}

// The scan of the target stops at the first message not consumed at the highest offset:
// aligned copies are read up to the committed offset, not to their end.
func TestBuildReadsOnlyWhatItNeeds(t *testing.T) {
	src, dst := &mem{ids: seq(0, 10000)}, &mem{ids: seq(0, 10000)}
	translate(t, src, dst, 100)
	if src.reads.Load() > 102 || dst.reads.Load() > 101 {
		t.Fatalf("read %d source and %d target messages for offset 100", src.reads.Load(), dst.reads.Load())
	}
}

func TestBuildBudget(t *testing.T) {
	_, err := Build(context.Background(), "scus", "wus", &mem{ids: seq(0, 100)}, &mem{ids: seq(0, 100)}, "t", 0, 90, 50)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "cluster scus") {
		t.Fatalf("err = %v", err)
	}
}

func TestAlignerOneMapPerTopicPartition(t *testing.T) {
	src, dst := &mem{ids: seq(0, 100)}, &mem{ids: seq(10, 100)}
	a := &Aligner{Sources: map[string]Source{"scus": src, "wus": dst}}
	var reqs []Request
	for o := int64(20); o <= 80; o += 10 {
		reqs = append(reqs, Request{From: "scus", To: "wus", Topic: "t", Offset: o})
	}
	reqs = append(reqs, Request{From: "scus", To: "eus", Topic: "t", Offset: 5})
	res := a.TranslateAll(context.Background(), reqs)
	for _, r := range reqs[:len(reqs)-1] {
		if got := res[r]; got.Err != nil || got.Translated != r.Offset-10 {
			t.Fatalf("%+v: %+v", r, got)
		}
	}
	if src.reads.Load() > 82 {
		t.Fatalf("source read %d messages: one map for all offsets should read 81", src.reads.Load())
	}
	if e := res[reqs[len(reqs)-1]].Err; e == nil || !strings.Contains(e.Error(), "cluster eus") {
		t.Fatalf("missing source: %v", e)
	}
}

// Random histories: the target copy is the source's with messages dropped (never
// replicated), inserted (target-only) and neighbours swapped (producers on both sides).
// Every translation keeps the no-skip rule and re-reads no more than it must.
func TestTranslateNeverSkips(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 500 {
		n := 1 + rng.IntN(60)
		src := seq(0, uint64(n))
		var dst []uint64
		for _, id := range src {
			switch rng.IntN(10) {
			case 0: // not replicated
			case 1:
				dst = append(dst, 1000+uint64(rng.IntN(50)), id)
			default:
				dst = append(dst, id)
			}
		}
		for i := 0; i+1 < len(dst); i++ {
			if rng.IntN(12) == 0 {
				dst[i], dst[i+1] = dst[i+1], dst[i]
			}
		}
		s, d := &mem{ids: src}, &mem{ids: dst, start: int64(rng.IntN(3))}
		s.start = d.start
		for o := s.start; o <= s.start+int64(n); o++ {
			tr := translateBetween(t, "a", "b", s, d, o)
			t.Run("", func(t *testing.T) {
				defer func() {
					if t.Failed() {
						t.Logf("round %d: src %v dst %v (start %d) o %d: %s", round, src, dst, d.start, o, tr)
					}
				}()
				noSkip(t, s, d, o, tr)
			})
		}
	}
}
