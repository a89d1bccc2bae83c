// Package repair implements `kop-offsets repair`: check, reload exactly the bundles that
// hold stale_cache rows, check again. Safe to run from cron: a lock file keeps two runs
// apart, and a run with nothing stale does nothing.
package repair

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/planrun"
	"github.com/kop-offsets/kop-offsets/internal/commands/scope"
	"github.com/kop-offsets/kop-offsets/internal/commands/session"
	"github.com/kop-offsets/kop-offsets/internal/commands/sources"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/explain"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/survey"
)

// DefaultMaxBundles is the default of --max-bundles for repair: bundles reloaded per run and
// cluster. Stale bundles beyond it stay stale (exit 1) and the next run takes them.
const DefaultMaxBundles = 1

// Options of `repair`.
type Options struct {
	IO     *iostreams.IOStreams
	Format output.Format

	// Targets returns the clusters repair may write to (--cluster; default all) and every
	// configured cluster (the check always compares all of them).
	Targets func() (write []config.Cluster, all []config.Cluster, err error)
	// Tenants returns the same per tenant (nil: Targets, one tenant): each tenant is
	// checked and repaired on its own clusters.
	Tenants func() ([]scope.TenantTarget, error)
	// Check runs check over all; the clusters in down did not answer earlier in the run
	// and are not asked again (survey.Cluster.Down: their rows' cells say why).
	Check      func(ctx context.Context, all []config.Cluster, scope Scope, down map[string]error) (*survey.Report, error)
	NewSession session.Func
	Confirm    func(string) (bool, error)

	LockFile string
	Scope
	planrun.Flags
	Writes session.Writes
}

var repairLong = strings.TrimSpace(`
Run 'check' over every configured cluster, reload (as 'kop-offsets reload' does: bundle
unload, lookup, verification) exactly the bundles that hold stale_cache rows on the
clusters repair may write to (--cluster; default all), then run 'check' again.

Only stale_cache is repaired: KoP serves an older value (or none) than its loader would
load from its own offsets topic, and a reload makes it load the topic. Rows that are
Offsets partitions KoP does not serve (check's "unserved": it dropped their load after an
unload, and every group of them gets NOT_COORDINATOR) are reloaded too: their bundles are
unloaded and looked up, and the run waits until KoP answers for every partition of them.
replication_lag, diverged, missing, misaligned, coordinator_unavailable (outside an
unserved partition), cache_ahead, unloadable, expired or error are listed with the reason
repair leaves them: a reload would load the same persisted value, lose the one KoP serves,
or (misaligned) serve a number that skips messages.

A peer that does not answer (a cluster repair does not write to, outside --cluster: a
region gone) is asked once, by the first check within --timeout; the reload plans and the
second check do not ask it again (its groups' activity there is unknown). stale_cache and
unserved are judged on each cluster alone, so the clusters written to are repaired without
it, and a run that makes them right exits 0, naming the peer (peersUnread in JSON); a
cluster written to that could not be read still makes the run exit 3.

--group and --topic (globs) narrow both checks to some groups or topics, as in check; the
bundles reloaded are still whole (their other groups reload too, and are in the plan).

Safety as in reload: the plan is shown, --yes or a terminal confirmation is needed
(--dry-run stops after the plans), bundles with groups of unknown activity on the cluster
written to are refused unless --allow-active (groups live there are reloaded, their members
pause; --refuse-live refuses them), and a bundle where KoP would then serve an older offset
or none is always refused (repair has no --accept-loss). At most --max-bundles bundles
(default 1) are reloaded per cluster and run (per tenant and cluster with several tenants:
each tenant's metadata namespace has its own bundles); the others stay stale (exit 1) and the
next run takes them.

Cron: a lock file (--lock-file, flock; default $XDG_RUNTIME_DIR/kop-offsets-repair.lock,
else kop-offsets/repair.lock in the user's cache directory, created 0700) keeps two runs of
one user apart: a second run while one holds it does nothing and exits 3 ("another repair
is running"); --lock-file '' leaves it to the writer lease. A run with nothing stale does
nothing and exits 0.

One writer per cluster, across hosts: before its first unload on a cluster, repair takes
the cluster's writer lease (an exclusive producer on the lock topic --lease-topic, default
persistent://<tenant>/kop-offsets/writer-lease, whose namespace is created when missing
and must be replicated to that cluster only). When another process holds it (watch
--repair, a reload, a repair on another host), nothing is unloaded on that cluster, the
error names the holder (command, pid, user, host, since when) and the run exits 3;
--lease-wait waits for it. A lease whose holder died is free as soon as the broker drops
its connection. Every unload and lookup is appended to the audit trail (--audit-file; read
it with 'kop-offsets history'). See docs/watch.md.`)

