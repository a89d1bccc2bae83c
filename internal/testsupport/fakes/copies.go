package fakes

import (
	"context"
	"fmt"

	"github.com/kop-offsets/kop-offsets/internal/align"
)

// MemCopies is one cluster's copies of data topics for alignment tests: per topic (all
// partitions alike) the identities of its messages in offset order, from offset Start.
type MemCopies struct {
	Start  int64
	Topics map[string][]uint64
}

// Scan implements align.Source.
func (m MemCopies) Scan(ctx context.Context, topic string, p int32, fn func(align.Record) bool) (align.Bounds, error) {
	return m.ScanFrom(ctx, topic, p, m.Start, fn)
}

// ScanFrom implements align.RangeSource.
func (m MemCopies) ScanFrom(ctx context.Context, topic string, _ int32, from int64, fn func(align.Record) bool) (align.Bounds, error) {
	ids, ok := m.Topics[topic]
	if !ok {
		return align.Bounds{}, fmt.Errorf("topic %s not found", topic)
	}
	for i := max(from-m.Start, 0); i < int64(len(ids)); i++ {
		if ctx.Err() != nil {
			return align.Bounds{}, ctx.Err()
		}
		if !fn(align.Record{Offset: m.Start + i, ID: ids[i]}) {
			break
		}
	}
	return align.Bounds{Start: m.Start, End: m.Start + int64(len(ids))}, nil
}

var _ align.RangeSource = MemCopies{}

// Sequence returns the identities from, from+1, ... to-1: the same numbers on two clusters
// are the same messages.
func Sequence(from, to uint64) []uint64 {
	out := make([]uint64, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// Stalled is a cluster's copies whose reads of Topic wait until Release is closed (or ctx
// ends): a KoP that lists messages it cannot fetch.
type Stalled struct {
	align.RangeSource
	Topic   string
	Release chan struct{}
}

// ScanFrom waits on Topic, then reads as the copies beneath.
func (s Stalled) ScanFrom(ctx context.Context, topic string, p int32, from int64, fn func(align.Record) bool) (align.Bounds, error) {
	if topic == s.Topic {
		select {
		case <-s.Release:
		case <-ctx.Done():
			return align.Bounds{}, ctx.Err()
		}
	}
	return s.RangeSource.ScanFrom(ctx, topic, p, from, fn)
}

// Scan is ScanFrom the log start.
func (s Stalled) Scan(ctx context.Context, topic string, p int32, fn func(align.Record) bool) (align.Bounds, error) {
	return s.ScanFrom(ctx, topic, p, 0, fn)
}
