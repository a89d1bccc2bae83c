// Package check implements `kop-offsets check`: cached vs persisted offsets, on each cluster
// and across clusters. The work is done by internal/survey and internal/verdict; this
// package binds flags, builds the sources from the Factory and renders the report.
package check

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/scope"
	"github.com/kop-offsets/kop-offsets/internal/commands/sources"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/promexport"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// Options of `check`.
type Options struct {
	IO       *iostreams.IOStreams
	Format   output.Format
	Clusters func() ([]config.Cluster, error)
	// Scopes are the clusters per tenant (nil: Clusters, one tenant); each tenant's groups
	// are compared on its own clusters.
	Scopes  func() ([]config.Scope, error)
	Connect sources.ConnectFunc

	Groups          []string
	Topics          []string
	Source          string
	Alignment       bool // translate replicated offsets (default on)
	AlignmentMax    int64
	verifyAlignment bool // deprecated --verify-alignment: alignment is on by default
	PersistedOnly   bool
	FailOn          []string
	PrometheusFile  string
	CoordinatorWait time.Duration
	Concurrency     int
	ExpiryWarning   time.Duration
	SyncGrace       time.Duration
	// Now is the clock of the expiry rules (nil: time.Now).
	Now func() time.Time
}

var checkLong = strings.TrimSpace(`
For every selected group, topic and partition, show what KoP serves on each cluster
(cached: OffsetFetch), what that cluster's offsets topic holds (persisted: the offsets
partitions of the selected groups replayed as KoP's loader does, with non-durable readers),
the log-end offset and lag, and classify the row:

  ok                       everything agrees
  unloadable               KoP cannot load this offsets partition (a record it cannot
                           parse): after any load it serves no group of it; no reload helps
  cache_ahead              KoP serves a newer offset than its loader would load (for
                           example a transactional commit): right now; a reload would lose it
  stale_cache              KoP serves an older value (or none) than its loader would load
                           from its own offsets topic (fix: kop-offsets reload --cluster X --group G)
  expired                  the offset is past its expireTimestamp: KoP drops it (and writes
                           a tombstone that replicates) within 10 minutes
  expiring                 the offset expires within --expiry-warning (not in the default
                           --fail-on)
  replication_lag          persisted here is behind the source (or the highest value) and
                           the offsets partition still has replication backlog toward here
  diverged                 persisted values differ with no backlog, or this side is ahead
                           of the source
  missing                  absent on this cluster, present on another, no backlog
  coordinator_unavailable  KoP kept answering "loading" / "not coordinator" (--coordinator-wait)
  misaligned               the offset was replicated from another cluster and names another
                           message here (the copies of the topic differ in a message's
                           timestamp, key or value CRC-32); "translated" is the group's real
                           position; fix with 'kop-offsets failover', never with a reload
  ahead                    sync or kept deployment: past the translation of the group's
                           newest own commit, made on another cluster ("follow"): a consumer
                           moved here skips messages; run watch --sync (or
                           --keep-translations), or reset the group here; never a reload
  sync_lag                 sync or kept deployment: behind that translation for longer than
                           --sync-grace: the tool is not following; a consumer moved here
                           re-reads
  overwritten              KoP loads a kept translation here that landed after a newer commit
                           of the key: after any load the group re-reads; watch
                           --keep-translations writes it again while the source answers
  error                    this cluster could not be read

The row status is the most severe cluster status, in the order error,
coordinator_unavailable, unloadable, diverged, ahead, misaligned, overwritten, cache_ahead,
stale_cache, expired, sync_lag, replication_lag, missing, expiring, ok. persisted is what the
topic holds; where KoP would load something else, JSON shows it as predicted, with the reason.
Without --source every cluster is compared with the highest persisted value; in a sync or
kept deployment (a row holding the tool's writes: a sync mark or a kept translation) with the
group's newest own commit, by commit time.

Read-only: no subscription, no commit; KoP is only asked with OffsetFetch, ListGroups,
ListOffsets and, for alignment, fetches of the data topics without a group (each copy of a
topic partition read once per run, up to the highest committed offset; --alignment=false
skips it).`)

