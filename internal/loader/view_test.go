package loader

import (
	"slices"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/offsetlog/offsetlogtest"
)

// TestViewIsResultWithoutACopy: a View between feeds reads as the Result of the same
// messages (offsets, groups, lookups, the accessors watch uses), the Replayer goes on after
// it (a new key, a change, a tombstone), and a Result or Finish after a View is of the state
// fed since, not of the View's index.
func TestViewIsResultWithoutACopy(t *testing.T) {
	r := NewReplayer(7, OrderingKoP)
	feed := func(i int, recs ...offsetlogtest.KV) {
		_ = r.ApplyMessage(Message{Partition: 7, MessageID: "1:" + itoa(i) + ":7:-1", Key: []byte("k"), Value: offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, recs...)})
	}
	same := func(step string, v *PersistedOffsets) {
		t.Helper()
		want := r.Result()
		if got, w := mustJSON(t, v.Offsets()), mustJSON(t, want.Offsets()); got != w {
			t.Fatalf("%s: view %s, result %s", step, got, w)
		}
		if got, w := slices.Collect(v.GroupNames()), slices.Collect(want.GroupNames()); !slices.Equal(got, w) {
			t.Fatalf("%s: groups %v, result %v", step, got, w)
		}
		for _, g := range []string{"G", "H", "K"} {
			got, w := append([]CommittedOffset{}, slices.Collect(v.EachGroupOffset(g))...), want.GroupOffsets(g)
			if mustJSON(t, got) != mustJSON(t, w) || v.HasGroup(g) != want.HasGroup(g) {
				t.Fatalf("%s: group %s: %s (held %v), result %s (held %v)", step, g, mustJSON(t, got), v.HasGroup(g), mustJSON(t, w), want.HasGroup(g))
			}
		}
	}
	feed(0, offsetlogtest.OffsetRec("G", 0, 100), offsetlogtest.OffsetRec("G", 1, 5), offsetlogtest.OffsetRec("H", 0, 1))
	same("first", r.View())
	if !r.View().HasGroup("G") {
		t.Fatal("the view does not hold G")
	}
	feed(1, offsetlogtest.OffsetRec("G", 0, 200), offsetlogtest.OffsetRec("K", 3, 9))
	feed(2, offsetlogtest.KV{offsetlogtest.OffsetKey(1, "H", t1, 0), nil})
	v := r.View()
	same("after more", v)
	if got := mustOffset(t, v, "G", 0); got != 200 {
		t.Errorf("G/0 = %d after the change", got)
	}
	if _, ok := v.Lookup("H", t1, 0); ok || v.HasGroup("H") {
		t.Error("H survived its tombstone in the view")
	}
	feed(3, offsetlogtest.OffsetRec("G", 2, 7))
	if got := mustOffset(t, r.Result(), "G", 2); got != 7 {
		t.Errorf("Result after a View: G/2 = %d", got)
	}
	feed(4, offsetlogtest.OffsetRec("G", 3, 8))
	_ = r.View().Len() // an index of this state, before the next feed
	feed(5, offsetlogtest.OffsetRec("G", 4, 9))
	if p := r.Finish(); p.Len() != 6 || mustOffset(t, p, "G", 4) != 9 {
		t.Errorf("Finish after a View: %s", mustJSON(t, p.Offsets()))
	}
}
