package watch

// The cycle: what the followers read is taken, the groups to ask are chosen and asked a
// chunk at a time, their rows rebuilt, and the report published.

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/match"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// Cycle runs one cycle: take what the followers read, ask KoP about the groups that
// changed (all groups when a resync is due), classify, forget the groups gone, publish the
// metrics, and repair when enabled. Run calls it every Interval; tests call it directly.
func (w *Watcher) Cycle(ctx context.Context) {
	start := w.o.Now()
	resync := w.lastResync.IsZero() || start.Sub(w.lastResync) >= w.o.Resync
	if resync {
		w.lastResync = start
		w.topicLists = map[string][]string{} // lists no row names any more go
	}
	// 1. Per cluster: is it up; what changed.
	dirty := w.takeChanges(ctx)
	if ctx.Err() != nil {
		return
	}
	// 2. The groups to ask: changed, still unsettled, and every group on a resync.
	groups := w.groupsToAsk(ctx, dirty, resync)
	// 3 to 5, a chunk of groups at a time (a resync asks every group: its answers and rows
	// in the making are then never every group's at once).
	for _, chunk := range w.chunks(groups) {
		// 3. Replication, cached side, log-end offsets: per cluster in parallel.
		w.parallel(func(c *clusterRT) { w.fetch(ctx, c, chunk) })
		if ctx.Err() != nil {
			return
		}
		// 4. Rows of the groups asked; what belongs to groups gone everywhere is forgotten.
		w.rebuild(chunk)
		w.forget(chunk, false, start)
		// 5. Staleness episodes KoP ended.
		now := w.o.Now()
		for _, c := range w.clusters {
			w.settle(c, now)
			// The rows hold what KoP served; every later use of an answer is of a group
			// asked again, so keeping them would only double what watch holds per key.
			c.cached = nil
		}
	}
	if resync {
		w.forget(nil, true, start)
	}
	now := w.o.Now()
	for _, c := range w.clusters {
		w.staleness(c, now)
	}
	snap := w.snapshot()
	w.report.Store(snap)
	w.m.setReport(snap)
	ready := w.replayed()
	w.ready.Store(ready)
	// 6. Kept translations are kept as they are read (streamkeep); the cycle makes what was
	// left for later (a source that did not answer, a failed write) due again.
	for _, c := range w.clusters {
		if c.keep != nil && c.up {
			c.keep.Retry()
		}
	}
	if w.engine != nil {
		// The engine syncs as commits are read; the cycle tells it which clusters answer.
		for _, c := range w.clusters {
			w.engine.SetUp(c.Name, c.up)
		}
		if resync && w.cycles.Load() > 0 {
			w.engine.Resync()
		}
	}
	if w.o.Repair && ready {
		for _, c := range w.clusters {
			if c.Reloader != nil && c.up {
				w.repair(ctx, c, groups)
			}
		}
	}
	end := w.o.Now()
	w.cycles.Add(1)
	w.last.Store(end.UnixNano())
	w.m.cycles.Inc()
	w.m.cycleDuration.Observe(end.Sub(start).Seconds())
	w.m.lastCycle.Set(float64(end.UnixMilli()) / 1000)
	w.log.Debug("cycle", "groupsAsked", len(groups), "resync", resync, "rows", snap.rows, "seconds", end.Sub(start).Seconds())
}

// takeChanges probes every cluster (up or down) and takes what its followers read since the
// last cycle: the groups that changed, by cluster, and the replicated commits to track.
func (w *Watcher) takeChanges(ctx context.Context) [][]string {
	dirty := make([][]string, len(w.clusters))
	w.parallel(func(c *clusterRT) {
		i := slices.Index(w.clusters, c)
		cctx, cancel := context.WithTimeout(ctx, w.o.CallTimeout)
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
				w.m.dropped.WithLabelValues(c.Name).Add(float64(dropped))
			}
			if c.Fetcher != nil {
				for _, a := range arr {
					c.track(a, w.m)
				}
			}
			following += b2i(fol)
			failing += b2i(fail)
		}
		// Up: the admin API answers and no reader is failing (partitions still replaying
		// count as up: their cells say so).
		w.setUp(ctx, c, err, err == nil && failing == 0, following)
	})
	return dirty
}

// setUp records whether c is up and logs the change.
func (w *Watcher) setUp(ctx context.Context, c *clusterRT, err error, up bool, following int) {
	if ctx.Err() == nil && ((c.probed && up != c.up) || (!c.probed && !up)) {
		if up {
			w.log.Info("cluster up", "cluster", c.Name, "partitionsFollowing", following)
		} else {
			msg := "offsets partitions not followed"
			if err != nil {
				msg = err.Error()
				w.m.errors.WithLabelValues(c.Name, "admin").Inc()
			}
			w.log.Warn("cluster down", "cluster", c.Name, "err", msg)
		}
	}
	c.up, c.probed, c.adminDown = up, true, err != nil
	c.upNow.Store(up)
	w.m.up.WithLabelValues(c.Name).Set(b2f(up))
	w.m.following.WithLabelValues(c.Name).Set(float64(following))
}

