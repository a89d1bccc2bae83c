package loader

import (
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/offsetlog/offsetlogtest"
)

func TestKeptMarkRoundTrip(t *testing.T) {
	m := KeptMark{From: "scus", Sources: []int64{6000, 17}, At: time.UnixMilli(1_700_000_000_123)}
	got, err := ParseKeptMark(m.Properties())
	if err != nil {
		t.Fatal(err)
	}
	if got.From != m.From || len(got.Sources) != 2 || got.Sources[0] != 6000 || got.Sources[1] != 17 || !got.At.Equal(m.At) {
		t.Fatalf("round trip: %+v, want %+v", got, m)
	}
	if got, err := ParseKeptMark(map[string]string{"other": "x"}); got != nil || err != nil {
		t.Fatalf("no mark: %v %v", got, err)
	}
	for _, bad := range []map[string]string{
		{PropKeptFrom: "scus", PropKeptAt: "soon", PropKeptSources: "1"},
		{PropKeptFrom: "scus", PropKeptAt: "1", PropKeptSources: "1,x"},
		{PropKeptFrom: "", PropKeptAt: "1", PropKeptSources: "1"},
	} {
		if _, err := ParseKeptMark(bad); err == nil {
			t.Fatalf("%v: no error", bad)
		}
	}
}

// TestKeptTranslation replays what watch leaves on a standby: a replicated commit, its kept
// translation, then a newer replicated commit not yet translated.
func TestKeptTranslation(t *testing.T) {
	r := NewReplayer(7, OrderingKoP)
	msg := func(i int, offset int64, from string, kept *KeptMark) Message {
		return Message{Partition: 7, MessageID: "1:" + itoa(i) + ":7:-1", Key: []byte("k"),
			Value: offsetlogtest.CommitMsg(t, "G", t1, 0, offset), ReplicatedFrom: from, Kept: kept}
	}
	at := time.UnixMilli(1_700_000_000_000)
	_ = r.ApplyMessage(msg(0, 6000, "scus", nil))
	_ = r.ApplyMessage(msg(1, 5700, "", &KeptMark{From: "scus", Sources: []int64{6000}, At: at}))
	c, _ := r.Result().Lookup("G", t1, 0)
	if c.Offset != 5700 || c.Origin != "" || c.Kept == nil || !c.Kept.Current || c.Kept.Source != 6000 || c.Kept.From != "scus" || c.Kept.Offset != 5700 || !c.Kept.At.Time().Equal(at) {
		t.Fatalf("after the kept translation: %+v kept %+v", c, c.Kept)
	}
	_ = r.ApplyMessage(msg(2, 6100, "scus", nil))
	c, _ = r.Result().Lookup("G", t1, 0)
	if c.Offset != 6100 || c.Origin != "scus" || c.Kept == nil || c.Kept.Current || c.Kept.Offset != 5700 {
		t.Fatalf("after a newer replicated commit: %+v kept %+v", c, c.Kept)
	}
	// An ordinary message has no Kept at all.
	r2 := NewReplayer(7, OrderingKoP)
	_ = r2.ApplyMessage(msg(0, 10, "", nil))
	if c, _ := r2.Result().Lookup("G", t1, 0); c.Kept != nil {
		t.Fatalf("ordinary commit has a kept translation: %+v", c.Kept)
	}
}

// TestOwnCommit replays a failback on the old primary: the group's own commit there, then
// the standby's commits replicated back and their kept translations. The own commit stays
// the floor until the group commits there again, or its offset is deleted.
func TestOwnCommit(t *testing.T) {
	r := NewReplayer(7, OrderingKoP)
	i := 0
	apply := func(offset int64, from string, kept *KeptMark) CommittedOffset {
		t.Helper()
		i++
		m := Message{Partition: 7, MessageID: "1:" + itoa(i) + ":7:-1", Key: []byte("k"),
			Value: offsetlogtest.CommitMsg(t, "G", t1, 0, offset), ReplicatedFrom: from, Kept: kept}
		if err := r.ApplyMessage(m); err != nil {
			t.Fatal(err)
		}
		c, _ := r.Result().Lookup("G", t1, 0)
		return c
	}
	own := func(c CommittedOffset) string {
		if c.Own == nil {
			return "none"
		}
		return itoa(int(*c.Own))
	}
	at := time.UnixMilli(1_700_000_000_000)
	steps := []struct {
		offset int64
		from   string
		kept   *KeptMark
		own    string
		floor  int64
	}{
		{1100, "", nil, "none", 1100},   // the group on scus
		{900, "wus", nil, "1100", 1100}, // failed over, commits on wus
		{1200, "", &KeptMark{From: "wus", Sources: []int64{900}, At: at}, "1100", 1100}, // watch keeps it
		{1000, "wus", nil, "1100", 1100},
		{1400, "", nil, "none", 1400}, // failed back: the group commits on scus again
		{1100, "wus", nil, "1400", 1400},
	}
	for n, s := range steps {
		c := apply(s.offset, s.from, s.kept)
		if own(c) != s.own || c.Floor() != s.floor {
			t.Fatalf("step %d (%d from %q): own %s floor %d, want own %s floor %d", n, s.offset, s.from, own(c), c.Floor(), s.own, s.floor)
		}
	}
	// A deleted offset forgets its own commit: a new key has none.
	i++
	tomb := Message{Partition: 7, MessageID: "1:" + itoa(i) + ":7:-1", Key: []byte("k"),
		Value: offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.KV{offsetlogtest.OffsetKey(1, "G", t1, 0), nil})}
	if err := r.ApplyMessage(tomb); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Result().Lookup("G", t1, 0); ok {
		t.Fatal("the tombstone did not delete the offset")
	}
	if c := apply(50, "wus", nil); c.Own != nil || c.Floor() != 0 {
		t.Fatalf("after a tombstone: own %s floor %d", own(c), c.Floor())
	}
}