var checkExamples = cmdutil.Examples(`
  # every group on every cluster
  kop-offsets check

  # one group, scus authoritative, JSON for CI
  kop-offsets check --group orders-consumer --source scus -o json

  # cron: node_exporter textfile, exit code ignored
  kop-offsets check --prometheus-file /var/lib/node_exporter/textfile/kop_offsets.prom -o json >/dev/null || true

  # only the offsets topics (KoP not reachable from here)
  kop-offsets check --persisted-only --fail-on diverged,missing`)

// NewCmdCheck returns `check`. runF replaces the run function in tests.
func NewCmdCheck(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams, Clusters: f.Clusters, Scopes: f.Scopes}
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Compare cached and persisted offsets on each cluster and across clusters",
		Long:  checkLong,

		Example: checkExamples,

		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.verifyAlignment {
				fmt.Fprintln(f.IOStreams.ErrOut, "Flag --verify-alignment has been deprecated, alignment is checked by default (--alignment)")
			}
			var err error
			if opts.Format, err = f.OutputFormat(output.StandardSpec); err != nil {
				return err
			}
			if _, err := ParseFailOn(opts.FailOn); err != nil {
				return err
			}
			if opts.PersistedOnly && cmd.Flags().Changed("alignment") && opts.Alignment {
				return cmdutil.FlagErrorf("--alignment reads the data topics through KoP: it cannot be combined with --persisted-only")
			}
			if opts.PersistedOnly {
				opts.Alignment = false
			}
			if opts.AlignmentMax < 0 {
				return cmdutil.FlagErrorf("--alignment-max-messages must not be negative")
			}
			if opts.CoordinatorWait <= 0 {
				return cmdutil.FlagErrorf("--coordinator-wait must be positive")
			}
			if opts.SyncGrace <= 0 {
				return cmdutil.FlagErrorf("--sync-grace must be positive")
			}
			if opts.Connect == nil {
				opts.Connect = sources.FactoryConnect(f)
			}
			if runF != nil {
				return runF(opts)
			}
			return checkRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	cmdutil.PatternsVar(fl, &opts.Groups, "group", "group name or glob, repeatable (default: every group)")
	cmdutil.PatternsVar(fl, &opts.Topics, "topic", "topic name or glob, short or full name, repeatable (default: every topic)")
	fl.StringVar(&opts.Source, "source", "", "the authoritative cluster (default: compare all clusters with the highest value)")
	cmdutil.MarkCluster(fl, "source")
	fl.BoolVar(&opts.Alignment, "alignment", true, "translate offsets replicated from another cluster into each cluster's numbering by message identity, reading the data topics through KoP (misaligned: the number names another message); --alignment=false skips it")
	fl.Int64Var(&opts.AlignmentMax, "alignment-max-messages", align.DefaultMaxMessages, "messages read at most per copy of a topic partition to align it (beyond: alignment unknown)")
	fl.BoolVar(&opts.verifyAlignment, "verify-alignment", false, "alignment is checked by default")
	// Hidden and noted on stderr by RunE, not pflag's MarkDeprecated: cobra prints that
	// notice where help goes (stdout), inside `-o json | jq`'s input.
	_ = fl.MarkHidden("verify-alignment")
	fl.BoolVar(&opts.PersistedOnly, "persisted-only", false, "do not ask KoP: compare the offsets topics only (cached, lag: null)")
	fl.StringSliceVar(&opts.FailOn, "fail-on", nil, "statuses that make the exit code 1, comma-separated (default: every status but ok and expiring)")
	fl.StringVar(&opts.PrometheusFile, "prometheus-file", "", "write a node_exporter textfile to this path (atomic rename)")
	fl.DurationVar(&opts.CoordinatorWait, "coordinator-wait", kop.DefaultCoordinatorWait, "how long to retry groups KoP is loading or not coordinating")
	fl.IntVar(&opts.Concurrency, "concurrency", 4, "offsets partitions replayed at once per cluster")
	fl.DurationVar(&opts.ExpiryWarning, "expiry-warning", survey.DefaultExpiryWarning, "report offsets that KoP expires within this window as expiring")
	fl.DurationVar(&opts.SyncGrace, "sync-grace", verdict.DefaultSyncGrace, "sync or kept deployment: how long a cluster may stay behind the translation of the group's newest own commit before it is sync_lag")
	_ = cmd.RegisterFlagCompletionFunc("fail-on", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []string
		for _, s := range verdict.Statuses {
			out = append(out, string(s))
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

func now(f func() time.Time) time.Time {
	if f == nil {
		return time.Now()
	}
	return f()
}

// ParseFailOn parses --fail-on values (nil: the default).
func ParseFailOn(vals []string) ([]verdict.Status, error) {
	if len(vals) == 0 {
		return nil, nil
	}
	var out []verdict.Status
	for _, v := range vals {
		for _, p := range strings.Split(v, ",") {
			p = strings.TrimSpace(p)
			if p == "" {
				continue
			}
			st, ok := verdict.ParseStatus(p)
			if !ok {
				var names []string
				for _, s := range verdict.Statuses {
					names = append(names, string(s))
				}
				return nil, cmdutil.FlagErrorf("invalid --fail-on status %q: valid values are %s", p, strings.Join(names, ", "))
			}
			out = append(out, st)
		}
	}
	return out, nil
}

// scopeParallelism is how many tenants' checks run at once: each has its own clients and
// replays its own offsets topic, so tenants overlap their round trips.
const scopeParallelism = 4

// checkScopes checks each tenant's scope on its own clusters and returns the report of all
// of them. One unnamed scope (a config without tenants) streams its rows to emit as they
// come; named scopes run scopeParallelism at a time, their rows (named by tenant) emitted
// in tenant order as each tenant finishes. A config error (exit 2) stops the run; a tenant
// that cannot be read is reported in the merged report and the others go on.
func checkScopes(ctx context.Context, opts *Options, scopes []config.Scope, failOn []verdict.Status, emit func(*verdict.Row) error) (*survey.Report, error) {
	if !scopes[0].Named {
		rep, _, err := checkScope(ctx, opts, scopes[0], failOn, emit)
		return rep, err
	}
	total := &survey.Report{SchemaVersion: 1, Tenants: config.ScopeNames(scopes), Clusters: scope.ClusterNames(scopes), Rows: []verdict.Row{}}
	if opts.Source != "" {
		total.Source = &opts.Source
	}
	type result struct {
		rows   []verdict.Row
		rep    *survey.Report
		source string
		err    error
	}
	results := make([]chan result, len(scopes))
	for i := range results {
		results[i] = make(chan result, 1)
	}
	var g errgroup.Group
	g.SetLimit(scopeParallelism)
	// Started from a goroutine, as g.Go waits for a free slot: the first tenant's rows are
	// emitted while later tenants still wait for theirs.
	go func() {
		for i, sc := range scopes {
			g.Go(func() error {
				var res result
				res.rep, res.source, res.err = checkScope(ctx, opts, sc, failOn, func(r *verdict.Row) error {
					r.Tenant = sc.Tenant
					res.rows = append(res.rows, *r)
					return nil
				})
				results[i] <- res
				return nil
			})
		}
	}()
	var firstErr error
	for i, sc := range scopes {
		res := <-results[i] // every one, so that no goroutine is left behind
		if firstErr != nil {
			continue
		}
		if res.err != nil {
			firstErr = res.err
			continue
		}
		for j := range res.rows {
			if err := emit(&res.rows[j]); err != nil {
				firstErr = err
				break
			}
		}
		if res.source != opts.Source {
			res.rep.Warnings = append(res.rep.Warnings, fmt.Sprintf("--source %s: the tenant is not on that cluster; its clusters were compared with the highest value", opts.Source))
		}
		total.Merge(sc.Tenant, res.rep)
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return total, nil
}

// checkScope checks one tenant's clusters, rows to emit, and says which --source it used
// ("" when the tenant is not on --source's cluster: compared with the highest value).
func checkScope(ctx context.Context, opts *Options, sc config.Scope, failOn []verdict.Status, emit func(*verdict.Row) error) (*survey.Report, string, error) {
	sources, closeAll, err := sources.BuildSources(func() ([]config.Cluster, error) { return sc.Clusters, nil }, opts.Connect,
		sources.SourceOptions{Cached: !opts.PersistedOnly, Copies: opts.Alignment, CoordinatorWait: opts.CoordinatorWait})
	if err != nil {
		return nil, "", err
	}
	defer closeAll()
	source := opts.Source
	if !slices.Contains(config.Names(sc.Clusters), source) {
		source = ""
	}
	rep, err := survey.Stream(ctx, sources, survey.Options{
		Groups: opts.Groups, Topics: opts.Topics, Source: source, SkipAlignment: !opts.Alignment, AlignmentMaxMessages: opts.AlignmentMax,
		FailOn: failOn, Concurrency: opts.Concurrency, ExpiryWarning: opts.ExpiryWarning, Now: now(opts.Now), SyncGrace: opts.SyncGrace,
	}, emit)
	return rep, source, err
}

func checkRun(ctx context.Context, opts *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	failOn, err := ParseFailOn(opts.FailOn)
	if err != nil {
		return err
	}
	restoreGC := cmdutil.CompactGC(cmdutil.GCReplay)
	defer restoreGC()
	scopes, err := scope.ScopesOf(opts.Scopes, opts.Clusters)
	if err != nil {
		return err
	}
	names := scope.ClusterNames(scopes)
	if opts.Source != "" && !slices.Contains(names, opts.Source) {
		return cmdutil.UsageErrorf("--source %q is not among the selected clusters (%s)", opts.Source, strings.Join(names, ", "))
	}
	if opts.PrometheusFile != "" {
		if err := promexport.CheckTextfile(opts.PrometheusFile); err != nil {
			return cmdutil.UsageError(fmt.Errorf("--prometheus-file: %w; nothing was contacted", err))
		}
	}
	out, err := newReportWriter(opts, names, scopes)
	if err != nil {
		return err
	}
	progress := opts.IO.StartProgress("checking offsets")
	rep, err := checkScopes(ctx, opts, scopes, failOn, func(r *verdict.Row) error {
		if out.rows == 0 {
			progress.Stop() // rows go to stdout from now on
		}
		return out.row(r)
	})
	progress.Stop()
	if err != nil {
		if out.rows > 0 {
			return err // a write failed
		}
		return cmdutil.UsageError(err)
	}
	var promErr error
	if out.series != nil {
		promErr = promexport.WriteTextfile(opts.PrometheusFile, out.series.Finish(rep))
	}
	if err := out.finish(rep); err != nil {
		return err
	}
	if promErr != nil {
		// The report is complete on stdout; the textfile is not. Its 2 does not hide a 3.
		return &cmdutil.ExitError{Outcome: outcome.Worst(rep.ExitCode, outcome.Usage), Err: fmt.Errorf("--prometheus-file: %w (the report above is complete)", promErr)}
	}
	if opts.Format == output.Table {
		w := opts.IO.ErrOut
		if opts.IO.IsStdoutTTY() {
			w = opts.IO.Out
		}
		writeFooter(w, rep, out.rows, out.hints.list)
	}
	if opts.Format != output.Table {
		for _, e := range rep.Errors {
			fmt.Fprintln(opts.IO.ErrOut, "error:", e.Error)
		}
	}
	return cmdutil.SilentError(rep.ExitCode)
}
