// Package watch implements `kop-offsets watch`: a long-running exporter that follows every
// cluster's offsets topic, serves Prometheus metrics over HTTP and, with --repair, reloads
// stale bundles under a policy. The engine is internal/watch; this package binds flags,
// builds the clients from the Factory and runs the HTTP server.
package watch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/scope"
	"github.com/kop-offsets/kop-offsets/internal/commands/session"
	"github.com/kop-offsets/kop-offsets/internal/commands/watchwire"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/reload"
	"github.com/kop-offsets/kop-offsets/internal/watch"
)

// DefaultListen is the default of --listen: loopback only; expose it on purpose.
const DefaultListen = "127.0.0.1:9464"

// BuildFunc builds the watched clusters from the selected ones; all is every configured
// cluster. release closes the clients.
type BuildFunc func(sel, all []config.Cluster, o *Options) (cls []watch.Cluster, release func(), err error)

// Options of `watch`.
type Options struct {
	IO       *iostreams.IOStreams
	Targets  func() (sel, all []config.Cluster, err error)
	Build    BuildFunc
	Logger   *slog.Logger
	Listener func(addr string) (net.Listener, error)
	// NamedTenant is the tenant watched in a multi-tenant config (one watch per tenant):
	// every series carries it as a label ("": none; nil: none).
	NamedTenant func() (string, error)

	Groups          []string
	Topics          []string
	Interval        time.Duration
	Resync          time.Duration
	Listen          string
	Repair          bool
	RefuseLive      bool
	DryRun          bool
	MaxBundles      int
	Cooldown        time.Duration
	Wait            time.Duration
	CoordinatorWait time.Duration
	Timeout         time.Duration
	RowSeries       string
	Writes          session.Writes
	// KeepTranslations writes kept translations on the selected clusters (package standby).
	KeepTranslations bool
	AlignmentMax     int64
	// Sync syncs every group's offsets between the selected clusters through KoP's
	// OffsetCommit (docs/sync.md).
	Sync             bool
	SplitBrainWindow time.Duration
}

