// Package repair implements `kop-offsets repair`: check, reload exactly the bundles that
// hold stale_cache rows, check again. Safe to run from cron: a lock file keeps two runs
// apart, and a run with nothing stale does nothing.
package repair

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/shared"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/explain"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/reload"
	"github.com/kop-offsets/kop-offsets/internal/repair"
	"github.com/kop-offsets/kop-offsets/internal/survey"
)

// DefaultMaxBundles is the default of --max-bundles for repair: bundles reloaded per run and
// cluster. Stale bundles beyond it stay stale (exit 1) and the next run takes them.
const DefaultMaxBundles = 1

// ErrLocked means another repair holds the lock file.
var ErrLocked = errors.New("another repair is running")

// Options of `repair`.
type Options struct {
	IO     *iostreams.IOStreams
	Format output.Format

	// Targets returns the clusters repair may write to (--cluster; default all) and every
	// configured cluster (the check always compares all of them).
	Targets func() (write []config.Cluster, all []config.Cluster, err error)
	// Tenants returns the same per tenant (nil: Targets, one tenant): each tenant is
	// checked and repaired on its own clusters.
	Tenants func() ([]shared.TenantTarget, error)
	// Check runs check over all; the clusters in down did not answer earlier in the run
	// and are not asked again (survey.Cluster.Down: their rows' cells say why).
	Check      func(ctx context.Context, all []config.Cluster, scope Scope, down map[string]error) (*survey.Report, error)
	NewSession shared.SessionFunc
	Confirm    func(string) (bool, error)

	LockFile string
	Scope
	shared.Flags
	Writes shared.Writes
}

// Scope narrows what repair checks and reloads: --group and --topic globs, as in check.
type Scope struct {
	Groups []string
	Topics []string
}

// Document is what `repair -o json` prints.
type Document struct {
	SchemaVersion int  `json:"schemaVersion"`
	DryRun        bool `json:"dryRun"`
	// Tenants are the tenants of a multi-tenant run; every row then names its tenant.
	Tenants []string `json:"tenants,omitempty"`
	// Stale are the stale_cache rows the first check found on the clusters repair writes to.
	Stale []Row `json:"stale"`
	// Unserved are the offsets partitions KoP did not serve at the first check, on the
	// clusters repair writes to: their bundles are reloaded too.
	Unserved []Partition `json:"unserved"`
	// Left are the rows repair does not touch, with the reason.
	Left     []Row           `json:"left"`
	Clusters []ClusterRepair `json:"clusters"`
	After    *AfterCheck     `json:"after"`
	Summary  map[string]int  `json:"summary"`
	// Errors are what failed, each with the step it failed in (first check, second check).
	Errors []explain.Problem `json:"errors,omitempty"`
	// Unread are the clusters written to that the first check could not read at all: nothing
	// is known, so nothing is repaired there.
	Unread []string `json:"unread,omitempty"`
	// Unreachable are the first check's endpoint errors, explained (cluster, endpoint, url,
	// cause, fix).
	Unreachable []survey.ClusterError `json:"unreachable,omitempty"`
	// PeersUnread are the clusters repair does not write to that the first check could not
	// read at all (a region gone): asked once, not again by the plans or the second check.
	// Repairing the clusters written to does not need them (stale_cache and unserved are
	// judged on each cluster alone), so they alone do not make the run exit 3.
	PeersUnread []string        `json:"peersUnread,omitempty"`
	ExitCode    outcome.Outcome `json:"exitCode"`
}

// Row is one check row on one cluster.
type Row = repair.Row

// ClusterRepair is the reload of one cluster.
type ClusterRepair struct {
	Tenant    string            `json:"tenant,omitempty"`
	Cluster   string            `json:"cluster"`
	Groups    []string          `json:"groups"`
	Plan      *reload.Plan      `json:"plan"`
	Refusal   string            `json:"refusal,omitempty"`
	Execution *reload.Execution `json:"execution"`
	Error     string            `json:"error,omitempty"`
	ExitCode  outcome.Outcome   `json:"exitCode"`
}

// AfterCheck is the second check: the stale_cache rows, the unserved offsets partitions and
// the coordinator_unavailable rows that remain.
type AfterCheck = repair.Remaining

