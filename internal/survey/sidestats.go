package survey

import (
	"context"
	"iter"
	"maps"
	"slices"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// What a side needs besides its two views of the offsets, read the same way by check (once)
// and watch (per cycle): the replication stats of its offsets partitions and the log-end
// offsets of the rows' topics.

// ReadOutbound reads src's replication stats of the offsets partitions parts, in partition
// order, into into, each call bounded by timeout (0: by ctx only). It stops at the first
// failure and returns it with the partition it failed on; the stats read before it stay.
func ReadOutbound(ctx context.Context, src ReplicationSource, parts map[int32]bool, timeout time.Duration,
	into map[int32]map[string]verdict.Inbound) (int32, error) {
	for _, p := range slices.Sorted(maps.Keys(parts)) {
		cctx, cancel := ctx, context.CancelFunc(func() {})
		if timeout != 0 {
			cctx, cancel = context.WithTimeout(ctx, timeout)
		}
		st, err := src.OutboundReplication(cctx, p)
		cancel()
		if err != nil {
			return p, err
		}
		into[p] = st
	}
	return 0, nil
}

// ReadEndOffsets asks f for the log-end offsets of topics (any spelling KoP accepts on a
// cluster of namespace ns), each once under its short name, in name order, and stores them
// in into by full name. What f answered is stored even when it returns an error. No topics:
// f is not asked.
func ReadEndOffsets(ctx context.Context, f OffsetFetcher, ns string, topics iter.Seq[string],
	into map[string]map[int32]int64) error {
	short := map[string]bool{}
	for t := range topics {
		short[loader.ShortName(t, ns)] = true
	}
	if len(short) == 0 {
		return nil
	}
	leo, err := f.EndOffsets(ctx, slices.Sorted(maps.Keys(short)))
	for t, ps := range leo {
		into[loader.NormalizeTopic(t, ns)] = ps
	}
	return err
}
