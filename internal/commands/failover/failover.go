// Package failover implements `kop-offsets failover`: land groups on the target cluster at
// the first message they have not consumed on the source.
package failover

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/commands/clients"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/planrun"
	"github.com/kop-offsets/kop-offsets/internal/commands/scope"
	"github.com/kop-offsets/kop-offsets/internal/commands/session"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/connect"
	"github.com/kop-offsets/kop-offsets/internal/explain"
	fo "github.com/kop-offsets/kop-offsets/internal/failover"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/survey"
)

// Options of `failover`.
type Options struct {
	IO     *iostreams.IOStreams
	Format output.Format

	From, To   string
	Groups     []string
	Topics     []string
	DryRun     bool
	Yes        bool
	AcceptLoss bool
	// SourceGone: --source-gone, the operator says the source's region is gone.
	SourceGone   bool
	AlignmentMax int64
	ShowAll      bool // --show-all: every row of the plan and result tables
	// Writes: the writer lease and the audit trail, as for reload and repair.
	Writes session.Writes

	// Session builds the planner and executor (tests replace it).
	Session func(from, to config.Cluster, all []config.Cluster) (*Session, error)
	Config  func() (*config.Config, error)
	Confirm func(string) (bool, error)
}

// Session is a failover wired to two clusters.
type Session struct {
	Planner  *fo.Planner
	Executor *fo.Executor
	// BeforeWrite opens the audit trail and takes the target's writer lease (nil: neither).
	BeforeWrite func(context.Context) error
	Close       func()
}

// Document is what `failover -o json` prints.
type Document struct {
	SchemaVersion int        `json:"schemaVersion"`
	DryRun        bool       `json:"dryRun"`
	Plan          *fo.Plan   `json:"plan"`
	Result        *fo.Result `json:"result"`
	// Omitted: what a brief document (source gone, no --show-all) leaves out.
	Omitted  *Omitted        `json:"omitted,omitempty"`
	ExitCode outcome.Outcome `json:"exitCode"`
}

// failoverLong is the long help of the command.
const failoverLong = `
Move consumer groups from one cluster (--source, where they consumed) to another
(--target) so that each starts at the first message it has not consumed on the
source: the offset translated by message identity (timestamp, key, value and headers of the
records, read through both clusters' KoP), which differs from the source's number when the
topic copies differ (replication enabled after data existed, messages written on one side
only, producers on both sides). It re-reads rather than skips: a message found on the target
alone counts as not consumed.

Preflight, per group: no live members on the target; replication of the group's offsets
partition from the source caught up; both copies of each topic read (alignment known); the
target's own newer commit is never moved back (--accept-loss does). A refused row is named
with its reason and the run exits 1.

Then, after the plan and a confirmation: the translated offsets are written into the
target's offsets topic in KoP's record format with replication disabled (they never reach
the source, which keeps serving its own offsets, also after its next load), and the target's
bundles are reloaded as 'kop-offsets reload' does (never-worse plan, paced unload, lookup,
verification). Nothing is written when the reload would be refused. Afterwards each row
shows what the target and the source serve and which message sits at the translated offset.

Commits the group makes later on the source replicate in the source's numbering again:
failover is a point in time, run it when the group moves (docs/failover.md).

When the source's region is gone, say so: --source-gone (the source is not contacted), or
answer yes when asked on a terminal after the source did not answer within --timeout.
Without either, a source that does not answer ends the run (exit 3, nothing written): a
refused connection may be a wrong URL, not a disaster. With the source gone each row lands
on the newest position that is safe, named per row: the translation 'watch
--keep-translations' kept of the source's newest commit (kept), of an older one (older_kept,
with how much it re-reads), the group's own commit on the target (own_commit), or the
earliest position of the target's copy (earliest, with how much it re-reads). A row is
left, with its reason, where landing would move back what KoP serves (--accept-loss lands
it) or its group has members on the target; KoP keeps serving what it served for it (the
value is written back where the reload of its bundle would change it), and the other rows
of its bundle land. Exit 0: everything landed on kept translations; 5: landed, some re-read;
1: some rows left (docs/failover.md, "Disaster runbook"). Run 'watch --keep-translations' while both clusters answer to have them.
With the source gone and more than 1,000 rows, -o json counts the rows that landed on their
kept translation and were proven served ('omitted', 'result.proven') instead of listing them;
--show-all lists every row.`