// Partition is an offsets partition of one cluster.
type Partition = repair.Partition

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
			if opts.Format, opts.NewSession, err = shared.WriteSetup(f, opts.Writes); err != nil {
				return err
			}
			opts.Targets = shared.Targets(f)
			opts.Tenants = shared.TenantTargets(f)
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
	shared.BindReloadFlags(fl, &opts.Flags, "check and print the plans, write nothing",
		"max-bundles", DefaultMaxBundles, "bundles reloaded at most per cluster (per tenant and cluster) and run; the others wait for the next run")
	shared.BindWriteFlags(fl, &opts.Writes, true)
	shared.BindShowAll(fl, &opts.ShowAll)
	return cmd
}

// FactoryCheck runs the check engine (internal/survey and internal/verdict, as `check`
// does, cached side included) over all clusters and returns its report.
func FactoryCheck(f *cmdutil.Factory) func(context.Context, []config.Cluster, Scope, map[string]error) (*survey.Report, error) {
	return func(ctx context.Context, all []config.Cluster, scope Scope, down map[string]error) (*survey.Report, error) {
		sources, closeAll, err := shared.BuildSources(func() ([]config.Cluster, error) { return all, nil },
			skipDown(shared.FactoryConnect(f), down), shared.SourceOptions{Cached: true, Copies: true})
		if err != nil {
			return nil, err
		}
		defer closeAll()
		return survey.Run(ctx, sources, survey.Options{Groups: scope.Groups, Topics: scope.Topics})
	}
}

