package align

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var _ RangeSource = (*KafkaSource)(nil)

// KafkaSource reads a cluster's copies through its KoP listeners with a direct partition
// consumer (no group: nothing is committed).
type KafkaSource struct {
	// NewClient builds a client with the cluster's connection settings plus opts.
	NewClient func(opts ...kgo.Opt) (*kgo.Client, error)
	// IdleTimeout bounds the wait for the next fetch that brings a record (default 30s).
	IdleTimeout time.Duration

	mu sync.Mutex
	// admin lists log bounds; made on first use and kept for the source's (the process's)
	// life: a new client per read cost its connections on every read.
	admin *kgo.Client
}

// bounds returns the client that lists log bounds, made on first use and kept.
func (k *KafkaSource) bounds() (*kadm.Client, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.admin == nil {
		cl, err := k.NewClient()
		if err != nil {
			return nil, err
		}
		k.admin = cl
	}
	return kadm.NewClient(k.admin), nil
}

// Scan implements Source.
func (k *KafkaSource) Scan(ctx context.Context, topic string, partition int32, fn func(Record) bool) (Bounds, error) {
	return k.ScanFrom(ctx, topic, partition, 0, fn)
}

// ScanFrom implements RangeSource.
func (k *KafkaSource) ScanFrom(ctx context.Context, topic string, partition int32, from int64, fn func(Record) bool) (Bounds, error) {
	adm, err := k.bounds()
	if err != nil {
		return Bounds{}, err
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	var ends kadm.ListedOffsets
	if err == nil {
		ends, err = adm.ListEndOffsets(ctx, topic)
		if err == nil {
			err = ends.Error()
		}
	}
	if err != nil {
		return Bounds{}, fmt.Errorf("log bounds: %w", err)
	}
	s, ok1 := starts.Lookup(topic, partition)
	e, ok2 := ends.Lookup(topic, partition)
	if !ok1 || !ok2 {
		return Bounds{}, fmt.Errorf("partition %d of %s not found", partition, topic)
	}
	b := Bounds{Start: s.Offset, End: e.Offset}
	first := max(from, b.Start)
	if b.End <= first {
		return b, nil
	}
	cl, err := k.NewClient(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(first)}}))
	if err != nil {
		return b, err
	}
	defer cl.Close()
	idle := k.IdleTimeout
	if idle <= 0 {
		idle = 30 * time.Second
	}
	for {
		pctx, cancel := context.WithTimeout(ctx, idle)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return b, err
		}
		if pctx.Err() != nil && fs.NumRecords() == 0 {
			return b, fmt.Errorf("no record for %s between offsets %d and %d (log end %d)", idle, first, b.End, b.End)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if ferr == nil && !errors.Is(err, context.DeadlineExceeded) {
				ferr = err
			}
		})
		if ferr != nil {
			return b, ferr
		}
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			if done {
				return
			}
			if r.Offset >= b.End || !fn(Record{Offset: r.Offset, ID: Identity(r)}) {
				done = true
				return
			}
			if r.Offset == b.End-1 {
				done = true
			}
		})
		if done {
			return b, nil
		}
	}
}

// Identity is a message's identity across clusters: a hash of what the replicator copies
// unchanged and KoP hands to Kafka consumers on every cluster alike (the record's
// timestamp, key, value and headers). The offset is not part of it: that is what differs.
func Identity(r *kgo.Record) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(r.Timestamp.UnixMilli()))
	h.Write(b[:])
	field := func(p []byte, null bool) {
		if null {
			binary.BigEndian.PutUint64(b[:], ^uint64(0))
		} else {
			binary.BigEndian.PutUint64(b[:], uint64(len(p)))
		}
		h.Write(b[:])
		h.Write(p)
	}
	field(r.Key, r.Key == nil)
	field(r.Value, r.Value == nil)
	for _, hd := range r.Headers {
		field([]byte(hd.Key), false)
		field(hd.Value, hd.Value == nil)
	}
	return h.Sum64()
}
