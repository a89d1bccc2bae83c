package reload

import (
	"context"

	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// PartitionReplayer replays offsets partitions as they are now; *loader.Snapshot implements
// it, reading only what was appended since its last replay of a partition.
type PartitionReplayer interface {
	Replay(ctx context.Context, parts []int32, concurrency int) (*loader.PersistedOffsets, error)
}

var _ PartitionReplayer = (*loader.Snapshot)(nil)

// replay reads and replays parts of the cluster's offsets topic: through Persisted when set,
// else a whole read through Reader.
func (p *Planner) replay(ctx context.Context, parts []int32) (*loader.PersistedOffsets, error) {
	if p.Persisted != nil {
		return p.Persisted.Replay(ctx, parts, replayConcurrency)
	}
	return replay(ctx, p.Reader, parts, p.Ordering)
}

// replay is Planner.replay for the executor's reads (the re-check, the verification).
func (e *Executor) replay(ctx context.Context, parts []int32) (*loader.PersistedOffsets, error) {
	if e.Persisted != nil {
		return e.Persisted.Replay(ctx, parts, replayConcurrency)
	}
	return replay(ctx, e.Reader, parts, e.Ordering)
}

// newerRead is the read of live.go's newerRead through the executor's replay.
func (e *Executor) newerRead(ctx context.Context, parts []int32) *loader.PersistedOffsets {
	if e.Persisted == nil {
		return newerRead(ctx, e.Reader, parts, e.Ordering)
	}
	if len(parts) == 0 {
		return nil
	}
	po, err := e.Persisted.Replay(ctx, parts, replayConcurrency)
	if err != nil {
		return nil
	}
	return po
}
