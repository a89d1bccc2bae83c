package watch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/streamsync"
)

// SyncSweep is what one sync of every group did (SyncOnce).
type SyncSweep = streamsync.Sweep

// ErrSyncStandby is SyncOnce's error when a synced cluster's writer lease could not be
// taken: most often another process holds it (a watch --sync runs, and it syncs).
var ErrSyncStandby = streamsync.ErrStandby

// SyncOnce follows every cluster until each one that answers has replayed its offsets
// topic, syncs every group once (what a watch --sync does when it starts) and stops: sync
// setup's seed. It needs Options.Sync. ctx bounds it all.
func (w *Watcher) SyncOnce(ctx context.Context) (SyncSweep, error) {
	if w.sync == nil {
		return SyncSweep{}, errors.New("watch: SyncOnce needs Options.Sync")
	}
	cctx, cancel := context.WithCancel(ctx)
	wait := w.start(cctx, false)
	defer func() { cancel(); wait() }()
	for {
		w.Cycle(cctx)
		if w.Ready() {
			sw, err := w.sync.SweepAll(cctx)
			if !errors.Is(err, streamsync.ErrNotReady) {
				return sw, err
			}
		}
		if ctx.Err() != nil {
			return SyncSweep{}, fmt.Errorf("not every cluster replayed its offsets topic in time: %w", ctx.Err())
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}
