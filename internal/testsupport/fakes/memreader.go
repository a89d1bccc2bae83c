package fakes

import (
	"context"
	"fmt"
	"sync"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// MemReader is an in-memory loader.OffsetTopicReader.
type MemReader struct {
	NumPartitions int32
	mu            sync.Mutex
	msgs          map[int32][]loader.Message
	// Err, when set, is returned by every call (an unreachable cluster).
	Err error
	// Reads counts ReadPartition calls per partition.
	Reads map[int32]int
}

// NewMemReader returns an empty reader of n partitions.
func NewMemReader(n int32) *MemReader {
	return &MemReader{NumPartitions: n, msgs: map[int32][]loader.Message{}, Reads: map[int32]int{}}
}

// Commit appends c to the partition of its group, as KoP would.
func (r *MemReader) Commit(cs ...kop.OffsetCommit) *MemReader {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		p := loader.PartitionFor(c.Group, r.NumPartitions)
		r.msgs[p] = append(r.msgs[p], kop.Message(p, len(r.msgs[p]), c))
	}
	return r
}

// Replicated adds commits as the replicator writes them: marked as copied from cluster from.
func (r *MemReader) Replicated(from string, cs ...kop.OffsetCommit) *MemReader {
	n, _ := r.Partitions(context.Background())
	for _, c := range cs {
		p := loader.PartitionFor(c.Group, n)
		m := kop.Message(p, 0, c)
		m.MessageID = ""
		m.ReplicatedFrom = from
		r.Append(p, m)
	}
	return r
}

// Kept adds a kept translation as watch writes it (kop.Writer.Keep): cs of one group, their
// source offsets on cluster from in mark.Sources.
func (r *MemReader) Kept(mark loader.KeptMark, cs ...kop.OffsetCommit) *MemReader {
	key, v, err := kop.EncodeKeep(cs)
	if err != nil {
		panic(err) // a test's own commits
	}
	n, _ := r.Partitions(context.Background())
	return r.Append(loader.PartitionFor(cs[0].Group, n), loader.Message{Key: key, Value: v, Kept: &mark})
}

// Append adds a raw message to a partition (a message id is filled in when empty).
func (r *MemReader) Append(partition int32, m loader.Message) *MemReader {
	r.mu.Lock()
	defer r.mu.Unlock()
	m.Partition = partition
	if m.MessageID == "" {
		m.MessageID = fmt.Sprintf("1:%d:%d:-1", len(r.msgs[partition]), partition)
	}
	r.msgs[partition] = append(r.msgs[partition], m)
	return r
}

// Partitions implements loader.OffsetTopicReader.
func (r *MemReader) Partitions(context.Context) (int32, error) {
	if r.Err != nil {
		return 0, r.Err
	}
	return r.NumPartitions, nil
}

// ReadPartition implements loader.OffsetTopicReader.
func (r *MemReader) ReadPartition(ctx context.Context, partition int32, fn func(loader.Message) error) error {
	if r.Err != nil {
		return r.Err
	}
	r.mu.Lock()
	r.Reads[partition]++
	msgs := append([]loader.Message(nil), r.msgs[partition]...)
	r.mu.Unlock()
	for _, m := range msgs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(m); err != nil {
			return err
		}
	}
	return nil
}
