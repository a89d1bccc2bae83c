package watch

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/offsetsync"
	"github.com/kop-offsets/kop-offsets/internal/standby"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
	"github.com/kop-offsets/kop-offsets/internal/watch/keepjob"
	"github.com/kop-offsets/kop-offsets/internal/watch/repairjob"
	"github.com/kop-offsets/kop-offsets/internal/watch/syncjob"
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
	// Keeper keeps the translations of the commits replicated here (--keep-translations).
	// Nil: none is kept.
	Keeper *standby.Keeper
	// KeepLease is the cluster's writer lease, taken for each cycle's keeping and given back
	// after it: while another process holds it (a watch --sync, a failover, a repair), no
	// translation is kept here and the groups wait for the next cycle. Nil: no lease.
	KeepLease SyncLease
	// Committer commits and deletes offsets through KoP's Kafka front door, and Members
	// says where groups are live (--sync). Nil: the cluster is not synced.
	Committer offsetsync.Committer
	Members   GroupDescriber
	// Data reads the cluster's copies of the data topics, to translate (--sync).
	Data align.Source
	// SyncLease is the cluster's writer lease, held while this process syncs (--sync):
	// of two replicas, the one holding every lease syncs, the other waits. Nil: no lease.
	SyncLease SyncLease
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

	// Sync syncs every group from its source to the other clusters through KoP's
	// OffsetCommit (package offsetsync), translating with SyncPool; every Cluster needs a
	// Committer, Members and Data. SplitBrainWindow: own commits of a group on two clusters
	// this close are two writers. SyncMaxMessages bounds the first translation's reads per
	// copy (default align.DefaultMaxMessages). DryRun: log and count, commit nothing.
	Sync             bool
	SplitBrainWindow time.Duration
	SyncMaxMessages  int64
	// SyncWindow is how long a group whose commit was read waits for more of its commits
	// before it is synced (default streamsync.DefaultWindow); SyncRetry is when a group
	// left for later is synced again (default streamsync.DefaultRetry).
	SyncWindow, SyncRetry time.Duration

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

// Watcher watches clusters: the composition of the followers, the exporter (always) and
// the jobs the Options ask for (sync, kept translations, repair), each its own type that the
// cycle knows only as a job.Job. Create it with New, run it with Run.
type Watcher struct {
	o        Options
	m        *Metrics
	log      *slog.Logger
	clusters fleet
	exp      *exporter

	sync   *syncjob.Job   // nil unless Options.Sync
	keep   *keepjob.Job   // kept translations of the clusters with a Keeper
	repair *repairjob.Job // nil unless Options.Repair

	cycles atomic.Int64
	last   atomic.Int64 // unix nanos of the last cycle end
}

// New returns a Watcher of clusters.
func New(clusters []Cluster, o Options) *Watcher {
	o = withDefaults(o)
	w := &Watcher{o: o, m: o.Metrics, log: o.Logger}
	for _, c := range clusters {
		w.clusters = append(w.clusters, &clusterRT{Cluster: c, cached: map[string]answer{},
			repl: map[int32]map[string]verdict.Inbound{}, leo: map[string]map[int32]int64{},
			pending: map[verdict.Key]arrival{}})
	}
	w.exp = &exporter{o: &w.o, m: w.m, log: w.log, clusters: w.clusters,
		rows: &rowBook{o: &w.o, clusters: w.clusters, groups: map[string]*verdict.PackedRows{}}}
	w.keep = keepjob.New(w.keepClusters, keepjob.Options{Groups: o.Groups, Topics: o.Topics, DryRun: o.DryRun, CallTimeout: o.CallTimeout},
		w.env(), w.m.keep)
	if o.Sync {
		w.sync = w.newSyncJob()
	}
	if o.Repair {
		w.repair = repairjob.New(w.repairTargets, repairjob.Options{DryRun: o.DryRun, MaxBundles: o.MaxBundles, Cooldown: o.Cooldown, CallTimeout: o.CallTimeout},
			w.env(), w.m.repair)
	}
	return w
}

// withDefaults is o with every zero that has a default set to it.
func withDefaults(o Options) Options {
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
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	}
	return o
}

// Metrics returns the collectors the watcher updates.
func (w *Watcher) Metrics() *Metrics { return w.m }

// Report returns the rows as of the last cycle (nil before the first), in check's shape:
// built anew from the packed rows at each call.
func (w *Watcher) Report() *survey.Report {
	if s := w.exp.report.Load(); s != nil {
		return s.report()
	}
	return nil
}

// Ready reports whether a cycle has run and every cluster that answers has replayed all
// of its offsets partitions.
func (w *Watcher) Ready() bool { return w.exp.ready.Load() }

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

// Start starts the followers of every cluster and the jobs that run beside the cycles
// (sync, keeping: they stop when ctx ends); cycles are then run with Cycle. wait returns
// once they have stopped, or after 5 seconds.
func (w *Watcher) Start(ctx context.Context) (wait func()) {
	return w.start(ctx, true)
}

// start is Start, with the jobs started or not (SyncOnce runs one sweep itself).
func (w *Watcher) start(ctx context.Context, jobs bool) (wait func()) {
	var wg sync.WaitGroup
	if jobs {
		for _, j := range w.jobs() {
			if run := j.Start(); run != nil { // before the followers, which feed their Stores
				wg.Go(func() { run(ctx) })
			}
		}
	}
	f := &follower{o: &w.o, m: w.m, log: w.log, store: w.store}
	for _, c := range w.clusters {
		wg.Go(func() { f.startCluster(ctx, c, &wg) })
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

// Cycle runs one cycle: the exporter's (see exporter.cycle), then every job's, told what the
// cycle found. Run calls it every Interval; tests call it directly.
func (w *Watcher) Cycle(ctx context.Context) {
	start := w.o.Now()
	c, rows, ok := w.exp.cycle(ctx, start, w.cycles.Load() == 0)
	if !ok {
		return
	}
	for _, j := range w.jobs() {
		j.AfterCycle(ctx, c)
	}
	end := w.o.Now()
	w.cycles.Add(1)
	w.last.Store(end.UnixNano())
	w.m.cycles.Inc()
	w.m.cycleDuration.Observe(end.Sub(start).Seconds())
	w.m.lastCycle.Set(float64(end.UnixMilli()) / 1000)
	w.log.Debug("cycle", "groupsAsked", len(c.Asked), "resync", c.Resync, "rows", rows, "seconds", end.Sub(start).Seconds())
}
