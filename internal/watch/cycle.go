package watch

// The cycle: what the followers read is taken, the groups to ask are chosen and asked a
// chunk at a time, their rows rebuilt, and the report published.

import (
	"context"
	"errors"
	"iter"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/match"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
	"github.com/kop-offsets/kop-offsets/internal/watch/job"
)

// exporter is the job watch always runs: each cycle takes what the followers read, asks
// KoP about the groups that changed, classifies them (rowBook) and publishes the report
// and the metrics. It owns the cycle's state; the other jobs learn what a cycle found
// through the job.Cycle it returns.
type exporter struct {
	o        *Options
	m        *Metrics
	log      *slog.Logger
	clusters fleet
	rows     *rowBook

	lastResync time.Time
	report     atomic.Pointer[snapshot]
	ready      atomic.Bool
}

// cycle runs one cycle of the exporter that started at start: take what the followers
// read, ask KoP about the groups that changed (all groups when a resync is due), classify,
// forget the groups gone, publish. ok is false when ctx ended before the report was
// published.
func (x *exporter) cycle(ctx context.Context, start time.Time, first bool) (c job.Cycle, rows int, ok bool) {
	resync := x.lastResync.IsZero() || start.Sub(x.lastResync) >= x.o.Resync
	if resync {
		x.lastResync = start
		x.rows.topicLists = map[string][]string{} // lists no row names any more go
	}
	// 1. Per cluster: is it up; what changed.
	dirty := x.takeChanges(ctx)
	if ctx.Err() != nil {
		return c, 0, false
	}
	// 2. The groups to ask: changed, still unsettled, and every group on a resync.
	groups := x.groupsToAsk(ctx, dirty, resync)
	// 3 to 5, a chunk of groups at a time (a resync asks every group: its answers and rows
	// in the making are then never every group's at once).
	for _, chunk := range x.clusters.chunks(groups) {
		// 3. Replication, cached side, log-end offsets: per cluster in parallel.
		x.clusters.parallel(func(c *clusterRT) { x.fetch(ctx, c, chunk) })
		if ctx.Err() != nil {
			return c, 0, false
		}
		// 4. Rows of the groups asked; what belongs to groups gone everywhere is forgotten.
		x.rows.rebuild(chunk)
		x.rows.forget(chunk, false)
		// 5. Staleness episodes KoP ended.
		now := x.o.Now()
		for _, c := range x.clusters {
			x.settle(c, now)
			// The rows hold what KoP served; every later use of an answer is of a group
			// asked again, so keeping them would only double what watch holds per key.
			c.cached = nil
		}
	}
	if resync {
		x.rows.forget(nil, true)
	}
	now := x.o.Now()
	for _, c := range x.clusters {
		x.staleness(c, now)
	}
	snap := x.rows.snapshot()
	x.report.Store(snap)
	x.m.setReport(snap)
	ready := x.clusters.replayed()
	x.ready.Store(ready)
	clusters, ns := x.clusters.names(), x.clusters.displayNamespace()
	return job.Cycle{Start: start, Resync: resync, First: first, Ready: ready, Asked: groups,
		Rows:    func(g string) iter.Seq[verdict.Row] { return x.rows.groups[g].Rows(clusters, ns) },
		Inbound: x.clusters.inbound,
	}, snap.rows, true
}

// takeChanges probes every cluster (up or down) and takes what its followers read since the
// last cycle: the groups that changed, by cluster, and the replicated commits to track.
func (x *exporter) takeChanges(ctx context.Context) [][]string {
	dirty := make([][]string, len(x.clusters))
	x.clusters.parallel(func(c *clusterRT) {
		i := slices.Index(x.clusters, c)
		cctx, cancel := context.WithTimeout(ctx, x.o.CallTimeout)
		_, err := c.Tailer.Partitions(cctx)
		cancel()
		_, parts := c.partitions()
		following, failing := 0, 0
		for _, p := range parts {
			d, all, arr, dropped, fol, fail := p.take()
			if all {
				d = slices.AppendSeq(d, p.groups())
			}
			dirty[i] = append(dirty[i], d...)
			if dropped > 0 {
				x.m.dropped.WithLabelValues(c.Name).Add(float64(dropped))
			}
			if c.Fetcher != nil {
				for _, a := range arr {
					c.track(a, x.m)
				}
			}
			following += b2i(fol)
			failing += b2i(fail)
		}
		// Up: the admin API answers and no reader is failing (partitions still replaying
		// count as up: their cells say so).
		x.setUp(ctx, c, err, err == nil && failing == 0, following)
	})
	return dirty
}

// setUp records whether c is up and logs the change.
func (x *exporter) setUp(ctx context.Context, c *clusterRT, err error, up bool, following int) {
	if ctx.Err() == nil && ((c.probed && up != c.up) || (!c.probed && !up)) {
		if up {
			x.log.Info("cluster up", "cluster", c.Name, "partitionsFollowing", following)
		} else {
			msg := "offsets partitions not followed"
			if err != nil {
				msg = err.Error()
				x.m.errors.WithLabelValues(c.Name, "admin").Inc()
			}
			x.log.Warn("cluster down", "cluster", c.Name, "err", msg)
		}
	}
	c.up, c.probed, c.adminDown = up, true, err != nil
	c.upNow.Store(up)
	x.m.up.WithLabelValues(c.Name).Set(b2f(up))
	x.m.following.WithLabelValues(c.Name).Set(float64(following))
}

// groupsToAsk are the groups changed, those still unsettled (not ok, or with replicated
// commits KoP does not serve yet), and on a resync every group any cluster holds or lists,
// filtered by --group, sorted.
func (x *exporter) groupsToAsk(ctx context.Context, dirty [][]string, resync bool) []string {
	ask := map[string]bool{}
	for _, d := range dirty {
		for _, g := range d {
			ask[g] = true
		}
	}
	for g, rs := range x.rows.groups {
		for st := range rs.Statuses() {
			switch st {
			case verdict.StatusStaleCache, verdict.StatusReplicationLag, verdict.StatusCoordinatorUnavailable, verdict.StatusError:
				ask[g] = true
			}
		}
	}
	for _, c := range x.clusters {
		for k := range c.pending {
			ask[k.Group] = true
		}
	}
	if resync {
		x.everyGroup(ctx, ask)
	}
	var groups []string
	for g := range ask {
		if match.Any(x.o.Groups, g) {
			groups = append(groups, g)
		}
	}
	slices.Sort(groups)
	return groups
}

// everyGroup adds to ask every group a view holds, KoP lists, or a row names.
func (x *exporter) everyGroup(ctx context.Context, ask map[string]bool) {
	for _, c := range x.clusters {
		_, parts := c.partitions()
		for _, p := range parts {
			for g := range p.groups() {
				ask[g] = true
			}
		}
	}
	var mu sync.Mutex
	x.clusters.parallel(func(c *clusterRT) {
		if c.Fetcher == nil || !c.up {
			return
		}
		cctx, cancel := context.WithTimeout(ctx, x.o.CallTimeout)
		defer cancel()
		ls, err := c.Fetcher.ListGroups(cctx)
		var partial *kop.PartialListError
		switch {
		case errors.As(err, &partial):
			// Some brokers answered: their groups are asked, the others' fail alone.
			x.log.Warn("KoP listed the groups of some brokers only", "cluster", c.Name, "error", err)
		case err != nil:
			return // the fetch counts KoP's failure
		}
		mu.Lock()
		defer mu.Unlock()
		for _, g := range ls {
			ask[g.Group] = true
		}
	})
	for g := range x.rows.groups {
		ask[g] = true // rebuilt (or dropped when gone everywhere)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
