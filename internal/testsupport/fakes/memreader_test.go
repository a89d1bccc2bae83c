package fakes

import (
	"context"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
)

func TestMemReaderReplays(t *testing.T) {
	c := kop.OffsetCommit{Group: "g", Topic: "persistent://public/default/topic-1", Partition: 0, Offset: 10900}
	mr := NewMemReader(8).Commit(c, kop.OffsetCommit{Group: "g", Topic: c.Topic, Partition: 1, Offset: 5, Tombstone: true})
	p := loader.PartitionFor("g", 8)
	po, err := loader.ReplayPartition(context.Background(), mr, p, loader.OrderingKoP)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := po.Lookup("g", c.Topic, 0); !ok || got.Offset != 10900 {
		t.Errorf("lookup %+v %v", got, ok)
	}
	if po.Counts.OffsetTombstones != 1 || po.Counts.Undecodable != 0 || mr.Reads[p] != 1 {
		t.Errorf("counts %+v, reads %v", po.Counts, mr.Reads)
	}
}
