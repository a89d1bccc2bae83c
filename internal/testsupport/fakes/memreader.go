package fakes

import (
	"context"
	"fmt"
	"sync"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// MemReader is an in-memory loader.TailReader.
type MemReader struct {
	NumPartitions int32
	mu            sync.Mutex
	msgs          map[int32][]loader.Message
	// seqs are the positions of msgs (a compaction keeps the positions of what it keeps).
	seqs     map[int32][]int
	next     map[int32]int
	horizons map[int32]int
	// Err, when set, is returned by every call (an unreachable cluster).
	Err error
	// HorizonErr, when set, is returned by Horizon (internal stats not readable).
	HorizonErr error
	// Reads counts the reads of a whole partition (ReadPartition, ReadPartitionAfter from
	// the start), Tails the reads after a position, Delivered the messages passed to fn.
	Reads     map[int32]int
	Tails     map[int32]int
	Delivered int
}

var _ loader.TailReader = (*MemReader)(nil)

// NewMemReader returns an empty reader of n partitions.
func NewMemReader(n int32) *MemReader {
	return &MemReader{NumPartitions: n, msgs: map[int32][]loader.Message{}, seqs: map[int32][]int{}, next: map[int32]int{},
		horizons: map[int32]int{}, Reads: map[int32]int{}, Tails: map[int32]int{}}
}

// Commit appends c to the partition of its group, as KoP would.
func (r *MemReader) Commit(cs ...kop.OffsetCommit) *MemReader {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		p := loader.PartitionFor(c.Group, r.NumPartitions)
		r.add(p, kop.Message(p, r.next[p], c))
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
		m.MessageID = fmt.Sprintf("1:%d:%d:-1", r.next[partition], partition)
	}
	r.add(partition, m)
	return r
}

func (r *MemReader) add(p int32, m loader.Message) {
	r.msgs[p] = append(r.msgs[p], m)
	r.seqs[p] = append(r.seqs[p], r.next[p])
	r.next[p]++
}

// Compact compacts partition p as Pulsar's compaction does: only the newest message of each
// Pulsar key is kept, and the partition's Horizon moves.
func (r *MemReader) Compact(p int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	newest := map[string]int{}
	for i, m := range r.msgs[p] {
		newest[string(m.Key)] = i
	}
	var msgs []loader.Message
	var seqs []int
	for i, m := range r.msgs[p] {
		if newest[string(m.Key)] == i {
			msgs, seqs = append(msgs, m), append(seqs, r.seqs[p][i])
		}
	}
	r.msgs[p], r.seqs[p] = msgs, seqs
	r.horizons[p]++
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
	_, err := r.ReadPartitionAfter(ctx, partition, "", fn)
	return err
}

// ReadPartitionAfter implements loader.TailReader: positions are "mem:<n>", n counting the
// messages appended to the partition.
func (r *MemReader) ReadPartitionAfter(ctx context.Context, partition int32, after string, fn func(loader.Message) error) (string, error) {
	if r.Err != nil {
		return "", r.Err
	}
	from := -1
	if after != "" {
		if _, err := fmt.Sscanf(after, "mem:%d", &from); err != nil {
			return "", fmt.Errorf("memreader: position %q: %w", after, err)
		}
	}
	r.mu.Lock()
	if after == "" {
		r.Reads[partition]++
	} else {
		r.Tails[partition]++
	}
	var msgs []loader.Message
	for i, m := range r.msgs[partition] {
		if r.seqs[partition][i] > from {
			msgs = append(msgs, m)
		}
	}
	end := after
	if n := r.next[partition]; n > 0 {
		end = fmt.Sprintf("mem:%d", n-1)
	}
	r.Delivered += len(msgs)
	r.mu.Unlock()
	for _, m := range msgs {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		if err := fn(m); err != nil {
			return "", err
		}
	}
	return end, nil
}

// Horizon implements loader.TailReader: it moves with each Compact.
func (r *MemReader) Horizon(_ context.Context, partition int32) (string, error) {
	if r.HorizonErr != nil {
		return "", r.HorizonErr
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprintf("compacted %d", r.horizons[partition]), nil
}
