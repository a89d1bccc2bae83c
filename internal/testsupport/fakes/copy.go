package fakes

import (
	"context"
	"sync"

	"github.com/kop-offsets/kop-offsets/internal/align"
)

// Copy is one cluster's copy of a data topic's partitions in memory (align.RangeSource):
// message identities in offset order from offset 0, the same for every topic asked.
type Copy struct {
	mu  sync.Mutex
	IDs []uint64
}

var _ align.RangeSource = (*Copy)(nil)

// NewCopy holds the identities from..to-1, then more.
func NewCopy(from, to uint64, more ...uint64) *Copy {
	c := &Copy{}
	c.Append(from, to)
	c.IDs = append(c.IDs, more...)
	return c
}

// Append adds the identities from..to-1 (messages replicated or published).
func (c *Copy) Append(from, to uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := from; i < to; i++ {
		c.IDs = append(c.IDs, i)
	}
}

// Scan implements align.Source.
func (c *Copy) Scan(ctx context.Context, topic string, p int32, fn func(align.Record) bool) (align.Bounds, error) {
	return c.ScanFrom(ctx, topic, p, 0, fn)
}

// ScanFrom implements align.RangeSource.
func (c *Copy) ScanFrom(_ context.Context, _ string, _ int32, from int64, fn func(align.Record) bool) (align.Bounds, error) {
	c.mu.Lock()
	ids := c.IDs
	c.mu.Unlock()
	for i := max(from, 0); i < int64(len(ids)); i++ {
		if !fn(align.Record{Offset: i, ID: ids[i]}) {
			break
		}
	}
	return align.Bounds{End: int64(len(ids))}, nil
}
