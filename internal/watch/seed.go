package watch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// SyncSweep is what one sync of every group did (SyncOnce).
type SyncSweep struct {
	Groups  int `json:"groups"`  // groups looked at
	Synced  int `json:"synced"`  // groups with an offset committed on a target
	Offsets int `json:"offsets"` // offsets committed
	Deleted int `json:"deleted"` // offsets deleted
	// Again are the groups a cycle of watch --sync takes up again: a failure, data not all
	// replicated yet (behind), or members unknown on a cluster that answers.
	Again      []string `json:"again,omitempty"`
	SplitBrain []string `json:"splitBrain,omitempty"`
	// Down are the clusters that did not answer: nothing was synced to or from them.
	Down []string `json:"down,omitempty"`
}

// ErrSyncStandby is SyncOnce's error when a synced cluster's writer lease could not be
// taken: most often another process holds it (a watch --sync runs, and it syncs).
var ErrSyncStandby = errors.New("the writer lease of a synced cluster could not be taken")

// SyncOnce follows every cluster until each one that answers has replayed its offsets
// topic, syncs every group once (what the first cycle of a watch --sync does) and stops:
// sync setup's seed. It needs Options.Sync. ctx bounds it all.
func (w *Watcher) SyncOnce(ctx context.Context) (SyncSweep, error) {
	s := w.syncing
	if s == nil {
		return SyncSweep{}, errors.New("watch: SyncOnce needs Options.Sync")
	}
	cctx, cancel := context.WithCancel(ctx)
	wait := w.Start(cctx)
	defer func() { cancel(); wait() }()
	s.sweep = &SyncSweep{}
	defer func() { s.sweep = nil }()
	for {
		w.Cycle(cctx)
		switch {
		case s.swept:
			sw := *s.sweep
			for _, c := range w.clusters {
				if !c.up {
					sw.Down = append(sw.Down, c.Name)
				}
			}
			for g := range s.again {
				sw.Again = append(sw.Again, g)
			}
			slices.Sort(sw.Again)
			slices.Sort(sw.SplitBrain)
			return sw, nil
		case s.known && !s.active:
			return SyncSweep{}, fmt.Errorf("%w: %w", ErrSyncStandby, s.leaseErr)
		case ctx.Err() != nil:
			return SyncSweep{}, fmt.Errorf("not every cluster replayed its offsets topic in time: %w", ctx.Err())
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}
