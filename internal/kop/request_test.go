package kop

import (
	"bytes"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
)

func TestEncodeRequestOneIsEncodeBatch(t *testing.T) {
	ts := time.UnixMilli(1700000000123)
	c := OffsetCommit{Group: "g", Topic: "persistent://public/default/t", Partition: 3, Offset: 42}
	k, v, err := EncodeRequest([]OffsetCommit{c}, ts)
	if err != nil {
		t.Fatal(err)
	}
	c.CommitTime = ts
	_, want := Encode(c)
	if !bytes.Equal(v, want) || !bytes.Equal(k, PulsarKey("g")) {
		t.Fatalf("one-partition request differs from Encode:\n%x\n%x", v, want)
	}
}

func TestEncodeRequestDecodesAndReplays(t *testing.T) {
	ts := time.UnixMilli(1700000000123)
	var cs []OffsetCommit
	for p := int32(0); p < 5; p++ {
		cs = append(cs, OffsetCommit{Group: "g", Topic: "persistent://public/default/t", Partition: p, Offset: int64(100 + p)})
	}
	k, v, err := EncodeRequest(cs, ts)
	if err != nil {
		t.Fatal(err)
	}
	// Kafka's own framing: the batch parses and its CRC-32C covers attributes to the end.
	var b kmsg.RecordBatch
	if err := b.ReadFrom(v); err != nil {
		t.Fatal(err)
	}
	if b.NumRecords != 5 || b.LastOffsetDelta != 4 || uint32(b.CRC) != crc32.Checksum(v[21:], castagnoli) {
		t.Fatalf("batch header %+v", b)
	}
	recs, err := offsetlog.Decode(k, v)
	if err != nil || len(recs) != 5 {
		t.Fatalf("decode: %d records, %v", len(recs), err)
	}
	r := loader.NewReplayer(0, loader.OrderingKoP)
	if err := r.ApplyMessage(loader.Message{Partition: 0, MessageID: "1:0:0:-1", Key: k, Value: v}); err != nil {
		t.Fatal(err)
	}
	po := r.Result()
	for _, c := range cs {
		got, ok := po.Lookup("g", c.Topic, c.Partition)
		if !ok || got.Offset != c.Offset {
			t.Errorf("partition %d: %+v %v", c.Partition, got, ok)
		}
	}
	if po.Len() != 5 || r.Counts().Undecodable != 0 {
		t.Errorf("len %d counts %+v", po.Len(), r.Counts())
	}
}

func TestEncodeRequestRejects(t *testing.T) {
	ts := time.Now()
	if _, _, err := EncodeRequest(nil, ts); err == nil {
		t.Error("empty request accepted")
	}
	if _, _, err := EncodeRequest([]OffsetCommit{{Group: "a"}, {Group: "b"}}, ts); err == nil {
		t.Error("two groups accepted")
	}
	if _, _, err := EncodeRequest([]OffsetCommit{{Group: "a", Tombstone: true}}, ts); err == nil {
		t.Error("tombstone accepted")
	}
}
