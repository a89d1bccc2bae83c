// Package check implements `kop-offsets check`: cached vs persisted offsets, on each cluster
// and across clusters. The work is done by internal/check; this package binds flags, builds
// the sources from the Factory and renders the report.
package check

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/shared"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/kop"
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
	Connect  shared.ConnectFunc

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
  misaligned               the offset was replicated from another cluster and names another message
                           here (topic copies differ); "translated" is the group's real position;
                           fix with 'kop-offsets failover', never with a reload
                           (timestamp, key or value CRC-32) between clusters
  error                    this cluster could not be read

The row status is the most severe cluster status, in the order error,
coordinator_unavailable, unloadable, diverged, misaligned, cache_ahead, stale_cache, expired,
replication_lag, missing, expiring, ok. persisted is what the topic holds; where KoP would
load something else, JSON shows it as predicted, with the reason.
Without --source every cluster is compared with the highest persisted value.

Read-only: no subscription, no commit; KoP is only asked with OffsetFetch, ListGroups,
ListOffsets and, for alignment, fetches of the data topics without a group (each copy of a
topic partition read once per run, up to the highest committed offset; --alignment=false
skips it).

Exit codes: 0 nothing found that --fail-on names (default: every status but ok and expiring);
1 drift found; 2 usage or configuration error; 3 a cluster or endpoint could not be
reached (its cells are marked error, the other clusters are still checked). One KoP broker
of several down is exit 3 too, but not blind: the groups the other brokers list are asked
and judged, only groups that broker coordinates are marked error, and errors names it. A
group that broker coordinates has no row when the offsets topic cannot be read either (a
crashed broker still owns offsets partitions, until its session expires): warnings names it.`)

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
	opts := &Options{IO: f.IOStreams, Clusters: f.Clusters}
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Compare cached and persisted offsets on each cluster and across clusters",
		Long:  checkLong,

		Example: checkExamples,

		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
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
			if opts.Connect == nil {
				opts.Connect = shared.FactoryConnect(f)
			}
			if runF != nil {
				return runF(opts)
			}
			return checkRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&opts.Groups, "group", nil, "group name or glob (path.Match), repeatable (default: every group)")
	fl.StringArrayVar(&opts.Topics, "topic", nil, "topic name or glob, short or full name, repeatable (default: every topic)")
	fl.StringVar(&opts.Source, "source", "", "the authoritative cluster (default: compare all clusters with the highest value)")
	fl.BoolVar(&opts.Alignment, "alignment", true, "translate offsets replicated from another cluster into each cluster's numbering by message identity, reading the data topics through KoP (misaligned: the number names another message); --alignment=false skips it")
	fl.Int64Var(&opts.AlignmentMax, "alignment-max-messages", align.DefaultMaxMessages, "messages read at most per copy of a topic partition to align it (beyond: alignment unknown)")
	fl.BoolVar(&opts.verifyAlignment, "verify-alignment", false, "alignment is checked by default")
	_ = fl.MarkDeprecated("verify-alignment", "alignment is checked by default (--alignment)")
	fl.BoolVar(&opts.PersistedOnly, "persisted-only", false, "do not ask KoP: compare the offsets topics only (cached, lag: null)")
	fl.StringSliceVar(&opts.FailOn, "fail-on", nil, "statuses that make the exit code 1, comma-separated (default: every status but ok)")
	fl.StringVar(&opts.PrometheusFile, "prometheus-file", "", "write a node_exporter textfile to this path (atomic rename)")
	fl.DurationVar(&opts.CoordinatorWait, "coordinator-wait", kop.DefaultCoordinatorWait, "how long to retry groups KoP is loading or not coordinating")
	fl.IntVar(&opts.Concurrency, "concurrency", 4, "offsets partitions replayed at once per cluster")
	fl.DurationVar(&opts.ExpiryWarning, "expiry-warning", survey.DefaultExpiryWarning, "report offsets that KoP expires within this window as expiring")
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
	cls, err := opts.Clusters()
	if err != nil {
		return err
	}
	if opts.Source != "" && !slices.Contains(config.Names(cls), opts.Source) {
		return cmdutil.UsageErrorf("--source %q is not among the selected clusters (%s)", opts.Source, strings.Join(config.Names(cls), ", "))
	}
	sources, closeAll, err := shared.BuildSources(func() ([]config.Cluster, error) { return cls, nil }, opts.Connect,
		shared.SourceOptions{Cached: !opts.PersistedOnly, Copies: opts.Alignment, CoordinatorWait: opts.CoordinatorWait})
	if err != nil {
		return err
	}
	defer closeAll()

	out, err := newReportWriter(opts, config.Names(cls))
	if err != nil {
		return err
	}
	progress := opts.IO.StartProgress("checking offsets")
	rep, err := survey.Stream(ctx, sources, survey.Options{
		Groups: opts.Groups, Topics: opts.Topics, Source: opts.Source, SkipAlignment: !opts.Alignment, AlignmentMaxMessages: opts.AlignmentMax,
		FailOn: failOn, Concurrency: opts.Concurrency, ExpiryWarning: opts.ExpiryWarning, Now: now(opts.Now),
	}, func(r *verdict.Row) error {
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
	if out.series != nil {
		if err := promexport.WriteTextfile(opts.PrometheusFile, out.series.Finish(rep)); err != nil {
			return cmdutil.UsageError(err)
		}
	}
	if err := out.finish(rep); err != nil {
		return err
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

// reportWriter writes a check's rows as they come: the table (piped: row by row; on a
// terminal the columns need every row), the JSON document (row by row, the bytes of the
// whole document), YAML (the whole document at the end), and the Prometheus series.
type reportWriter struct {
	opts     *Options
	clusters []string
	rows     int
	hints    hints
	series   *promexport.Series // with --prometheus-file
	table    *output.TablePrinter
	json     *output.JSONStream
	held     []verdict.Row // YAML
}

func newReportWriter(opts *Options, clusters []string) (*reportWriter, error) {
	w := &reportWriter{opts: opts, clusters: clusters}
	if opts.PrometheusFile != "" {
		s, err := promexport.New()
		if err != nil {
			return nil, cmdutil.UsageError(err)
		}
		w.series = s
	}
	switch opts.Format {
	case output.JSON:
		w.json = output.NewJSONStream(opts.IO.Out, "rows")
		if err := w.json.Begin(w.head()); err != nil {
			return nil, err
		}
	case output.Table, "":
		w.table = output.NewTablePrinter(opts.IO).StreamPiped()
		w.table.AddHeader(tableHeader(clusters)...)
	}
	return w, nil
}

// head is the report as far as it is known before the rows: what precedes them in JSON.
func (w *reportWriter) head() *survey.Report {
	rep := &survey.Report{SchemaVersion: 1, Clusters: w.clusters, Rows: []verdict.Row{}}
	if w.opts.Source != "" {
		rep.Source = &w.opts.Source
	}
	return rep
}

func (w *reportWriter) row(r *verdict.Row) error {
	w.rows++
	w.hints.add(r, w.clusters)
	if w.series != nil {
		w.series.AddRow(r)
	}
	switch {
	case w.json != nil:
		return w.json.Write(r)
	case w.table != nil:
		tableRow(w.table, r, w.clusters, w.opts.IO, !w.opts.PersistedOnly)
	default:
		w.held = append(w.held, *r)
	}
	return nil
}

func (w *reportWriter) finish(rep *survey.Report) error {
	switch {
	case w.json != nil:
		return w.json.End(rep)
	case w.table != nil:
		return w.table.Render()
	}
	rep.Rows = append(rep.Rows, w.held...)
	return output.Print(w.opts.IO, w.opts.Format, rep, nil)
}

// CellText renders a cell as "cached/persisted": "-" absent, "?" unknown (not asked or failed).
func CellText(c verdict.Cell, cachedAsked bool) string {
	cached := "?"
	switch {
	case c.Cached != nil:
		cached = fmt.Sprint(*c.Cached)
	case cachedAsked && c.Status != verdict.StatusError && c.Status != verdict.StatusCoordinatorUnavailable:
		cached = "-"
	}
	persisted := "-"
	switch {
	case c.Persisted != nil && c.Translated != nil && *c.Translated != *c.Persisted:
		// The number names another message here: show where the group really is.
		persisted = fmt.Sprintf("%d(=%d here)", *c.Persisted, *c.Translated)
	case c.Persisted != nil:
		persisted = fmt.Sprint(*c.Persisted)
	case strings.HasPrefix(c.Error, "offsets topic unreadable"):
		persisted = "?"
	}
	return cached + "/" + persisted
}

func tableHeader(clusters []string) []string {
	header := []string{"GROUP", "TOPIC", "PARTITION", "OFFSETS-PARTITION"}
	for _, c := range clusters {
		header = append(header, strings.ToUpper(c)+" CACHED/PERSISTED")
	}
	return append(header, "LAG", "STATUS")
}

func tableRow(tp *output.TablePrinter, r *verdict.Row, clusters []string, io *iostreams.IOStreams, cachedAsked bool) {
	tp.AddField(r.Group)
	tp.AddField(r.Topic)
	tp.AddField(strconv.Itoa(int(r.Partition)))
	tp.AddField(strconv.Itoa(int(r.OffsetsPartition)))
	var lags []string
	for _, c := range clusters {
		cell := r.Cell(c)
		txt := CellText(cell, cachedAsked)
		if cell.Status != verdict.StatusOK {
			txt += " " + strings.ToUpper(string(cell.Status))
		}
		tp.AddField(txt)
		if cell.Lag != nil {
			lags = append(lags, fmt.Sprintf("%s:%d", c, *cell.Lag))
		}
	}
	lag := "-"
	if len(lags) > 0 {
		lag = strings.Join(lags, " ")
	}
	tp.AddField(lag)
	st := strings.ToUpper(string(r.Status))
	if tp.IsTTY() {
		st = io.ColorScheme().Status(st)
	}
	tp.AddField(st)
	tp.EndRow()
}

// writeFooter prints the summary line, the cluster errors and the hints.
func writeFooter(w io.Writer, rep *survey.Report, rows int, hints []string) {
	var parts []string
	for _, st := range verdict.Statuses {
		if n := rep.Summary[string(st)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, strings.ToUpper(string(st))))
		}
	}
	if len(parts) == 0 {
		parts = []string{"no offsets found"}
	}
	noun := "rows"
	if rows == 1 {
		noun = "row"
	}
	fmt.Fprintf(w, "\n%d %s: %s (exit %d)\n", rows, noun, strings.Join(parts, ", "), rep.ExitCode)
	for _, e := range rep.Errors {
		fmt.Fprintf(w, "error: %s\n", e.Error)
	}
	for _, u := range rep.Unserved {
		owner := ""
		if u.Owner != "" {
			owner = "; bundle owner: " + u.Owner
		}
		fmt.Fprintf(w, "unserved: cluster %s: KoP does not serve offsets partition %d (it keeps answering %s%s): its groups can neither join nor commit; fix: %s\n",
			u.Cluster, u.OffsetsPartition, u.Answer, owner, u.Fix)
	}
	for _, wn := range rep.Warnings {
		fmt.Fprintf(w, "warning: %s\n", wn)
	}
	for _, h := range hints {
		fmt.Fprintf(w, "hint: %s\n", h)
	}
}

// hints are the next commands to run, per status found (at most 10).
type hints struct {
	list []string
	seen map[string]bool
}

func (h *hints) add(r *verdict.Row, clusters []string) {
	for _, c := range clusters {
		switch r.Cell(c).Status {
		case verdict.StatusStaleCache:
			h.addOne(fmt.Sprintf("kop-offsets reload --cluster %s --group %s   # KoP's cache on %s differs from its offsets topic", c, r.Group, c))
		case verdict.StatusReplicationLag:
			h.addOne(fmt.Sprintf("replication toward %s is behind: run check again later, or kop-offsets doctor --cluster %s", c, c))
		case verdict.StatusDiverged, verdict.StatusMissing:
			h.addOne(fmt.Sprintf("kop-offsets dump --cluster %s --group %s   # history of the group's commits on %s", c, r.Group, c))
		case verdict.StatusCoordinatorUnavailable:
			h.addOne(fmt.Sprintf("kop-offsets locate %s --cluster %s   # who should own the group's offsets partition", r.Group, c))
		case verdict.StatusMisaligned:
			h.addOne(fmt.Sprintf("the offsets of %s on %s do not denote the same records as on the other clusters: translate by timestamp before moving consumers", r.Group, c))
		}
	}
}

func (h *hints) addOne(s string) {
	if len(h.list) >= 10 || h.seen[s] {
		return
	}
	if h.seen == nil {
		h.seen = map[string]bool{}
	}
	h.seen[s] = true
	h.list = append(h.list, s)
}