var repairExamples = cmdutil.Examples(`
  kop-offsets repair --dry-run
  kop-offsets repair --cluster wus --yes
  # refresh one group on the standby before failing it over
  kop-offsets repair --cluster wus --group orders-consumer --yes
  # crontab: every 10 minutes, unattended
  */10 * * * * kop-offsets repair --yes -o json >> /var/log/kop-offsets-repair.json`)

// NewCmdRepair returns `repair`. runF replaces the run function in tests.
func NewCmdRepair(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:     "repair",
		Short:   "Check, reload exactly the bundles holding stale_cache rows, check again",
		Long:    repairLong,
		Example: repairExamples,
		Args:    cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Validate(); err != nil {
				return err
			}
			if opts.LockFile == "" && !cmd.Flags().Changed("lock-file") {
				return cmdutil.UsageError(errNoLockDir)
			}
			var err error
			if opts.Format, opts.NewSession, err = session.WriteSetup(f, opts.Writes); err != nil {
				return err
			}
			opts.Targets = scope.Targets(f)
			opts.Tenants = scope.TenantTargets(f)
			opts.Check = FactoryCheck(f)
			if runF != nil {
				return runF(opts)
			}
			return repairRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.LockFile, "lock-file", DefaultLockFile(), "lock file that keeps two repair runs apart; \"\" for none (the writer lease alone)")
	fl.Lookup("lock-file").DefValue = DefaultLockFileHelp
	cmdutil.PatternsVar(fl, &opts.Groups, "group", "group name or glob, repeatable (default: every group)")
	cmdutil.PatternsVar(fl, &opts.Topics, "topic", "topic name or glob, short or full name, repeatable (default: every topic)")
	planrun.BindReloadFlags(fl, &opts.Flags, "check and print the plans, write nothing",
		"max-bundles", DefaultMaxBundles, "bundles reloaded at most per cluster (per tenant and cluster) and run; the others wait for the next run")
	session.BindWriteFlags(fl, &opts.Writes, true)
	planrun.BindShowAll(fl, &opts.ShowAll)
	return cmd
}

// FactoryCheck runs the check engine (internal/survey and internal/verdict, as `check`
// does, cached side included) over all clusters and returns its report.
func FactoryCheck(f *cmdutil.Factory) func(context.Context, []config.Cluster, Scope, map[string]error) (*survey.Report, error) {
	return func(ctx context.Context, all []config.Cluster, scope Scope, down map[string]error) (*survey.Report, error) {
		sources, closeAll, err := sources.BuildSources(func() ([]config.Cluster, error) { return all, nil },
			skipDown(sources.FactoryConnect(f), down), sources.SourceOptions{Cached: true, Copies: true})
		if err != nil {
			return nil, err
		}
		defer closeAll()
		return survey.Run(ctx, sources, survey.Options{Groups: scope.Groups, Topics: scope.Topics})
	}
}

// skipDown connects as connect does, but a cluster in down is not dialled: the name check
// of a dial would wait another --timeout on it.
func skipDown(connect sources.ConnectFunc, down map[string]error) sources.ConnectFunc {
	return func(cl config.Cluster, so sources.SourceOptions) (survey.Cluster, func(), error) {
		if err := down[cl.Name]; err != nil {
			return survey.Cluster{Name: cl.Name, KafkaNamespace: cl.KafkaNamespace, Down: err, URLs: explain.URLs(cl), FromFlags: cl.FromFlags}, nil, nil
		}
		return connect(cl, so)
	}
}

func repairRun(ctx context.Context, opts *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := planrun.CheckConfirmable(opts.IO, opts.DryRun, opts.Yes); err != nil {
		return err
	}
	targets, err := opts.tenantTargets()
	if err != nil {
		return err
	}
	if !opts.DryRun {
		// A dry run writes nothing: it neither waits for nor excludes a repair that does.
		unlock, err := takeLock(opts.LockFile)
		if err != nil {
			return cmdutil.UnreachableError(err)
		}
		defer unlock()
	}
	if !targets[0].Named {
		r := newRun(opts, targets[0])
		if err := r.repair(ctx); err != nil {
			return err
		}
		return finish(opts, r.doc, r.worst)
	}
	// Tenant by tenant: each one's check compares its own clusters, and its reloads unload
	// only its own metadata namespace's bundles.
	doc, worst := newDocument(opts), outcome.OK
	for _, tt := range targets {
		r := newRun(opts, tt)
		if err := r.repair(ctx); err != nil {
			return err
		}
		doc.merge(tt.Tenant, r.doc)
		worst = outcome.Worst(worst, r.worst)
	}
	return finish(opts, doc, worst)
}

func (opts *Options) tenantTargets() ([]scope.TenantTarget, error) {
	if opts.Tenants != nil {
		return opts.Tenants()
	}
	write, all, err := opts.Targets()
	if err != nil {
		return nil, err
	}
	return []scope.TenantTarget{{Scope: config.Scope{Clusters: write}, All: all}}, nil
}
