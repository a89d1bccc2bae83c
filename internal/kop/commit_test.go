package kop

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
)

func TestEncodeDecodes(t *testing.T) {
	ts := time.UnixMilli(1700000000123)
	c := OffsetCommit{Group: "g", Topic: "persistent://public/default/topic-1", Partition: 0, Offset: 10900, CommitTime: ts}
	k, v := Encode(c)
	recs, err := offsetlog.Decode(k, v)
	if err != nil || len(recs) != 1 {
		t.Fatalf("%v %v", recs, err)
	}
	r := recs[0]
	if r.Kind != offsetlog.KindOffsetCommit || r.Group != "g" || *r.Offset != 10900 || *r.KeyVersion != 1 || *r.ValueVersion != 1 ||
		r.CommitTimestamp.Time() != ts.UTC() {
		t.Errorf("%+v", r)
	}
	p := loader.PartitionFor("g", 8)
	rp := loader.NewReplayer(p, loader.OrderingKoP)
	for i, m := range []OffsetCommit{c, {Group: "g", Topic: c.Topic, Partition: 1, Offset: 5, Tombstone: true}} {
		if err := rp.ApplyMessage(Message(p, i, m)); err != nil {
			t.Fatal(err)
		}
	}
	po := rp.Result()
	if got, ok := po.Lookup("g", c.Topic, 0); !ok || got.Offset != 10900 {
		t.Errorf("lookup %+v %v", got, ok)
	}
	if po.Counts.OffsetTombstones != 1 || po.Counts.Undecodable != 0 {
		t.Errorf("%+v", po.Counts)
	}
}

// TestPulsarKeyIsKoPs compares with the key a KoP built from the v3.1.1.1 source wrote for
// group "G" (X-Pulsar-partition-key, with X-Pulsar-partition-key-b64-encoded: true).
func TestPulsarKeyIsKoPs(t *testing.T) {
	if got := base64.StdEncoding.EncodeToString(PulsarKey("G")); got != "AAEAAUcAAP////8=" {
		t.Fatalf("PulsarKey(G) = %s, want AAEAAUcAAP////8=", got)
	}
}