// NewCmdFailover returns `failover`. runF replaces the run function in tests.
func NewCmdFailover(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams, Config: scope.TenantConfig(f)}
	cmd := &cobra.Command{
		Use:   "failover --target CLUSTER [--source CLUSTER] [--group G...] [--topic T...]",
		Short: "Land groups on another cluster at the first message they have not consumed (offsets translated by message identity)",
		Long:  strings.TrimSpace(failoverLong),
		Example: cmdutil.Examples(`
  # what would happen for one group (nothing is written)
  kop-offsets failover --source scus --target wus --group orders --dry-run

  # one group, one topic
  kop-offsets failover --source scus --target wus --group orders --topic payments --yes

  # scus's region is gone: land every group on wus from the translations kept there
  kop-offsets failover --source scus --target wus --source-gone --yes

  # every group written on scus (two clusters configured: --source is the other one)
  kop-offsets failover --target wus -o json --yes`),
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if opts.Format, err = f.OutputFormat(output.StandardSpec); err != nil {
				return err
			}
			if opts.To == "" {
				return cmdutil.FlagErrorf("--target names the cluster the groups move to")
			}
			if opts.From == opts.To {
				return cmdutil.FlagErrorf("--source and --target name the same cluster %q", opts.To)
			}
			if opts.AlignmentMax < 0 {
				return cmdutil.FlagErrorf("--alignment-max-messages must not be negative")
			}
			if err := opts.Writes.Validate(); err != nil {
				return err
			}
			if opts.Session == nil {
				opts.Session = FactorySession(f, opts)
			}
			if opts.Confirm == nil {
				opts.Confirm = func(q string) (bool, error) { return planrun.Confirm(opts.IO, q) }
			}
			if runF != nil {
				return runF(opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.From, "source", "", "the source cluster, where the groups consumed (default: the other one when two are configured)")
	fl.StringVar(&opts.To, "target", "", "the target cluster, where the groups move to (required)")
	cmdutil.MarkCluster(fl, "source", "target")
	cmdutil.Renamed(fl, f.IOStreams.ErrOut, "from", "source")
	cmdutil.Renamed(fl, f.IOStreams.ErrOut, "to", "target")
	cmdutil.PatternsVar(fl, &opts.Groups, "group", "group name or glob, repeatable (default: every group written on the source)")
	cmdutil.PatternsVar(fl, &opts.Topics, "topic", "topic name or glob, short or full name, repeatable (default: every topic)")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "show the plan (translations, preflight) and write nothing")
	fl.BoolVar(&opts.Yes, "yes", false, "do not ask for confirmation")
	fl.BoolVar(&opts.AcceptLoss, "accept-loss", false, "also move back offsets the group committed on the target itself, and reload bundles whose other rows would lose or skip")
	fl.BoolVar(&opts.SourceGone, "source-gone", false, "the source's region is gone: do not contact it, land each group on what the target kept (docs/failover.md, \"Disaster runbook\")")
	fl.Int64Var(&opts.AlignmentMax, "alignment-max-messages", align.DefaultMaxMessages, "messages read at most per copy of a topic partition to translate (beyond: refused)")
	session.BindWriteFlags(fl, &opts.Writes, true)
	planrun.BindShowAll(fl, &opts.ShowAll)
	fl.Lookup("show-all").Usage += fmt.Sprintf("; -o json with the source gone and over %d rows: also each row that landed on its kept translation and was proven served (default: counted, not listed)", BriefRows)
	return cmd
}

