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

// TestKeptOverANewerCommit replays issue 51's race on a standby: the keeper decided on
// scus's 500, scus's 10900 replicated in before its write landed. KoP loads the last entry,
// the kept 500: Newer names the 10900 it hid, until a kept translation of it (or any commit)
// lands. Commit times decide what is newer, whatever the order of the entries.
func TestKeptOverANewerCommit(t *testing.T) {
	r := NewReplayer(7, OrderingKoP)
	i := 0
	apply := func(offset, at int64, from string, kept *KeptMark) CommittedOffset {
		t.Helper()
		i++
		v := offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.KV{
			offsetlogtest.OffsetKey(1, "G", t1, 0), offsetlogtest.OffsetValue(1, offset, -1, "", at, -1)})
		if err := r.ApplyMessage(Message{Partition: 7, MessageID: "1:" + itoa(i) + ":7:-1", Key: []byte("k"), Value: v, ReplicatedFrom: from, Kept: kept}); err != nil {
			t.Fatal(err)
		}
		c, _ := r.Result().Lookup("G", t1, 0)
		return c
	}
	keptOf := func(src int64) *KeptMark {
		return &KeptMark{From: "scus", Sources: []int64{src}, At: time.UnixMilli(9000)}
	}
	newer := func(c CommittedOffset) string {
		if c.Newer == nil {
			return "none"
		}
		return c.Newer.Origin + ":" + itoa(int(c.Newer.Offset)) + "@" + itoa(int(c.Newer.CommitTimestamp))
	}
	steps := []struct {
		what       string
		offset, at int64
		from       string
		kept       *KeptMark
		wantOffset int64
		wantNewer  string
	}{
		{"scus's 500 replicated", 500, 1000, "scus", nil, 500, "none"},
		{"scus's 10900 replicated", 10900, 2000, "scus", nil, 10900, "none"},
		{"the kept 500 lands after it", 500, 1000, "", keptOf(500), 500, "scus:10900@2000"},
		{"a second late kept 500", 500, 1000, "", keptOf(500), 500, "scus:10900@2000"},
		{"the kept 10900", 10900, 2000, "", keptOf(10900), 10900, "none"},
		{"the kept 10900 again", 10900, 2000, "", keptOf(10900), 10900, "none"},
		{"a late kept 500 over a kept 10900", 500, 1000, "", keptOf(500), 500, "scus:10900@2000"},
		{"scus's 11000 replicated", 11000, 3000, "scus", nil, 11000, "none"},
		{"the group's own 12000 on the standby", 12000, 4000, "", nil, 12000, "none"},
		{"a late kept 11000 over it", 11000, 3000, "", keptOf(11000), 11000, ":12000@4000"},
		{"the group's own 12100", 12100, 4100, "", nil, 12100, "none"},
	}
	for _, s := range steps {
		c := apply(s.offset, s.at, s.from, s.kept)
		if c.Offset != s.wantOffset || newer(c) != s.wantNewer {
			t.Fatalf("%s: loaded %d, newer %s; want %d, newer %s", s.what, c.Offset, newer(c), s.wantOffset, s.wantNewer)
		}
	}
}