// groupsToAsk are the groups changed, those still unsettled (not ok, or with replicated
// commits KoP does not serve yet), and on a resync every group any cluster holds or lists,
// filtered by --group, sorted.
func (w *Watcher) groupsToAsk(ctx context.Context, dirty [][]string, resync bool) []string {
	ask := map[string]bool{}
	for _, d := range dirty {
		for _, g := range d {
			ask[g] = true
		}
	}
	for g, rs := range w.rows {
		for st := range rs.Statuses() {
			switch st {
			case verdict.StatusStaleCache, verdict.StatusReplicationLag, verdict.StatusCoordinatorUnavailable, verdict.StatusError:
				ask[g] = true
			}
		}
	}
	for _, c := range w.clusters {
		for k := range c.pending {
			ask[k.Group] = true
		}
	}
	if resync {
		w.everyGroup(ctx, ask)
	}
	var groups []string
	for g := range ask {
		if match.Any(w.o.Groups, g) {
			groups = append(groups, g)
		}
	}
	slices.Sort(groups)
	return groups
}

// everyGroup adds to ask every group a view holds, KoP lists, or a row names.
func (w *Watcher) everyGroup(ctx context.Context, ask map[string]bool) {
	for _, c := range w.clusters {
		_, parts := c.partitions()
		for _, p := range parts {
			for g := range p.groups() {
				ask[g] = true
			}
		}
	}
	var mu sync.Mutex
	w.parallel(func(c *clusterRT) {
		if c.Fetcher == nil || !c.up {
			return
		}
		cctx, cancel := context.WithTimeout(ctx, w.o.CallTimeout)
		defer cancel()
		ls, err := c.Fetcher.ListGroups(cctx)
		var partial *kop.PartialListError
		switch {
		case errors.As(err, &partial):
			// Some brokers answered: their groups are asked, the others' fail alone.
			w.log.Warn("KoP listed the groups of some brokers only", "cluster", c.Name, "error", err)
		case err != nil:
			return // the fetch counts KoP's failure
		}
		mu.Lock()
		defer mu.Unlock()
		for _, g := range ls {
			ask[g.Group] = true
		}
	})
	for g := range w.rows {
		ask[g] = true // rebuilt (or dropped when gone everywhere)
	}
}

// maxTopicLists bounds the distinct lists of topics shared between groups' rows.
const maxTopicLists = 10000

// chunkGroups is about how many groups a cycle asks and classifies at once.
const chunkGroups = 5000

// chunks cuts groups (sorted) into the chunks a cycle handles one after the other: whole
// offsets partitions of about chunkGroups groups or more, each sorted. Whole partitions,
// because KoP loads or does not serve an offsets partition as a whole: a partition it is
// loading costs one coordinator wait, not one per chunk.
func (w *Watcher) chunks(groups []string) [][]string {
	switch {
	case len(groups) == 0:
		return nil
	case len(groups) <= chunkGroups:
		return [][]string{groups}
	}
	var n int32
	for _, c := range w.clusters {
		if cn, _ := c.partitions(); cn > 0 {
			n = cn
			break
		}
	}
	if n <= 0 {
		return [][]string{groups}
	}
	byPart := make([][]string, n)
	for _, g := range groups {
		p := loader.PartitionFor(g, n)
		byPart[p] = append(byPart[p], g)
	}
	var out [][]string
	var chunk []string
	for _, gs := range byPart {
		chunk = append(chunk, gs...)
		if len(chunk) >= chunkGroups {
			slices.Sort(chunk)
			out, chunk = append(out, chunk), nil
		}
	}
	if len(chunk) > 0 {
		slices.Sort(chunk)
		out = append(out, chunk)
	}
	return out
}

// replayed reports whether every cluster that answers has replayed all its partitions.
func (w *Watcher) replayed() bool {
	for _, c := range w.clusters {
		n, parts := c.partitions()
		if c.adminDown {
			continue // a cluster that does not answer does not hold the others back
		}
		if n == 0 {
			return false
		}
		for _, p := range parts {
			if !p.caught {
				return false
			}
		}
	}
	return true
}

// parallel calls fn with every cluster, each in its own goroutine, and waits for them.
func (w *Watcher) parallel(fn func(c *clusterRT)) {
	var wg sync.WaitGroup
	for _, c := range w.clusters {
		wg.Go(func() { fn(c) })
	}
	wg.Wait()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
