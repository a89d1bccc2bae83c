package align

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
)

// copies draws a pair of copies of one topic partition: shared messages, optionally messages
// on one side only (before, inside or after the shared ones), the source's or the target's
// head trimmed (expired), or nothing at all.
func copies(r *rand.Rand) (src, dst *mem, desc string) {
	shared := seq(0, uint64(r.IntN(60)))
	srcOnly, dstOnly := seq(1000, 1000+uint64(r.IntN(20))), seq(2000, 2000+uint64(r.IntN(20)))
	var s, d []uint64
	switch k := r.IntN(6); k {
	case 0: // aligned
		s, d, desc = shared, shared, "aligned"
	case 1: // shifted: the source wrote some alone first
		s, d, desc = cat(srcOnly, shared), shared, "source-only head"
	case 2: // the target wrote some alone first
		s, d, desc = shared, cat(dstOnly, shared), "target-only head"
	case 3: // one side's messages inside the shared ones
		cut := len(shared) / 2
		s, d, desc = shared, cat(shared[:cut], dstOnly, shared[cut:]), "target-only middle"
	case 4: // empty on both sides
		desc = "empty"
	default: // the source holds more than replicated yet
		cut := len(shared) / 2
		s, d, desc = shared, shared[:cut], "target behind"
	}
	src, dst = &mem{ids: s}, &mem{ids: d}
	if len(s) > 0 && r.IntN(4) == 0 { // expired head on the source
		n := r.IntN(len(s))
		src = &mem{start: int64(n), ids: s[n:]}
		desc += ", source trimmed"
	}
	return src, dst, desc
}

// TestTrackerMatchesBuildRandom holds the incremental Tracker to a fresh Build on every answer, on
// random copies that grow as replication appends to both, and random sequences of commits
// (before the start, inside, at and past the log end, in any order and repeated): the Tracker
// never answers past the reference (a number past it skips messages the day they arrive), nor
// below it.
func TestTrackerMatchesBuildRandom(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(5000) {
		r := rand.New(rand.NewPCG(seed, 7))
		src, dst, desc := copies(r)
		tr := &Tracker{From: "scus", To: "wus", Topic: "t", Src: src, Dst: dst}
		var asked []int64
		next := uint64(5000)
		for range 8 {
			if r.IntN(3) == 0 { // messages replicate: both copies grow
				n := uint64(r.IntN(40))
				replicate(src, dst, seq(next, next+n)...)
				next += n
			}
			end := src.start + int64(len(src.ids))
			var o int64
			switch r.IntN(4) {
			case 0:
				o = r.Int64N(end + 1) // inside
			case 1:
				o = end + r.Int64N(3000) // at or past the end
			case 2:
				if len(asked) > 0 {
					o = asked[r.IntN(len(asked))] // repeated
					break
				}
				fallthrough
			default:
				o = r.Int64N(end + 50)
			}
			asked = append(asked, o)
			got, err := tr.Translate(ctx, o)
			m, err2 := Build(ctx, "scus", "wus", src, dst, "t", 0, o, 0)
			if err != nil || err2 != nil {
				t.Fatalf("seed %d (%s): %v / %v", seed, desc, err, err2)
			}
			want, err := m.Translate(o)
			if err != nil {
				t.Fatal(err)
			}
			if got.Translated != want.Translated {
				t.Fatalf("seed %d (%s), commits %v: the Tracker translates %d to %d, a fresh Build to %d (%s)", seed, desc, asked, o, got.Translated, want.Translated,
					fmt.Sprintf("source %d..%d, target %d", src.start, src.start+int64(len(src.ids)), len(dst.ids)))
			}
		}
	}
}