func run(ctx context.Context, opts *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := planrun.CheckConfirmable(opts.IO, opts.DryRun, opts.Yes); err != nil {
		return err
	}
	cfg, err := opts.Config()
	if err != nil {
		return err
	}
	from, to, err := pick(cfg.Clusters, opts.From, opts.To)
	if err != nil {
		return err
	}
	sess, err := opts.Session(from, to, cfg.Clusters)
	if err != nil {
		return err
	}
	defer sess.Close()
	progress := opts.IO.StartProgress("planning the failover")
	plan, err := sess.Planner.Plan(ctx, fo.Scope{Groups: opts.Groups, Topics: opts.Topics})
	progress.Stop()
	if err != nil {
		return cmdutil.UnreachableError(fmt.Errorf("plan: %w (nothing was written)", err))
	}
	doc := &Document{SchemaVersion: 1, DryRun: opts.DryRun, Plan: plan}
	if opts.Format == output.Table {
		writePlan(opts.IO.Out, output.StdoutLayout(opts.IO).Cut(opts.ShowAll), plan)
	}
	if len(plan.Rows) == 0 {
		fmt.Fprintf(opts.IO.ErrOut, "no group committed on %s matches: nothing to do\n", from.Name)
		return finish(opts, doc, outcome.OK)
	}
	todo := plan.Groups(fo.ActionWrite, fo.ActionReload)
	if opts.DryRun || len(todo) == 0 {
		if len(todo) == 0 {
			fmt.Fprintln(opts.IO.ErrOut, "nothing to write or reload")
		}
		return finish(opts, doc, plan.Outcome())
	}
	if !opts.Yes {
		ok, err := opts.Confirm(fmt.Sprintf("Write the translated offsets of %d groups on %s and reload their bundles?", len(todo), to.Name))
		if err != nil {
			return cmdutil.UsageError(fmt.Errorf("confirmation: %w; nothing was written", err)) // 2, as reload and repair
		}
		if !ok {
			return cmdutil.UsageErrorf("not confirmed: nothing was written")
		}
	}
	if sess.BeforeWrite != nil {
		// The trail opened and the writer lease taken before the first write, as reload and
		// repair do (planrun.RunPlan): a lease held elsewhere is 3, a trail that cannot be
		// written 2, with nothing written.
		if err := sess.BeforeWrite(ctx); err != nil {
			doc.Result = &fo.Result{Written: []string{}, Proof: []fo.Proof{}, Error: err.Error(), ExitCode: cmdutil.OutcomeOf(err)}
			fmt.Fprintln(opts.IO.ErrOut, "error:", err)
			return finish(opts, doc, doc.Result.ExitCode)
		}
	}
	res := sess.Executor.Apply(ctx, plan)
	doc.Result = res
	if opts.Format == output.Table {
		writeResult(opts.IO.Out, output.StdoutLayout(opts.IO).Cut(opts.ShowAll), plan, res)
	}
	if res.Error != "" {
		fmt.Fprintln(opts.IO.ErrOut, "error:", res.Error)
	}
	if opts.Format == output.Table { // every row that failed (res.Error names the first)
		for _, we := range res.WriteErrors {
			fmt.Fprintf(opts.IO.ErrOut, "  not written: cluster %s group %s topic %s partition %d (offset %d): %s\n", we.Cluster, we.Group, we.Topic, we.Partition, we.Offset, we.Error)
		}
	}
	return finish(opts, doc, res.ExitCode)
}

func finish(opts *Options, doc *Document, o outcome.Outcome) error {
	doc.ExitCode = o
	if opts.Format != output.Table {
		if !opts.ShowAll {
			doc = brief(doc)
		}
		if err := output.Print(opts.IO, opts.Format, doc, nil); err != nil {
			return err
		}
	}
	return cmdutil.SilentError(o)
}

// pick resolves --source and --target among the configured clusters.
func pick(all []config.Cluster, from, to string) (config.Cluster, config.Cluster, error) {
	var f, t *config.Cluster
	for i := range all {
		switch all[i].Name {
		case to:
			t = &all[i]
		case from:
			f = &all[i]
		}
	}
	if t == nil {
		return config.Cluster{}, config.Cluster{}, cmdutil.UsageErrorf("--target %q is not a configured cluster (%s)", to, strings.Join(config.Names(all), ", "))
	}
	if from == "" {
		if len(all) != 2 {
			return config.Cluster{}, config.Cluster{}, cmdutil.UsageErrorf("--source is required with %d configured clusters (%s)", len(all), strings.Join(config.Names(all), ", "))
		}
		for i := range all {
			if all[i].Name != to {
				f = &all[i]
			}
		}
	}
	if f == nil {
		return config.Cluster{}, config.Cluster{}, cmdutil.UsageErrorf("--source %q is not a configured cluster (%s)", from, strings.Join(config.Names(all), ", "))
	}
	return *f, *t, nil
}

