package synccmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/watchwire"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/watch"
)

// SeedFunc syncs every group once between cls (watch --sync at its start, run by setup so
// that every target holds its groups' translated offsets before watch starts).
type SeedFunc func(ctx context.Context, cls []config.Cluster) (watch.SyncSweep, error)

// Seed is what the seed did (-o json "seed").
type Seed struct {
	watch.SyncSweep
	Seconds float64 `json:"seconds"`
	// Skipped says why there was no seed (--no-seed, another process syncs).
	Skipped string `json:"skipped,omitempty"`
	Error   string `json:"error,omitempty"`
}

// factorySeed builds watch's clients for cls in sync mode (the offsets topic's deployment is
// checked again: it refuses while it replicates) and syncs every group once, under the
// writer leases (--lease-topic) and into the audit trail (--audit-file).
func factorySeed(f *cmdutil.Factory, o *SetupOptions) SeedFunc {
	return func(ctx context.Context, cls []config.Cluster) (watch.SyncSweep, error) {
		lg := f.Logger()
		built, release, err := watchwire.Clusters(f, cls, cls, watchwire.Build{Sync: true, Logger: lg,
			Writes: o.Writes})
		if err != nil {
			return watch.SyncSweep{}, err
		}
		defer release()
		w := watch.New(built, watch.Options{Sync: true, Interval: time.Second, Logger: lg, SyncMaxMessages: o.AlignmentMax, Groups: o.Groups})
		return w.SyncOnce(ctx)
	}
}

// seed runs o.Seed after a verified setup and says what it did: the verdict's tail and the
// exit code (a sync that failed is a write that failed; another process syncing is no
// failure: it is doing the seed's work).
func seed(ctx context.Context, o *SetupOptions, cls []config.Cluster) (*Seed, string, outcome.Outcome) {
	if o.NoSeed {
		return &Seed{Skipped: "--no-seed"}, "not seeded (--no-seed): watch --sync at its start syncs every group", outcome.OK
	}
	start := time.Now()
	sctx, cancel := context.WithTimeout(ctx, o.SeedTimeout)
	defer cancel()
	sw, err := o.Seed(sctx, cls)
	sd := &Seed{SyncSweep: sw, Seconds: time.Since(start).Seconds()}
	switch {
	case errors.Is(err, watch.ErrSyncStandby):
		sd.Skipped = err.Error()
		return sd, "not seeded: " + err.Error() + ": it syncs every group", outcome.OK
	case err != nil:
		sd.Error = err.Error()
		return sd, "seed failed: " + err.Error() + " (watch --sync at its start syncs every group)", seedOutcome(err)
	}
	tail := fmt.Sprintf("seeded in %.1f s: %d groups, %d synced (%d offsets committed through KoP, %d deleted)", sd.Seconds, sw.Groups, sw.Synced, sw.Offsets, sw.Deleted)
	if len(sw.SplitBrain) > 0 {
		tail += fmt.Sprintf("; %d split brain, left (%s)", len(sw.SplitBrain), firstFew(sw.SplitBrain))
	}
	if len(sw.Down) > 0 {
		tail += fmt.Sprintf("; not synced to or from %s (down: synced when watch --sync sees it return)", strings.Join(sw.Down, ", "))
	}
	if len(sw.Again) > 0 {
		tail += fmt.Sprintf("; %d groups not synced yet (a failure, data not all replicated, members unknown: %s), watch --sync takes them up",
			len(sw.Again), firstFew(sw.Again))
		return sd, tail, outcome.WriteFailed
	}
	return sd, tail, outcome.OK
}

// firstFew is up to three names and how many more.
func firstFew(names []string) string {
	if len(names) <= 3 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s +%d", strings.Join(names[:3], ", "), len(names)-3)
}

// seedOutcome is the exit of a seed that failed: a configuration error (no kafkaBootstrap, a
// trail that cannot be written) keeps its own; anything else is a write that failed.
func seedOutcome(err error) outcome.Outcome {
	if ee, ok := errors.AsType[*cmdutil.ExitError](err); ok {
		return ee.Outcome
	}
	return outcome.WriteFailed
}