// skipDown connects as connect does, but a cluster in down is not dialled: the name check
// of a dial would wait another --timeout on it.
func skipDown(connect shared.ConnectFunc, down map[string]error) shared.ConnectFunc {
	return func(cl config.Cluster, so shared.SourceOptions) (survey.Cluster, func(), error) {
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
	if err := shared.CheckConfirmable(opts.IO, opts.DryRun, opts.Yes); err != nil {
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

func (opts *Options) tenantTargets() ([]shared.TenantTarget, error) {
	if opts.Tenants != nil {
		return opts.Tenants()
	}
	write, all, err := opts.Targets()
	if err != nil {
		return nil, err
	}
	return []shared.TenantTarget{{Scope: config.Scope{Clusters: write}, All: all}}, nil
}

func newDocument(opts *Options) *Document {
	return &Document{SchemaVersion: 1, DryRun: opts.DryRun, Stale: []Row{},
		Unserved: []Partition{}, Left: []Row{}, Clusters: []ClusterRepair{}, Summary: map[string]int{}}
}

func newRun(opts *Options, tt shared.TenantTarget) *run {
	r := &run{opts: opts, write: tt.Clusters, all: tt.All, doc: newDocument(opts)}
	if tt.Named {
		r.tenant = tt.Tenant
	}
	return r
}

// merge adds o, the document of tenant's run, to d, naming the tenant in each of its rows.
func (d *Document) merge(tenant string, o *Document) {
	d.Tenants = append(d.Tenants, tenant)
	rows := func(rs []Row) []Row {
		for i := range rs {
			rs[i].Tenant = tenant
		}
		return rs
	}
	parts := func(ps []Partition) []Partition {
		for i := range ps {
			ps[i].Tenant = tenant
		}
		return ps
	}
	d.Stale = append(d.Stale, rows(o.Stale)...)
	d.Unserved = append(d.Unserved, parts(o.Unserved)...)
	d.Left = append(d.Left, rows(o.Left)...)
	for _, c := range o.Clusters {
		c.Tenant = tenant
		d.Clusters = append(d.Clusters, c)
	}
	first := len(d.Tenants) == 1
	switch {
	case o.After == nil || (!first && d.After == nil):
		// A dry run that planned reloads has no second check: neither has the whole run.
		d.After = nil
	default:
		if d.After == nil {
			d.After = &AfterCheck{Stale: []Row{}, Unserved: []Partition{}}
		}
		d.After.Stale = append(d.After.Stale, rows(o.After.Stale)...)
		d.After.Unserved = append(d.After.Unserved, parts(o.After.Unserved)...)
		d.After.Unavailable += o.After.Unavailable
	}
	for k, n := range o.Summary {
		d.Summary[k] += n
	}
	for _, e := range o.Errors {
		e.Tenant, e.Fix = tenant, explain.WithTenant(e.Fix, tenant)
		d.Errors = append(d.Errors, e)
	}
	for _, u := range o.Unread {
		d.Unread = append(d.Unread, tenant+"/"+u)
	}
	for _, u := range o.PeersUnread {
		d.PeersUnread = append(d.PeersUnread, tenant+"/"+u)
	}
	for _, e := range o.Unreachable {
		e.Tenant = tenant
		d.Unreachable = append(d.Unreachable, e)
	}
}

// repair runs the first check, the reloads and the second check of one tenant.
func (r *run) repair(ctx context.Context) error {
	opts := r.opts
	first, err := opts.Check(ctx, r.all, opts.Scope, nil)
	if err != nil {
		// Classified as check's: a configuration error (the cluster-name refusal) is 2,
		// anything else 3.
		return fmt.Errorf("%scheck: %w (nothing was reloaded)", r.label(), err)
	}
	var unread []string // clusters written to that the first check could not read at all
	if first.ExitCode == outcome.Unreachable {
		r.doc.Unreachable = first.Errors
		for _, e := range first.Errors {
			e.Step = "first check"
			r.doc.Errors = append(r.doc.Errors, e)
		}
		for _, n := range first.Unread {
			if slices.Contains(clusterNames(r.write), n) {
				unread = append(unread, n)
			}
		}
		r.doc.Unread = unread
		r.down = peersDown(first, clusterNames(r.write))
		r.doc.PeersUnread = slices.Sorted(maps.Keys(r.down))
		r.raiseUnlessPeers(first.Errors)
		if len(r.down) > 0 {
			fmt.Fprintf(opts.IO.ErrOut, "%s%s could not be read (not written to): not asked again; its rows are judged without it\n", r.label(), strings.Join(r.doc.PeersUnread, ", "))
		}
	}
	if misaligned := r.sort(first); misaligned > 0 {
		r.raise(outcome.Found)
		fmt.Fprintf(opts.IO.ErrOut, "%s%d misaligned rows left alone: a reload would make KoP serve a number that names another message; run the failover command in their reason\n", r.label(), misaligned)
	}
	if len(r.doc.Stale) == 0 && len(r.doc.Unserved) == 0 {
		switch {
		case len(unread) > 0:
			fmt.Fprintf(opts.IO.ErrOut, "%snothing repaired: %s could not be read (the errors below say why); nothing was written\n", r.label(), strings.Join(unread, ", "))
		case first.ExitCode == outcome.Unreachable:
			fmt.Fprintf(opts.IO.ErrOut, "%snothing stale or unserved in what could be read (the errors below say what could not)\n", r.label())
		default:
			fmt.Fprintf(opts.IO.ErrOut, "%snothing stale or unserved: nothing to do\n", r.label())
		}
		r.doc.After = &AfterCheck{Stale: []Row{}, Unserved: []Partition{}}
		return nil
	}
	executed := false
	for _, cl := range r.write {
		ran, err := r.reloadCluster(ctx, cl)
		if err != nil {
			return err
		}
		executed = executed || ran
	}
	if !opts.DryRun {
		r.after(ctx, executed)
	}
	return nil
}

// label is "tenant T: " in a multi-tenant run, where messages name the tenant.
func (r *run) label() string {
	if r.tenant == "" {
		return ""
	}
	return "tenant " + r.tenant + ": "
}

// run is one repair run: the document it builds and its exit code so far.
type run struct {
	opts       *Options
	tenant     string // a multi-tenant run's tenant; "" otherwise
	write, all []config.Cluster
	doc        *Document
	worst      outcome.Outcome
	// stale and unserved are, per cluster written to, the groups and offsets partitions
	// the first check found to reload.
	stale    map[string][]string
	unserved map[string][]int32
	// down are the peers (clusters not written to) the first check could not read at all,
	// with why: the plans and the second check do not wait on them again.
	down map[string]error
}

// peersDown are the clusters of first's Unread that are not written to, each with the
// first error the check gave for it.
func peersDown(first *survey.Report, write []string) map[string]error {
	down := map[string]error{}
	for _, n := range first.Unread {
		if slices.Contains(write, n) {
			continue
		}
		why := "nothing could be read"
		if i := slices.IndexFunc(first.Errors, func(e survey.ClusterError) bool { return e.Cluster == n }); i >= 0 {
			why = first.Errors[i].Error
		}
		down[n] = fmt.Errorf("did not answer the first check: %s", why)
	}
	return down
}

// raiseUnlessPeers raises Unreachable, for a check that says so, unless every endpoint
// error it names is of a down peer: a peer the repair does not need leaves the code to the
// clusters written to. A check unreachable without a named error is 3, as before.
func (r *run) raiseUnlessPeers(errs []survey.ClusterError) {
	if len(errs) == 0 {
		r.raise(outcome.Unreachable)
	}
	for _, e := range errs {
		if r.down[e.Cluster] == nil {
			r.raise(outcome.Unreachable)
			return
		}
	}
}

// raise keeps the most severe outcome: Unreachable over WriteFailed over Found over OK.
func (r *run) raise(o outcome.Outcome) { r.worst = outcome.Worst(r.worst, o) }

// sort files the first check's rows of the clusters written to (repair.Select), and
// returns how many left rows are misaligned.
func (r *run) sort(first *survey.Report) (misaligned int) {
	doc := r.doc
	sel := repair.Select(first.Rows, first.Unserved, clusterNames(r.write))
	doc.Stale, doc.Unserved, doc.Left = sel.Stale, sel.Unserved, sel.Left
	r.stale, r.unserved = sel.Groups, sel.Partitions
	doc.Summary["stale"] = len(doc.Stale)
	doc.Summary["unserved"] = len(doc.Unserved)
	doc.Summary["left"] = len(doc.Left)
	return sel.Misaligned
}

func clusterNames(cs []config.Cluster) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

// reloadCluster plans and runs the reload of cl's stale groups and unserved partitions,
// and reports whether bundles were unloaded. The error is the operator's refusal (exit 2).
func (r *run) reloadCluster(ctx context.Context, cl config.Cluster) (bool, error) {
	opts := r.opts
	groups, parts := r.stale[cl.Name], r.unserved[cl.Name]
	if len(groups) == 0 && len(parts) == 0 {
		return false, nil
	}
	slices.Sort(groups)
	cr := ClusterRepair{Cluster: cl.Name, Groups: groups}
	defer func() { r.doc.Clusters = append(r.doc.Clusters, cr) }()
	sess, err := opts.NewSession(cl, r.all)
	if err != nil {
		cr.Error, cr.ExitCode = err.Error(), cmdutil.OutcomeOf(err)
		r.raise(outcome.Unreachable)
		return false, nil
	}
	defer sess.Close()
	for name, why := range r.down {
		sess.NotAnswering(name, why)
	}
	sess.Planner.AllowActive = opts.AllowActive
	sess.Planner.RefuseLive = opts.RefuseLive
	sess.Executor.Wait, sess.Executor.Pause = opts.Wait, opts.Pause
	req := reload.Request{Groups: groups, Partitions: parts}
	plan, err := sess.Planner.Plan(ctx, req)
	if err != nil {
		cr.Error, cr.ExitCode = err.Error()+" (nothing was unloaded)", outcome.Unreachable
		r.raise(outcome.Unreachable)
		return false, nil
	}
	cr.Plan = plan
	res := shared.RunPlan(ctx, opts.IO, opts.Format, plan, sess.Executor, shared.RunOptions{
		DryRun: opts.DryRun, Yes: opts.Yes, MaxBundles: opts.MaxBundles, TruncateToMax: true, Confirm: opts.Confirm,
		BeforeWrite: sess.BeforeWrite, Replan: sess.Replan(req), Reason: "repair: stale_cache rows and unserved offsets partitions",
		ShowAll: opts.ShowAll,
	})
	cr.Plan = res.Plan
	if res.Err != nil {
		return false, res.Err
	}
	cr.Refusal, cr.Execution, cr.ExitCode = res.Refusal, res.Execution, res.ExitCode
	if res.Refusal != "" {
		fmt.Fprintf(opts.IO.ErrOut, "%scluster %s: %s\n", r.label(), cl.Name, res.Refusal)
		if res.Execution == nil {
			// Nothing was unloaded on this cluster: the writer lease is held elsewhere (3),
			// the trail cannot be written (2), or the plan was refused (4; under --dry-run,
			// the real run would be).
			r.raise(res.ExitCode)
		}
	}
	if res.Execution == nil {
		return false, nil
	}
	if opts.Format == output.Table {
		_ = shared.WriteExecution(opts.IO.Out, output.StdoutLayout(opts.IO).Cut(opts.ShowAll), opts.IO.ColorScheme(), res.Execution)
		fmt.Fprintln(opts.IO.Out)
	}
	fmt.Fprintln(opts.IO.ErrOut, r.label()+shared.Summary(cl.Name, res.Execution))
	if res.ExitCode == outcome.Unreachable || res.ExitCode == outcome.WriteFailed {
		r.raise(res.ExitCode)
	}
	return true, nil
}

// after runs the second check (when bundles were unloaded; else the first still stands)
// and records what remains: no run that leaves rows stale or unserved ends ok.
func (r *run) after(ctx context.Context, executed bool) {
	doc := r.doc
	doc.After = &AfterCheck{Stale: []Row{}, Unserved: []Partition{}}
	if !executed {
		doc.After.Stale, doc.After.Unserved = doc.Stale, doc.Unserved
	} else if second, err := r.opts.Check(ctx, r.all, r.opts.Scope, r.down); err != nil {
		e := explain.ProblemOf(err)
		e.Step = "second check"
		doc.Errors = append(doc.Errors, e)
		r.raise(outcome.Unreachable)
	} else {
		if second.ExitCode == outcome.Unreachable {
			r.raiseUnlessPeers(second.Errors)
		}
		repair.Remains(doc.After, second.Rows, second.Unserved, clusterNames(r.write))
	}
	if doc.After.Any() {
		r.raise(outcome.Found)
	}
	doc.Summary["staleAfter"] = len(doc.After.Stale)
	doc.Summary["unservedAfter"] = len(doc.After.Unserved)
}

func finish(opts *Options, doc *Document, code outcome.Outcome) error {
	doc.ExitCode = code
	if opts.Format != output.Table {
		if err := output.Print(opts.IO, opts.Format, doc, nil); err != nil {
			return err
		}
		return cmdutil.SilentError(code)
	}
	w := opts.IO.Out
	layout := output.StdoutLayout(opts.IO).Cut(opts.ShowAll)
	if len(doc.Left) > 0 {
		fmt.Fprintln(w, "Left alone (repair only fixes stale_cache):")
		tp := output.NewTablePrinterTo(w, layout)
		tp.AddHeader(withTenant(doc, "TENANT", "CLUSTER", "GROUP", "TOPIC", "PARTITION", "STATUS", "WHY")...)
		for _, r := range doc.Left {
			tp.AddRow(withTenant(doc, r.Tenant, r.Cluster, r.Group, r.Topic, fmt.Sprint(r.Partition), strings.ToUpper(r.Status), r.Reason)...)
		}
		_ = tp.Render()
	}
	if doc.After != nil && (len(doc.Unserved) > 0 || len(doc.After.Unserved) > 0) {
		fmt.Fprintf(w, "unserved offsets partitions: %d before, %d after", len(doc.Unserved), len(doc.After.Unserved))
		for _, u := range doc.After.Unserved {
			fmt.Fprintf(w, "; %s%s/%d (%s)", tenantPrefix(u.Tenant), u.Cluster, u.OffsetsPartition, u.Answer)
		}
		fmt.Fprintln(w)
	}
	if doc.After != nil && doc.After.Unavailable > 0 {
		fmt.Fprintf(w, "coordinator_unavailable rows after: %d\n", doc.After.Unavailable)
	}
	if doc.After != nil {
		notRead := ""
		if len(doc.Unread) > 0 {
			notRead = " (not read: " + strings.Join(doc.Unread, ", ") + ")"
		}
		if len(doc.After.Stale) == 0 {
			fmt.Fprintf(w, "stale_cache rows: %d before, 0 after%s\n", len(doc.Stale), notRead)
		} else {
			fmt.Fprintf(w, "stale_cache rows: %d before, %d still stale:\n", len(doc.Stale), len(doc.After.Stale))
			tp := output.NewTablePrinterTo(w, layout)
			tp.AddHeader(withTenant(doc, "TENANT", "CLUSTER", "GROUP", "TOPIC", "PARTITION")...)
			for _, r := range doc.After.Stale {
				tp.AddRow(withTenant(doc, r.Tenant, r.Cluster, r.Group, r.Topic, fmt.Sprint(r.Partition))...)
			}
			_ = tp.Render()
		}
	}
	for _, e := range doc.Errors {
		line := e.Step + ": " + e.Error
		if e.Tenant != "" {
			line = "tenant " + e.Tenant + ": " + line
		}
		fmt.Fprint(opts.IO.ErrOut, explain.Lines(line, e.Fix))
	}
	return cmdutil.SilentError(code)
}

// withTenant puts first (the tenant of a row, or TENANT in a header) in a multi-tenant
// document's table rows.
func withTenant(doc *Document, first string, cells ...string) []string {
	if doc.Tenants == nil {
		return cells
	}
	return append([]string{first}, cells...)
}

func tenantPrefix(t string) string {
	if t == "" {
		return ""
	}
	return t + "/"
}

// writePID records the holder of the lock for an operator who finds the file.
func writePID(fh *os.File) {
	_ = fh.Truncate(0)
	_, _ = fmt.Fprintf(fh, "%d\n", os.Getpid())
}
