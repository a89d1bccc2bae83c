package watch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// Cluster is one watched cluster and how to reach each side of it.
type Cluster struct {
	Name           string
	KafkaNamespace string // KoP's kafkaTenant/kafkaNamespace, for topic names

	// Tailer follows the offsets topic (persisted side). Required.
	Tailer Tailer
	// Replication gives this cluster's replicators of its offsets partitions toward the
	// others. Nil: no backlog is known from this cluster.
	Replication survey.ReplicationSource
	// Fetcher asks KoP (cached side). Nil: the cached side is not asked.
	Fetcher survey.OffsetFetcher
	// Reloader writes to this cluster (--repair). Nil: watch never writes here.
	Reloader Reloader
}

// Defaults of Options.
const (
	DefaultInterval   = 30 * time.Second
	DefaultResync     = 10 * time.Minute
	DefaultMaxBundles = 1
	DefaultCooldown   = 10 * time.Minute
	DefaultBackoff    = time.Second
	DefaultMaxBackoff = time.Minute
)

// maxPending bounds the replicated commits tracked for staleness per cluster.
const maxPending = 100000

// Options tune a Watcher. The zero value works (defaults above, no repair).
type Options struct {
	Groups []string // globs (path.Match); none: every group
	Topics []string // globs on the short and the full topic name; none: every topic

	Interval time.Duration // between cycles
	Resync   time.Duration // between full sweeps (every group asked)
	// CallTimeout bounds each remote call of a cycle on one cluster (default Interval,
	// at most 30s), so that a cluster that hangs delays no other.
	CallTimeout time.Duration

	Repair     bool
	DryRun     bool          // with Repair: log and count what would be reloaded, write nothing
	MaxBundles int           // reloads per cluster and cycle (one cycle per Interval)
	Cooldown   time.Duration // between two reloads of one bundle
	// RepairWait is how long one bundle's reload may take (the executor's verification
	// wait); it only widens the bound /healthz allows a cycle.
	RepairWait time.Duration

	Backoff, MaxBackoff time.Duration // reconnects of a failed reader or admin call
	// ExpiryWarning is the window of the expiring status, as check's (0: check's default;
	// negative: never).
	ExpiryWarning time.Duration
	// RowSeries is which rows /metrics writes series of (default RowSeriesAll).
	RowSeries RowSeries

	Logger  *slog.Logger // decisions, one JSON line each; default: discarded
	Metrics *Metrics     // default: NewMetrics()
	Now     func() time.Time
}

// Watcher watches clusters. Create it with New, run it with Run.
type Watcher struct {
	o        Options
	m        *Metrics
	log      *slog.Logger
	clusters []*clusterRT

	// Owned by the cycle.
	rows       map[string]*verdict.PackedRows // by group; each replaced whole, never changed
	topicLists map[string][]string            // the rows' lists of topics, each kept once (emptied at a resync)
	lastResync time.Time

	report atomic.Pointer[snapshot]
	ready  atomic.Bool
	cycles atomic.Int64
	last   atomic.Int64 // unix nanos of the last cycle end
}

// clusterRT is the run-time state of one cluster.
type clusterRT struct {
	Cluster

	mu    sync.Mutex // n and parts, set once the partition count is known
	n     int32
	parts []*partition

	// Owned by the cycle.
	up, kopUp  bool
	probed     bool              // up is known
	adminDown  bool              // the last probe of the admin API failed
	kopKnown   bool              // kopUp is known
	cached     map[string]answer // KoP's answers by group, of this cycle only (nil between cycles)
	repl       map[int32]map[string]verdict.Inbound
	leo        map[string]map[int32]int64 // full topic -> partition -> log-end offset
	pending    map[verdict.Key]arrival
	lastReload map[string]time.Time
}