// watchLong is the long help of the command.
const watchLong = `
A long-running exporter. For every selected cluster (--cluster; default all) it replays each
offsets partition once, as KoP's loader does, then follows it with non-durable readers: the
work of a cycle grows with the commits that arrived, not with the topic. Every --interval it
asks KoP (OffsetFetch, batched) about the groups whose persisted offsets changed, the groups
still stale, and every --resync all groups, and classifies them as 'check' does.

Commits that arrived by geo-replication are noticed (the message's replicated-from cluster):
kop_offsets_staleness_seconds is, per cluster, the age of the oldest replicated commit KoP
does not serve yet, and kop_offsets_staleness_served_seconds the time it took once served.

HTTP on --listen: /metrics (the series of 'check --prometheus-file' plus watch's own),
/healthz (the cycle loop runs), /readyz (the initial replay is done on every cluster that
answers, and at least one cluster answers). Logs: JSON lines on stderr, one per decision.
Every row has 17 series per cluster, about 1.7 KB of text per row and cluster: with many
groups, --row-series not-ok writes only the rows whose status is not ok (those alerts are
about), and --row-series none writes none; kop_offsets_watch_rows{status} counts the rows.

--repair reloads (as 'kop-offsets reload' does: unload, lookup, verification) the bundles
holding stale_cache rows on the selected clusters, under a policy; each refusal is logged
and counted in kop_offsets_watch_reloads_refused_total{reason}:
  live_members           a group of the bundle has unknown activity (KoP did not answer
                         DescribeGroups) on the cluster written to, or, with
                         --refuse-live, members there. Groups live there are otherwise
                         reloaded (their members pause while KoP loads; their own
                         commits are no loss: docs/reload.md); live elsewhere is only
                         reported
  would_lose_offsets     reload's loader model says the reload would move an offset KoP
                         serves back, or drop it
  refused_by_reload      reload refused the bundle for another reason
  replication_backlog    the group's offsets partition still has replication backlog
                         toward this cluster
  cooldown               the bundle was reloaded less than --cooldown ago
  max_bundles            --max-bundles bundles were already reloaded this interval
  earlier_bundle_failed  a reload of this cycle did not end verified
  stopping               SIGINT/SIGTERM arrived; an unload in flight is looked up again
  lease_held             another process (a repair, a reload, another watch, on any
                         host) holds the cluster's writer lease: tried again next cycle
  lease_failed           the writer lease could not be taken (lock topic, cluster down)
--dry-run logs what it would reload and writes nothing.

--keep-translations makes the selected clusters standbys that are right on their own: after
every commit that replicates to one of them, watch translates its offset into that
cluster's numbering (the first message the group has not consumed on the source, read
through both clusters' KoP listeners, incrementally) and writes it back into the cluster's
offsets topic in KoP's format, with replication disabled and the source's commit named in
the message's properties. Any load of the cluster then serves numbers that skip nothing,
and 'failover --to' lands every group there when the source is gone (docs/failover.md).
Only commits whose source answers are kept; kop_offsets_watch_kept_translations_total
counts them. --dry-run logs what it would keep.

--sync is the other deployment model (docs/sync.md): the offsets topic is not replicated
between the selected clusters (kop-offsets sync setup), and watch is the only path offsets
take between them. Sync streams: as each commit of a group is read from an offsets topic
(the commits of the next 5 ms coalesced), the group is synced from its source (the one
cluster where it has members; with none, the cluster of its newest own commit) to every
other selected cluster where it has no members: its offsets translated by message identity
and committed through KoP's OffsetCommit, which KoP serves at once, with no unload.
--interval paces the exporter, not sync. The tool's commits carry a mark in their metadata
and are never synced back; the newest intent wins: a reset of the group on its source moves
the other clusters back to the reset point, and a target's own newer commit is never moved
back; a group live on two clusters at once (or, with
--split-brain-window, committing on both that close in time) is reported and left alone;
offsets the source deleted are deleted on the targets it synced them to. Each commit and
delete is appended to the audit trail (one record per group, target and sync; the
metadata's mark names the source). watch --sync refuses to start while the offsets topic replicates
between the selected clusters. kop_offsets_sync_commits_total and
kop_offsets_sync_latency_seconds count the commits and their delay. Run two replicas: the
one that holds the writer lease of every synced cluster syncs (kop_offsets_sync_active 1)
and keeps them for as long as it runs; the other follows and exports, and takes over
within a second of the leases expiring with the holder's connections.

One writer per cluster: before a cycle's first unload on a cluster, --repair takes the
cluster's writer lease (an exclusive producer on --lease-topic, default
persistent://<tenant>/kop-offsets/writer-lease), and gives it back after the cycle's last,
so a cron repair or an operator's reload can run between two cycles but never during
one. Following, exporting and /readyz never wait for it. Every unload and lookup is
appended to the audit trail (--audit-file); 'kop-offsets history' reads it back.

A cluster that goes away is marked down (kop_offsets_watch_cluster_up 0) and reconnected
with backoff; the others are unaffected. SIGINT or SIGTERM stops it within a few seconds.`

// DefaultCoordinatorWait is watch's --coordinator-wait: check's (kop.DefaultCoordinatorWait)
// is longer, as a one-shot check has no next cycle.
const DefaultCoordinatorWait = 5 * time.Second