func writePlan(w io.Writer, l output.Layout, plan *fo.Plan) {
	fmt.Fprintf(w, "Failover %s -> %s\n", plan.From, plan.To)
	if plan.Blocked != "" {
		fmt.Fprintf(w, "Blocked: %s\n", plan.Blocked)
	}
	if plan.SourceDown != "" {
		fmt.Fprintf(w, "Source %s is gone (%s): each row lands on the newest safe position %s kept, nothing newer was checked\n", plan.From, plan.SourceDown, plan.To)
	}
	tp := output.NewTablePrinterTo(w, l)
	tp.AddHeader("GROUP", "TOPIC", "PARTITION", strings.ToUpper(plan.From)+" COMMITTED", strings.ToUpper(plan.To)+" TRANSLATED",
		strings.ToUpper(plan.To)+" SERVES/PERSISTED", "ACTION", "WHY")
	for _, r := range plan.Rows {
		action := strings.ToUpper(r.Action)
		if r.Landing != "" {
			action += " (" + r.Landing + ")"
		}
		tp.AddRow(r.Group, r.Topic, fmt.Sprint(r.Partition), fmt.Sprint(r.Source), opt(r.Translated),
			opt(r.Served)+"/"+opt(r.Persisted), action, r.Why)
	}
	_ = tp.Render()
	fmt.Fprintf(w, "%d rows: %d write, %d reload, %d already served, %d hold, %d refused\n", len(plan.Rows),
		plan.Count(fo.ActionWrite), plan.Count(fo.ActionReload), plan.Count(fo.ActionNone), plan.Count(fo.ActionHold), plan.Count(fo.ActionRefused))
	writeLandings(w, plan)
}

// writeLandings prints, with the source gone, how many rows land how.
func writeLandings(w io.Writer, plan *fo.Plan) {
	if plan.SourceDown == "" {
		return
	}
	var parts []string
	for _, l := range fo.Landings {
		parts = append(parts, fmt.Sprintf("%d %s", plan.Landings[l], l))
	}
	fmt.Fprintf(w, "landings: %s\n", strings.Join(parts, ", "))
}

func writeResult(w io.Writer, l output.Layout, plan *fo.Plan, res *fo.Result) {
	if len(res.Proof) == 0 {
		return
	}
	defer writeLandings(w, plan) // rows a refused bundle left after the plan was printed
	fmt.Fprintln(w)
	tp := output.NewTablePrinterTo(w, l)
	tp.AddHeader("GROUP", "TOPIC", "PARTITION", strings.ToUpper(plan.To)+" SERVES", "WANT", strings.ToUpper(plan.From)+" SERVES", "WANT", "OK", "MESSAGE")
	for _, p := range res.Proof {
		ok := "yes"
		if !p.OK {
			ok = "NO"
		}
		tp.AddRow(p.Group, p.Topic, fmt.Sprint(p.Partition), opt(p.TargetServes), fmt.Sprint(p.Translated), opt(p.SourceServes), fmt.Sprint(p.Source), ok, p.Message)
	}
	_ = tp.Render()
}