// New returns a Watcher of clusters.
func New(clusters []Cluster, o Options) *Watcher {
	o.Interval = cmp.Or(o.Interval, DefaultInterval)
	o.Resync = cmp.Or(o.Resync, DefaultResync)
	o.CallTimeout = cmp.Or(o.CallTimeout, min(o.Interval, 30*time.Second))
	o.MaxBundles = cmp.Or(o.MaxBundles, DefaultMaxBundles)
	o.Cooldown = cmp.Or(o.Cooldown, DefaultCooldown)
	o.Backoff = cmp.Or(o.Backoff, DefaultBackoff)
	o.MaxBackoff = max(cmp.Or(o.MaxBackoff, DefaultMaxBackoff), o.Backoff)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ExpiryWarning == 0 {
		o.ExpiryWarning = survey.DefaultExpiryWarning
	}
	o.RowSeries = cmp.Or(o.RowSeries, RowSeriesAll)
	if o.Metrics == nil {
		o.Metrics = NewMetrics()
	}
	lg := o.Logger
	if lg == nil {
		lg = slog.New(slog.NewJSONHandler(io.Discard, nil))
	}
	w := &Watcher{o: o, m: o.Metrics, log: lg, rows: map[string]*verdict.PackedRows{}}
	for _, c := range clusters {
		w.clusters = append(w.clusters, &clusterRT{Cluster: c, cached: map[string]answer{},
			repl: map[int32]map[string]verdict.Inbound{}, leo: map[string]map[int32]int64{},
			pending: map[verdict.Key]arrival{}, lastReload: map[string]time.Time{}})
	}
	return w
}

// Metrics returns the collectors the watcher updates.
func (w *Watcher) Metrics() *Metrics { return w.m }

// Report returns the rows as of the last cycle (nil before the first), in check's shape:
// built anew from the packed rows at each call.
func (w *Watcher) Report() *survey.Report {
	if s := w.report.Load(); s != nil {
		return s.report()
	}
	return nil
}

// Ready reports whether a cycle has run and every cluster that answers has replayed all
// of its offsets partitions.
func (w *Watcher) Ready() bool { return w.ready.Load() }

// LastCycle returns when the last cycle ended (zero before the first).
func (w *Watcher) LastCycle() time.Time {
	if n := w.last.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// Run follows every cluster and runs a cycle every Interval until ctx ends. It returns
// after the readers are closed (at most a few seconds after ctx ends).
func (w *Watcher) Run(ctx context.Context) error {
	wait := w.Start(ctx)
	t := time.NewTicker(w.o.Interval)
	defer t.Stop()
	for ctx.Err() == nil {
		w.Cycle(ctx)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
	wait()
	w.log.Info("stopped", "cycles", w.cycles.Load())
	return nil
}

// Start starts the followers of every cluster (they stop when ctx ends); cycles are then
// run with Cycle. wait returns once the followers have stopped, or after 5 seconds.
func (w *Watcher) Start(ctx context.Context) (wait func()) {
	var wg sync.WaitGroup
	for _, c := range w.clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.startCluster(ctx, c, &wg)
		}()
	}
	return func() {
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			w.log.Warn("stopping: readers still closing after 5s; leaving them to the process exit")
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// startCluster learns the partition count (retrying with backoff while the cluster does
// not answer) and starts one follower per offsets partition.
func (w *Watcher) startCluster(ctx context.Context, c *clusterRT, wg *sync.WaitGroup) {
	backoff := w.o.Backoff
	var n int32
	for {
		cctx, cancel := context.WithTimeout(ctx, w.o.CallTimeout)
		var err error
		n, err = c.Tailer.Partitions(cctx)
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		w.m.errors.WithLabelValues(c.Name, "admin").Inc()
		w.log.Warn("offsets topic not readable; retrying", "cluster", c.Name, "err", err.Error(), "retryIn", backoff.String())
		if !sleepCtx(ctx, backoff) {
			return
		}
		backoff = min(2*backoff, w.o.MaxBackoff)
	}
	parts := make([]*partition, n)
	for i := range parts {
		parts[i] = newPartition(int32(i))
	}
	c.mu.Lock()
	c.n, c.parts = n, parts
	c.mu.Unlock()
	w.log.Info("following offsets topic", "cluster", c.Name, "partitions", n)
	for _, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.follow(ctx, c, p)
		}()
	}
}