// NewCmdWatch returns `watch`. runF replaces the run function in tests.
func NewCmdWatch(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Follow every cluster's offsets topic, export Prometheus metrics, optionally repair stale caches",
		Long:  strings.TrimSpace(watchLong),
		Example: cmdutil.Examples(`
  kop-offsets watch
  kop-offsets watch --listen 0.0.0.0:9464 --interval 15s
  kop-offsets watch --row-series not-ok          # a million keys: only the rows to act on
  kop-offsets watch --repair --cluster wus --dry-run
  kop-offsets watch --repair --group 'orders-*' --max-bundles 2 --cooldown 5m
  kop-offsets watch --keep-translations --cluster wus   # wus: a standby right without scus
  kop-offsets sync setup --yes && kop-offsets watch --sync`),
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := onlyWith(cmd, "--repair", opts.Repair, "refuse-live", "max-bundles", "cooldown", "wait"); err != nil {
				return err
			}
			if err := onlyWith(cmd, "--sync", opts.Sync, "split-brain-window"); err != nil {
				return err
			}
			if err := onlyWith(cmd, "--keep-translations or --sync", opts.KeepTranslations || opts.Sync, "alignment-max-messages"); err != nil {
				return err
			}
			if err := opts.validate(); err != nil {
				return err
			}
			level := slog.LevelInfo
			if f.Flags.Verbose {
				level = slog.LevelDebug
			}
			if opts.Logger == nil {
				lg := slog.New(slog.NewJSONHandler(f.IOStreams.ErrOut, &slog.HandlerOptions{Level: level}))
				opts.Logger = lg
				// The client libraries (with --verbose) log through the Factory: JSON too.
				f.Logger = func() *slog.Logger { return lg }
			}
			opts.Timeout = f.Flags.Timeout
			if opts.NamedTenant == nil {
				opts.NamedTenant = func() (string, error) { return scope.NamedTenant(f) }
			}
			if opts.Targets == nil {
				opts.Targets = scope.Targets(f)
			}
			if opts.Build == nil {
				opts.Build = FactoryBuild(f)
			}
			if runF != nil {
				return runF(opts)
			}
			return watchRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	cmdutil.PatternsVar(fl, &opts.Groups, "group", "group name or glob, repeatable (default: every group)")
	cmdutil.PatternsVar(fl, &opts.Topics, "topic", "topic name or glob, short or full name, repeatable (default: every topic)")
	fl.DurationVar(&opts.Interval, "interval", watch.DefaultInterval, "time between two cycles (KoP asked about what changed)")
	fl.DurationVar(&opts.Resync, "resync", watch.DefaultResync, "time between two full sweeps (every group asked)")
	fl.StringVar(&opts.Listen, "listen", DefaultListen, "address of the HTTP server (/metrics, /healthz, /readyz)")
	fl.BoolVar(&opts.Repair, "repair", false, "reload bundles holding stale_cache rows, under the policy")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "with --repair or --keep-translations: log what would be reloaded or kept, write nothing")
	fl.BoolVar(&opts.KeepTranslations, "keep-translations", false, "after each commit replicated to a selected cluster, write its translated offset there (replication disabled): the standby is right without the source")
	fl.BoolVar(&opts.Sync, "sync", false, "sync every group's offsets between the selected clusters through KoP's OffsetCommit (the offsets topic not replicated between them: kop-offsets sync setup)")
	fl.DurationVar(&opts.SplitBrainWindow, "split-brain-window", 0, "with --sync: own commits of a group without members on two clusters this close in time are two writers, not synced (0: the newest commit wins, as when a group moves: it stops on one cluster and commits on the other seconds later)")
	fl.Int64Var(&opts.AlignmentMax, "alignment-max-messages", align.DefaultMaxMessages, "with --keep-translations or --sync: messages read at most per copy of a topic partition for its first translation")
	fl.BoolVar(&opts.RefuseLive, "refuse-live", false, "with --repair: leave bundles with groups live on the cluster written to (by default they are reloaded: their members pause while KoP loads)")
	fl.IntVar(&opts.MaxBundles, "max-bundles", watch.DefaultMaxBundles, "with --repair: bundles reloaded at most per cluster and cycle (one per --interval); the others wait for the next cycle")
	fl.DurationVar(&opts.Cooldown, "cooldown", watch.DefaultCooldown, "with --repair: minimum time between two reloads of one bundle")
	fl.DurationVar(&opts.Wait, "wait", reload.DefaultWait, "with --repair: how long to wait, per bundle, for KoP to serve the persisted offsets")
	// Shorter than check's: a group still loading is asked again at the next cycle, and a
	// long wait would hold the whole cycle.
	fl.DurationVar(&opts.CoordinatorWait, "coordinator-wait", DefaultCoordinatorWait, "how long to retry groups KoP is loading or not coordinating, per cycle (a group still loading is asked again at the next)")
	fl.StringVar(&opts.RowSeries, "row-series", string(watch.RowSeriesAll), "rows /metrics writes series of: all, not-ok (rows whose status is not ok) or none (kop_offsets_watch_rows counts them)")
	session.BindWriteFlags(fl, &opts.Writes, false)
	return cmd
}

