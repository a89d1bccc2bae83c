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