// follow replays one offsets partition, then follows it; after a failure it starts over
// with a new replay (the old view stays in use until the new one has caught up).
func (w *Watcher) follow(ctx context.Context, c *clusterRT, p *partition) {
	backoff := w.o.Backoff
	for ctx.Err() == nil {
		next := loader.NewReplayer(p.index, loader.OrderingKoP)
		live := false
		start := w.o.Now()
		err := c.Tailer.Tail(ctx, p.index, func(m pulsarx.TailMessage) error {
			if !live {
				_ = next.ApplyMessage(m.Message) // decode errors are counted, never fatal
				return nil
			}
			p.waitRoom(ctx)
			w.m.messages.WithLabelValues(c.Name).Inc()
			for _, a := range p.apply(m, w.o.Now()) {
				w.m.replicated.WithLabelValues(c.Name, a.from).Inc()
				if !a.committed.IsZero() {
					w.m.replDelay.WithLabelValues(c.Name, a.from).Observe(max(0, a.at.Sub(a.committed).Seconds()))
				}
			}
			return nil
		}, func() {
			live = true
			msgs := next.Counts().Messages // next is the cycle's after the swap
			p.swap(next)
			d := w.o.Now().Sub(start)
			w.m.replayDuration.WithLabelValues(c.Name).Observe(d.Seconds())
			w.log.Info("offsets partition replayed; following", "cluster", c.Name, "partition", p.index,
				"messages", msgs, "seconds", d.Seconds())
			backoff = w.o.Backoff
		})
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("reader ended")
		}
		p.failed(err)
		w.m.errors.WithLabelValues(c.Name, "pulsar").Inc()
		w.log.Warn("offsets partition reader failed; replaying again", "cluster", c.Name, "partition", p.index,
			"err", err.Error(), "retryIn", backoff.String())
		if !sleepCtx(ctx, backoff) {
			return
		}
		backoff = min(2*backoff, w.o.MaxBackoff)
	}
}

func (w *Watcher) parallel(fn func(c *clusterRT)) {
	var wg sync.WaitGroup
	for _, c := range w.clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(c)
		}()
	}
	wg.Wait()
}

// partitionOf returns the view of the offsets partition holding group, nil when the
// cluster has not replayed it yet.
func (c *clusterRT) partitionOf(group string) *partition {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n <= 0 {
		return nil
	}
	p := c.parts[loader.PartitionFor(group, c.n)]
	if !p.caught {
		return nil
	}
	return p
}