// onlyWith refuses flags given (names, without dashes) that only apply with mode, when mode
// is off: a --cooldown without --repair would otherwise be accepted and do nothing.
func onlyWith(cmd *cobra.Command, mode string, on bool, names ...string) error {
	if on {
		return nil
	}
	for _, n := range names {
		if cmd.Flags().Changed(n) {
			return cmdutil.FlagErrorf("--%s only applies with %s", n, mode)
		}
	}
	return nil
}

func (o *Options) validate() error {
	switch {
	case o.Interval <= 0:
		return cmdutil.FlagErrorf("--interval must be positive, got %s", o.Interval)
	case o.Resync < o.Interval:
		return cmdutil.FlagErrorf("--resync (%s) must not be shorter than --interval (%s)", o.Resync, o.Interval)
	case o.MaxBundles < 1:
		return cmdutil.FlagErrorf("--max-bundles must be at least 1, got %d", o.MaxBundles)
	case o.Cooldown < 0:
		return cmdutil.FlagErrorf("--cooldown must not be negative, got %s", o.Cooldown)
	case o.Wait <= 0:
		return cmdutil.FlagErrorf("--wait must be positive, got %s", o.Wait)
	case o.CoordinatorWait <= 0:
		return cmdutil.FlagErrorf("--coordinator-wait must be positive, got %s", o.CoordinatorWait)
	case o.DryRun && !o.Repair && !o.KeepTranslations && !o.Sync:
		return cmdutil.FlagErrorf("--dry-run only applies to --repair, --keep-translations and --sync")
	case o.Sync && (o.Repair || o.KeepTranslations):
		return cmdutil.FlagErrorf("--sync is a deployment model of its own (the offsets topic not replicated): it excludes --repair and --keep-translations")
	case o.SplitBrainWindow < 0:
		return cmdutil.FlagErrorf("--split-brain-window must not be negative, got %s", o.SplitBrainWindow)
	case o.AlignmentMax <= 0:
		return cmdutil.FlagErrorf("--alignment-max-messages must be positive, got %d", o.AlignmentMax)
	}
	if err := o.Writes.Validate(); err != nil {
		return err
	}
	if _, err := watch.ParseRowSeries(o.RowSeries); err != nil {
		return cmdutil.FlagErrorf("--row-series: %v", err)
	}
	if _, _, err := net.SplitHostPort(o.Listen); err != nil {
		return cmdutil.FlagErrorf("--listen %q: %v", o.Listen, err)
	}
	return nil
}

