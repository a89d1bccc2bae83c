package survey

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// probeGroups are the probe groups of the offsets partitions this check looks at: those of
// the literal groups, else every partition.
func (s *clusterState) probeGroups(o Options) []string {
	if s.partitions <= 0 {
		return nil
	}
	var parts []int32
	if lit := literalGroups(o.Groups); lit != nil {
		for _, g := range lit {
			parts = append(parts, loader.PartitionFor(g, s.partitions))
		}
		slices.Sort(parts)
		parts = slices.Compact(parts)
	} else {
		for p := range s.partitions {
			parts = append(parts, p)
		}
	}
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = loader.ProbeGroup(p, s.partitions)
	}
	return out
}

// readPersisted replays the offsets partitions that hold the selected groups.
func (s *clusterState) readPersisted(ctx context.Context, o Options) {
	if s.c.Down != nil {
		s.pErr, s.cacheErr = s.c.Down, fmt.Errorf("%w: %w", errNotAsked, s.c.Down)
		return
	}
	n, err := s.c.Reader.Partitions(ctx)
	if err != nil {
		s.pErr = err
		if pulsarx.TimedOut(err) && ctx.Err() == nil {
			// The cluster hangs (a cut link, stopped processes): its KoP is not asked
			// either, so that nothing waits on it more than once.
			s.cacheErr = fmt.Errorf("%w: cluster %s did not answer its admin API within the request timeout", errNotAsked, s.c.Name)
		}
		return
	}
	s.partitions = n
	var parts []int32
	if lit := literalGroups(o.Groups); lit != nil {
		set := map[int32]bool{}
		for _, g := range lit {
			set[loader.PartitionFor(g, n)] = true
		}
		parts = slices.Sorted(maps.Keys(set))
	} else {
		for p := range n {
			parts = append(parts, p)
		}
	}
	views, err := replayPartitions(ctx, s.c.Reader, parts, o.Concurrency)
	if err != nil {
		s.pErr = err
		return
	}
	// One view per partition, not merged: a merge would hold every key twice for a moment.
	s.persisted = make([]*loader.PersistedOffsets, n)
	for i, p := range parts {
		s.persisted[p] = views[i]
	}
}

// noOffsets is the view of an offsets partition that was not replayed: no selected group
// lives there.
var noOffsets = loader.Merge()

// view is the loader view of the offsets partition holding group.
func (s *clusterState) view(group string) *loader.PersistedOffsets {
	if v := s.reread[group]; v != nil {
		return v
	}
	if s.partitions > 0 {
		if v := s.persisted[loader.PartitionFor(group, s.partitions)]; v != nil {
			return v
		}
	}
	return noOffsets
}

// views are the replayed offsets partitions' views.
func (s *clusterState) views() []*loader.PersistedOffsets {
	var out []*loader.PersistedOffsets
	for _, v := range s.persisted {
		if v != nil {
			out = append(out, v)
		}
	}
	return out
}

// ReplayPartitions replays partitions of reader, at most concurrency at once, and merges them.
func ReplayPartitions(ctx context.Context, reader loader.OffsetTopicReader, parts []int32, concurrency int) (*loader.PersistedOffsets, error) {
	views, err := replayPartitions(ctx, reader, parts, concurrency)
	if err != nil {
		return nil, err
	}
	return loader.Merge(views...), nil
}

// replayPartitions replays partitions of reader, at most concurrency at once.
func replayPartitions(ctx context.Context, reader loader.OffsetTopicReader, parts []int32, concurrency int) ([]*loader.PersistedOffsets, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]*loader.PersistedOffsets, len(parts))
	errs := make([]error, len(parts))
	var g errgroup.Group
	g.SetLimit(max(concurrency, 1))
	for i, p := range parts {
		g.Go(func() error {
			results[i], errs[i] = loader.ReplayPartition(ctx, reader, p, loader.OrderingKoP)
			if errs[i] != nil {
				cancel()
			}
			return nil
		})
	}
	_ = g.Wait()
	// The first failure cancelled the others: report it, not their cancellations.
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return results, nil
}