func (c *clusterRT) partitions() (int32, []*partition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n, c.parts
}

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
	// 6. Repair, only once every cluster that answers has replayed its offsets topic.
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
		if verdict.MatchAny(w.o.Groups, g) {
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

// rebuild classifies the rows of groups again; a group without rows is dropped.
func (w *Watcher) rebuild(groups []string) {
	j, sides := w.judge()
	names := verdict.Names{}
	clusters := w.clusterNames()
	for _, g := range groups {
		rs := w.buildRows(j, sides, names, g)
		if len(rs) == 0 {
			delete(w.rows, g)
			continue
		}
		if p := verdict.Pack(rs, clusters, j); !p.Same(w.rows[g]) {
			p.ShareTopics(w.topicLists, maxTopicLists)
			w.rows[names.Intern(g)] = p
		}
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

// forget drops what belongs to groups gone everywhere: the replicated commits tracked for
// staleness and, on a resync, the log-end offsets of topics no row names and the cooldowns
// that have passed (KoP's answers are the cycle's only). A group is gone when, asked this
// cycle, it has no row and no replayed view holds it (deleted, or expired by KoP): memory
// follows the live groups, not every group that ever existed.
func (w *Watcher) forget(asked []string, resync bool, now time.Time) {
	gone := map[string]bool{}
	isGone := func(g string) {
		if _, ok := w.rows[g]; !ok && !w.held(g) {
			gone[g] = true
		}
	}
	for _, g := range asked {
		isGone(g)
	}
	if resync {
		// A full sweep: whatever an earlier cycle left.
		for _, c := range w.clusters {
			for k := range c.pending {
				isGone(k.Group)
			}
		}
	}
	for _, c := range w.clusters {
		if len(gone) > 0 {
			for k := range c.pending {
				if gone[k.Group] {
					delete(c.pending, k)
				}
			}
		}
		if !resync {
			continue
		}
		w.forgetTopics(c)
		for r, at := range c.lastReload {
			if now.Sub(at) >= w.o.Cooldown {
				delete(c.lastReload, r)
			}
		}
	}
}

// held reports whether a replayed view of any cluster holds group.
func (w *Watcher) held(group string) bool {
	for _, c := range w.clusters {
		if p := c.partitionOf(group); p != nil && p.holds(group) {
			return true
		}
	}
	return false
}

// forgetTopics drops c's log-end offsets of topics no row names.
func (w *Watcher) forgetTopics(c *clusterRT) {
	named := map[string]bool{}
	for _, rs := range w.rows {
		for _, t := range rs.Topics() {
			named[t] = true
		}
	}
	for t := range c.leo {
		if !named[t] {
			delete(c.leo, t)
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// track records a replicated commit KoP on c has to serve; the earliest arrival of a key
// stays (the staleness is since the first commit KoP did not serve), the offset is the
// newest.
func (c *clusterRT) track(a arrival, m *Metrics) {
	if old, ok := c.pending[a.key]; ok {
		a.at = old.at
		a.offset = max(a.offset, old.offset)
	} else if len(c.pending) >= maxPending {
		m.dropped.WithLabelValues(c.Name).Inc()
		return
	}
	c.pending[a.key] = a
}

// fetch reads the replication stats of the offsets partitions of groups, asks KoP for
// groups and the log-end offsets of their topics.
func (w *Watcher) fetch(ctx context.Context, c *clusterRT, groups []string) {
	if !c.up {
		return
	}
	n, _ := c.partitions()
	if c.Replication != nil && len(w.clusters) > 1 && n > 0 {
		need := map[int32]bool{}
		for _, g := range groups {
			need[loader.PartitionFor(g, n)] = true
		}
		for _, p := range slices.Sorted(mapKeys(need)) {
			cctx, cancel := context.WithTimeout(ctx, w.o.CallTimeout)
			st, err := c.Replication.OutboundReplication(cctx, p)
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					w.m.errors.WithLabelValues(c.Name, "admin").Inc()
					w.log.Warn("replication stats", "cluster", c.Name, "offsetsPartition", p, "err", err.Error())
				}
				break
			}
			c.repl[p] = st
		}
	}
	if c.Fetcher == nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, w.o.CallTimeout)
	defer cancel()
	t0 := time.Now()
	failed := 0
	var firstErr error
	names := verdict.Names{}
	c.cached = make(map[string]answer, len(groups))
	keep := func(g string, f verdict.GroupFetch) {
		if f.Err != nil && !f.Unavailable {
			failed++
			firstErr = cmp.Or(firstErr, f.Err)
		}
		c.cached[g] = newAnswer(f, c.KafkaNamespace, names)
	}
	// Each answer is compacted as it comes: a resync asks every group, and kafkafetch's
	// maps of every group at once were watch's largest peak (about 260 B per key).
	c.Fetcher.EachOffsets(cctx, groups, keep)
	for _, g := range groups {
		if _, ok := c.cached[g]; !ok {
			keep(g, verdict.GroupFetch{Err: fmt.Errorf("group %s: no answer", g)})
		}
	}
	w.m.fetchDuration.WithLabelValues(c.Name).Observe(time.Since(t0).Seconds())
	w.m.groupsFetched.WithLabelValues(c.Name).Add(float64(len(groups)))
	if ctx.Err() != nil {
		return
	}
	kopUp := failed < len(groups)
	if failed > 0 {
		w.m.errors.WithLabelValues(c.Name, "kafka").Inc()
	}
	if kopUp != c.kopUp || !c.kopKnown {
		if kopUp {
			w.log.Info("KoP answers", "cluster", c.Name)
		} else {
			w.log.Warn("KoP does not answer OffsetFetch", "cluster", c.Name, "groups", len(groups), "err", firstErr.Error())
		}
	}
	c.kopUp, c.kopKnown = kopUp, true
	w.m.kopUp.WithLabelValues(c.Name).Set(b2f(kopUp))
	if !kopUp {
		return
	}
	topics := map[string]bool{}
	for _, g := range groups {
		if p := c.partitionOf(g); p != nil {
			for co := range p.offsetsOf(g) {
				topics[loader.ShortName(co.Topic, c.KafkaNamespace)] = true
			}
		}
		for _, o := range c.cached[g].offs {
			topics[loader.ShortName(o.topic, c.KafkaNamespace)] = true
		}
	}
	if len(topics) == 0 {
		return
	}
	leo, err := c.Fetcher.EndOffsets(cctx, slices.Sorted(mapKeys(topics)))
	if err != nil {
		w.log.Warn("log-end offsets", "cluster", c.Name, "err", err.Error())
	}
	for t, ps := range leo {
		c.leo[loader.NormalizeTopic(t, c.KafkaNamespace)] = ps
	}
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// judge is the row engine for this cycle, and every cluster as it sees it.
func (w *Watcher) judge() (*verdict.Judge, []verdict.Side) {
	return &verdict.Judge{Now: w.o.Now(), ExpiryWarning: w.o.ExpiryWarning, DisplayNamespace: w.displayNamespace()}, w.sides()
}

// inbound is the replication of group's offsets partition from every peer toward c.
func (w *Watcher) inbound(c *clusterRT, group string) map[string]verdict.Inbound {
	return verdict.InboundFor(w.sides(), c.Name, group)
}

// sides are the clusters as the row engine sees them.
func (w *Watcher) sides() []verdict.Side {
	sides := make([]verdict.Side, len(w.clusters))
	for i, c := range w.clusters {
		n, _ := c.partitions()
		sd := verdict.Side{Name: c.Name, Namespace: c.KafkaNamespace, Partitions: n, EndOffsets: c.leo,
			Persisted: c.view}
		if c.up {
			sd.Outbound = c.repl // a cluster down: what it said before is stale
		}
		if c.Fetcher != nil {
			sd.Cached = c.cachedSide()
		}
		sides[i] = sd
	}
	return sides
}

// cachedSide is Side.Cached of c: the answers in kafkafetch's shape, each rebuilt once for
// the rows of its group (the engine asks once per row).
func (c *clusterRT) cachedSide() func(string) (verdict.GroupFetch, bool) {
	var last string
	var f verdict.GroupFetch
	var ok, built bool
	return func(g string) (verdict.GroupFetch, bool) {
		if v, _ := c.view(g); v == nil {
			return verdict.GroupFetch{}, false // unreachable: an older answer says nothing
		}
		if !built || g != last {
			var a answer
			a, ok = c.cached[g]
			last, f, built = g, a.fetch(), true
		}
		return f, ok
	}
}

// view is the loader view holding group, or why there is none.
func (c *clusterRT) view(group string) (*loader.PersistedOffsets, string) {
	if !c.up {
		return nil, "cluster down: its admin API does not answer or an offsets partition is not followed"
	}
	p := c.partitionOf(group)
	if p == nil {
		return nil, "offsets partition not replayed yet"
	}
	return p.view, ""
}

// buildRows classifies every topic partition of group across the clusters.
func (w *Watcher) buildRows(j *verdict.Judge, sides []verdict.Side, names verdict.Names, group string) []verdict.Row {
	ks := verdict.KeySet{Names: names}
	for _, c := range w.clusters {
		if p := c.partitionOf(group); p != nil {
			for co := range p.offsetsOf(group) {
				ks.AddPersisted(co, c.KafkaNamespace)
			}
			for _, co := range p.pendingBy[group] {
				ks.AddPersisted(co, c.KafkaNamespace)
			}
		}
		if c.Fetcher != nil {
			for _, o := range c.cached[group].offs {
				ks.Add(group, o.topic, o.partition)
			}
		}
	}
	keys := ks.Sorted(w.o.Topics, w.displayNamespace())
	if keys.Len() == 0 {
		return nil
	}
	rows := make([]verdict.Row, keys.Len())
	for i := range rows {
		rows[i] = j.Row(keys.At(i), sides)
	}
	return rows
}

func (w *Watcher) displayNamespace() string {
	if len(w.clusters) > 0 {
		return w.clusters[0].KafkaNamespace
	}
	return ""
}

// settle ends the staleness episodes of c that KoP now serves, among the groups it was just
// asked about (c.cached).
func (w *Watcher) settle(c *clusterRT, now time.Time) {
	for k, a := range c.pending {
		f, ok := c.cached[k.Group] // only groups asked have an answer
		if ok && f.err == nil {
			v, has := f.offset(k.Topic, k.Partition)
			var persisted *int64
			if p := c.partitionOf(k.Group); p != nil {
				for co := range p.offsetsOf(k.Group) {
					if co.Partition == k.Partition && loader.NormalizeTopic(co.Topic, c.KafkaNamespace) == k.Topic {
						persisted = &co.Offset
					}
				}
			}
			// Served: KoP has the commit (or a later one), or serves exactly what its topic
			// holds (an aborted or deleted commit will never be served).
			if (has && v >= a.offset) || (has && persisted != nil && v == *persisted) || (!has && persisted == nil) {
				d := max(now.Sub(a.at), 0)
				w.m.stalenessServed.WithLabelValues(c.Name).Observe(d.Seconds())
				w.log.Info("replicated commit served", "cluster", c.Name, "group", k.Group, "topic", k.Topic,
					"partition", k.Partition, "offset", a.offset, "from", a.from, "stalenessSeconds", d.Seconds())
				delete(c.pending, k)
			}
		}
	}
}

// staleness publishes the age of c's oldest replicated commit KoP does not serve yet.
func (w *Watcher) staleness(c *clusterRT, now time.Time) {
	oldest := 0.0
	for _, a := range c.pending {
		oldest = max(oldest, now.Sub(a.at).Seconds())
	}
	w.m.staleness.WithLabelValues(c.Name).Set(oldest)
	w.m.staleCommits.WithLabelValues(c.Name).Set(float64(len(c.pending)))
}

// clusterNames are the names of the clusters, in order (the cells of a row).
func (w *Watcher) clusterNames() []string {
	names := make([]string, len(w.clusters))
	for i, c := range w.clusters {
		names[i] = c.Name
	}
	return names
}

// snapshot is the report of this cycle: the rows of every group, shared with the cycle (a
// PackedRows is replaced, never changed), and the report's other fields, with check's exit
// code for the same rows.
func (w *Watcher) snapshot() *snapshot {
	s := &snapshot{head: survey.Report{SchemaVersion: 1, Summary: map[string]int{}},
		displayNS: w.displayNamespace(), groups: make([]*verdict.PackedRows, 0, len(w.rows)), series: w.o.RowSeries}
	for _, c := range w.clusters {
		s.head.Clusters = append(s.head.Clusters, c.Name)
	}
	for _, g := range slices.Sorted(mapKeys(w.rows)) {
		rs := w.rows[g]
		s.groups = append(s.groups, rs)
		notOK := false
		for st := range rs.Statuses() {
			s.head.Summary[string(st)]++
			notOK = notOK || st != verdict.StatusOK
		}
		if notOK {
			s.notOK = append(s.notOK, rs)
		}
		s.rows += rs.Len()
	}
	for _, c := range w.clusters {
		if !c.up {
			s.head.Errors = append(s.head.Errors, survey.ClusterError{Cluster: c.Name, Endpoint: "pulsar",
				Error: fmt.Sprintf("cluster %s: down (admin API or offsets topic not answering)", c.Name)})
		}
	}
	s.head.ExitCode = verdict.ExitCode(s.head.Summary, len(s.head.Errors) > 0, false, nil)
	return s
}