func watchRun(ctx context.Context, opts *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	sel, all, err := opts.Targets()
	if err != nil {
		return err
	}
	tenant := ""
	if opts.NamedTenant != nil {
		if tenant, err = opts.NamedTenant(); err != nil {
			return err
		}
	}
	ln, err := opts.listen()
	if err != nil {
		return cmdutil.UsageError(fmt.Errorf("--listen %s: %w", opts.Listen, err))
	}
	defer func() { _ = ln.Close() }() // Shutdown closes it first; a second close only errs
	cls, release, err := opts.Build(sel, all, opts)
	if err != nil {
		return err
	}
	defer releaseBounded(release, opts.Logger)

	// watch's heap is nearly all its packed rows and replayed state for as long as it runs,
	// mostly pointer-free: a 1.1x GC target instead of 2x keeps its peak near the live heap
	// (BenchmarkWatchSteadyState at a million keys: 245 B per key; 262 B at 1.15x, 481 B at
	// 1.5x), for 10% to 15% more CPU than at 1.15x. GOGC set by the user wins.
	restoreGC := cmdutil.CompactGC(cmdutil.GCWatch)
	defer restoreGC()
	logger := opts.Logger
	if tenant != "" {
		logger = logger.With("tenant", tenant) // every decision names the tenant
	}
	w := watch.New(cls, watch.Options{
		Groups: opts.Groups, Topics: opts.Topics, Interval: opts.Interval, Resync: opts.Resync,
		Repair: opts.Repair, DryRun: opts.DryRun, MaxBundles: opts.MaxBundles, Cooldown: opts.Cooldown, RepairWait: opts.Wait,
		Logger: logger, RowSeries: watch.RowSeries(opts.RowSeries),
		Sync: opts.Sync, SplitBrainWindow: opts.SplitBrainWindow, SyncMaxMessages: opts.AlignmentMax,
		Metrics: watch.NewTenantMetrics(tenant),
	})
	srv := &http.Server{Handler: watch.Handler(w), ReadHeaderTimeout: 10 * time.Second}
	srvErr := make(chan error, 1)
	go func() { srvErr <- srv.Serve(ln) }()
	var names []string
	for _, c := range cls {
		names = append(names, c.Name)
	}
	opts.Logger.Info("watch started", "listen", ln.Addr().String(), "tenant", tenant, "clusters", names, "interval", opts.Interval.String(),
		"resync", opts.Resync.String(), "repair", opts.Repair, "keepTranslations", opts.KeepTranslations, "sync", opts.Sync, "dryRun", opts.DryRun)

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	var runErr error
	select {
	case <-ctx.Done():
		opts.Logger.Info("signal received: stopping")
	case err := <-srvErr:
		runErr = cmdutil.UnreachableError(fmt.Errorf("HTTP server on %s: %w", opts.Listen, err))
		opts.Logger.Error("HTTP server failed: stopping", "err", err.Error())
	}
	cancel()
	if err := <-done; err != nil {
		opts.Logger.Error("watch ended with an error", "err", err.Error())
	}
	sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer scancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = srv.Close()
	}
	return runErr
}

// listen opens --listen (opts.Listener in tests).
func (o *Options) listen() (net.Listener, error) {
	if o.Listener != nil {
		return o.Listener(o.Listen)
	}
	return net.Listen("tcp", o.Listen)
}

// releaseBounded closes the clients with release, waiting at most 3 s: closing the clients
// of a cluster that went away can wait on reconnects, and the process ends anyway, so they
// do not hold the exit up.
func releaseBounded(release func(), logger *slog.Logger) {
	done := make(chan struct{})
	go func() { release(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		logger.Warn("clients still closing after 3s; exiting")
	}
}

// FactoryBuild builds the real clients from f (watchwire.Clusters).
func FactoryBuild(f *cmdutil.Factory) BuildFunc {
	return func(sel, all []config.Cluster, o *Options) ([]watch.Cluster, func(), error) {
		return watchwire.Clusters(f, sel, all, watchwire.Build{
			Repair: o.Repair, RefuseLive: o.RefuseLive, Wait: o.Wait, CoordinatorWait: o.CoordinatorWait,
			KeepTranslations: o.KeepTranslations, AlignmentMax: o.AlignmentMax, Sync: o.Sync,
			Writes: o.Writes, Logger: o.Logger,
		})
	}
}