func opt(p *int64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

// FactorySession wires the real clients: both offsets topics with non-durable readers,
// both KoPs through kadm, the copies of the data topics through both KoPs, the source's
// replication stats, a producer on the target's offsets topic, and a reload session of the
// target.
func FactorySession(f *cmdutil.Factory, opts *Options) func(from, to config.Cluster, all []config.Cluster) (*Session, error) {
	return func(from, to config.Cluster, all []config.Cluster) (*Session, error) {
		var closers []func()
		closeAll := func() {
			for i := len(closers) - 1; i >= 0; i-- {
				closers[i]()
			}
		}
		if _, err := f.Config(); err != nil {
			return nil, err
		}
		// The source is asked once, within the request timeout, unless said gone; one that
		// is gone is not asked again: the failover lands on what the target kept. The target
		// is dialled before a source that did not answer refuses the run: both are named
		// when both are down.
		var srcErr error
		if !opts.SourceGone {
			if srcErr = probe(f, from); srcErr != nil {
				fmt.Fprint(opts.IO.ErrOut, explain.Lines(explain.Line(fmt.Errorf("cluster %s did not answer: %w", from.Name, srcErr)), explain.FixOf(srcErr)))
			}
		}
		dst, dstPulsar, err := dialSide(f, to, &closers)
		if err != nil {
			closeAll()
			return nil, err
		}
		// One reader of the target's copies, for the landings and the aligner alike.
		dstCopies := clients.DataCopies(f, to)
		if dst.Groups != nil {
			dst.Copies = dstCopies
		}
		src, srcPulsar, srcDown, err := dialSource(f, opts, from, to, srcErr, &closers)
		if err != nil {
			closeAll()
			return nil, err
		}
		// Pulsar name -> config name, after each side's own is checked.
		toClient := dstPulsar.Client
		aligner := &align.Aligner{MaxMessages: opts.AlignmentMax, Sources: map[string]align.Source{from.Name: clients.DataCopies(f, from), to.Name: dstCopies}}
		logf := func(format string, a ...any) { fmt.Fprintf(opts.IO.ErrOut, format+"\n", a...) }
		rs, err := session.NewSessionFunc(f, logf, opts.Writes)(to, all)
		if err != nil {
			closeAll()
			return nil, err
		}
		closers = append(closers, rs.Close)
		rs.Planner.AcceptLoss = opts.AcceptLoss
		if srcDown != nil {
			// Its activity is unknown (reported, not asked) and its copies unreadable, with
			// the reason it is down, not "no kafkaBootstrap configured".
			rs.NotAnswering(from.Name, srcDown)
		}
		n, err := dst.Reader.Partitions(context.Background())
		if err != nil {
			closeAll()
			return nil, cmdutil.UnreachableError(fmt.Errorf("cluster %s: partition count of the offsets topic: %w", to.Name, err))
		}
		w := kop.NewWriter(toClient, to.OffsetsTopic(), n)
		w.Local = true
		closers = append(closers, w.Close)
		planner := &fo.Planner{From: src, To: dst, Aligner: aligner, AcceptLoss: opts.AcceptLoss, SourceDown: srcDown}
		if srcDown == nil {
			planner.Backlog = fo.AdminBacklog{Replication: survey.AdminReplication{Admin: srcPulsar.Admin, OffsetsTopic: from.OffsetsTopic(), Names: dstPulsar.Names}, Target: to.Name}
		}
		return &Session{
			Planner: planner,
			Executor: &fo.Executor{From: src, To: dst, Writer: rs.Commits(w, to.OffsetsTopic()), Holder: rs.Commits(kop.HoldWriter{W: w, From: from.Name}, to.OffsetsTopic()),
				Reloader: fo.SessionReloader{Planner: rs.Planner, Executor: rs.Executor},
				Log:      logf},
			BeforeWrite: rs.BeforeWrite,
			Close:       closeAll,
		}, nil
	}
}

// dialSide wires one side of a failover: its offsets topic through a non-durable reader
// (after its Pulsar name is checked) and its KoP through kadm when it has kafkaBootstrap.
// What it opens is appended to closers.
func dialSide(f *cmdutil.Factory, cl config.Cluster, closers *[]func()) (fo.Side, *clients.PulsarSide, error) {
	ps, err := clients.DialPulsar(f, cl, true)
	if err != nil {
		return fo.Side{}, nil, err
	}
	*closers = append(*closers, ps.Client.Close)
	s := fo.Side{Name: cl.Name, KafkaNamespace: cl.KafkaNamespace, Reader: ps.Reader}
	kc, err := f.KafkaClient(cl)
	switch {
	case errors.Is(err, connect.ErrNotConfigured):
	case err != nil:
		return fo.Side{}, nil, err
	default:
		*closers = append(*closers, kc.Close)
		s.Groups = kop.KafkaGroups{Admin: kadm.NewClient(kc), Client: kc, KafkaNamespace: cl.KafkaNamespace}
	}
	return s, ps, nil
}
