package loader

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"
)

// TailReader is an OffsetTopicReader that can also read a partition from a position on
// (pulsarx.Reader), so that a replay made earlier in a run is brought up to date by reading
// what was appended since instead of the whole partition again.
type TailReader interface {
	OffsetTopicReader
	// ReadPartitionAfter calls fn for every message of partition after the position after
	// ("" : from the earliest) up to the last one that existed when the call started, as
	// ReadPartition does, and returns the position it read to (after itself when nothing
	// was appended): the after of the next call.
	ReadPartitionAfter(ctx context.Context, partition int32, after string, fn func(Message) error) (string, error)
	// Horizon names what of the partition's history a read can still see: it changes when
	// a compaction or the trimming of old ledgers removes messages from the view, which a
	// read from a position on cannot notice.
	Horizon(ctx context.Context, partition int32) (string, error)
}

// Snapshot replays offsets partitions and keeps each replay, so that a later Replay of the
// same partition reads only the messages appended since: what a whole read would give, at
// the cost of the new messages. A partition whose Horizon moved (compaction dropped
// messages already replayed), or whose Horizon cannot be read, is read again from the start.
// With a reader that is not a TailReader every Replay reads every partition whole.
type Snapshot struct {
	reader   OffsetTopicReader
	ordering TxnOrdering

	mu    sync.Mutex
	parts map[int32]*snapPart
	// whole and tails count the partition reads of each kind (tests, logs).
	whole, tails int
}

// snapPart is one partition's replay: the Replayer fed up to end, under horizon (known:
// read; an unknown one makes the next Replay read the partition whole).
type snapPart struct {
	rep     *Replayer
	end     string
	horizon string
	known   bool
}

// NewSnapshot returns an empty Snapshot of r's partitions.
func NewSnapshot(r OffsetTopicReader, ordering TxnOrdering) *Snapshot {
	return &Snapshot{reader: r, ordering: ordering, parts: map[int32]*snapPart{}}
}

// Reads returns how many partition reads were whole and how many read a tail only.
func (s *Snapshot) Reads() (whole, tails int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.whole, s.tails
}

// Replay returns what KoP would load from parts now, reading at most concurrency
// partitions at once (0 or less: 4). Replays do not overlap (one at a time).
func (s *Snapshot) Replay(ctx context.Context, parts []int32, concurrency int) (*PersistedOffsets, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	parts = slices.Compact(slices.Sorted(slices.Values(parts)))
	if concurrency <= 0 {
		concurrency = 4
	}
	results := make([]*PersistedOffsets, len(parts))
	next := make([]*snapPart, len(parts))
	whole := make([]bool, len(parts))
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(concurrency)
	for i, p := range parts {
		prev := s.parts[p] // the goroutines never touch the map
		eg.Go(func() error {
			sp, w, err := s.bringUp(ectx, p, prev)
			if err != nil {
				return fmt.Errorf("offsets partition %d: %w", p, err)
			}
			next[i], whole[i], results[i] = sp, w, sp.rep.Result()
			return nil
		})
	}
	err := eg.Wait()
	for i, p := range parts {
		// A partition whose read failed may have been fed in part: forgotten, it is read
		// whole next time.
		delete(s.parts, p)
		if next[i] != nil {
			s.parts[p] = next[i]
		}
	}
	if err != nil {
		return nil, err
	}
	for _, w := range whole {
		if w {
			s.whole++
		} else {
			s.tails++
		}
	}
	return Merge(results...), nil
}

// bringUp returns partition p's replay brought up to now: prev fed with what was appended
// since it was read, or, without prev, with a Horizon that moved or cannot be read, a replay
// of the whole partition (whole true).
func (s *Snapshot) bringUp(ctx context.Context, p int32, prev *snapPart) (sp *snapPart, whole bool, err error) {
	tr, ok := s.reader.(TailReader)
	if !ok {
		po := NewReplayer(p, s.ordering)
		err := s.reader.ReadPartition(ctx, p, func(m Message) error { _ = po.ApplyMessage(m); return nil })
		return &snapPart{rep: po}, true, err
	}
	// The horizon is read before the messages: a compaction that ends during the read
	// moves it, and the next Replay reads the partition whole again.
	h, herr := tr.Horizon(ctx, p)
	if prev == nil || !prev.known || herr != nil || h != prev.horizon {
		prev, whole = &snapPart{rep: NewReplayer(p, s.ordering)}, true
	}
	end, err := tr.ReadPartitionAfter(ctx, p, prev.end, func(m Message) error { _ = prev.rep.ApplyMessage(m); return nil })
	if err != nil {
		return nil, whole, err
	}
	prev.end, prev.horizon, prev.known = end, h, herr == nil
	return prev, whole, nil
}
