// Package repair implements `kop-offsets repair`: check, reload exactly the bundles that
// hold stale_cache rows, check again. Safe to run from cron: a lock file keeps two runs
// apart, and a run with nothing stale does nothing.
package repair

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	chk "github.com/kop-offsets/kop-offsets/internal/check"
	checkcmd "github.com/kop-offsets/kop-offsets/internal/commands/check"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	reloadcmd "github.com/kop-offsets/kop-offsets/internal/commands/reload"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/offsets"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/reload"
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
	Targets    func() (write []config.Cluster, all []config.Cluster, err error)
	Check      func(ctx context.Context, all []config.Cluster, scope Scope) (*reload.CheckDocument, error)
	NewSession reloadcmd.SessionFunc
	Confirm    func(string) (bool, error)

	LockFile string
	Scope
	reloadcmd.Flags
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
	Errors   []string        `json:"errors,omitempty"`
	ExitCode int             `json:"exitCode"`
}

// Row is one check row on one cluster.
type Row struct {
	Cluster   string `json:"cluster"`
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Status    string `json:"status"`
	Reason    string `json:"reason,omitempty"`
}

// ClusterRepair is the reload of one cluster.
type ClusterRepair struct {
	Cluster   string            `json:"cluster"`
	Groups    []string          `json:"groups"`
	Plan      *reload.Plan      `json:"plan"`
	Refusal   string            `json:"refusal,omitempty"`
	Execution *reload.Execution `json:"execution"`
	Error     string            `json:"error,omitempty"`
	ExitCode  int               `json:"exitCode"`
}

// AfterCheck is the second check: the stale_cache rows, the unserved offsets partitions and
// the coordinator_unavailable rows that remain.
type AfterCheck struct {
	Stale       []Row       `json:"stale"`
	Unserved    []Partition `json:"unserved"`
	Unavailable int         `json:"coordinatorUnavailable"`
}

// Partition is an offsets partition of one cluster.
type Partition struct {
	Cluster          string `json:"cluster"`
	OffsetsPartition int32  `json:"offsetsPartition"`
	Answer           string `json:"answer,omitempty"`
}

// DefaultLockFile is $XDG_RUNTIME_DIR/kop-offsets-repair.lock, else
// /tmp/kop-offsets-repair.lock.
func DefaultLockFile() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "kop-offsets-repair.lock")
	}
	return filepath.Join(os.TempDir(), "kop-offsets-repair.lock")
}

// NewCmdRepair returns `repair`. runF replaces the run function in tests.
func NewCmdRepair(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "repair",
		Short: "Check, reload exactly the bundles holding stale_cache rows, check again",
		Long: strings.TrimSpace(`
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

--group and --topic (globs) narrow both checks to some groups or topics, as in check; the
bundles reloaded are still whole (their other groups reload too, and are in the plan).

Safety as in reload: the plan is shown, --yes or a terminal confirmation is needed
(--dry-run stops after the plans), bundles with groups live on the cluster written to (or
of unknown activity there) are refused unless --allow-active, and a bundle where KoP would
then serve an older offset or none is always refused (repair has no --accept-loss). At most --max-bundles bundles (default 1) are
reloaded per cluster and run; the others stay stale (exit 1) and the next run takes them.

Cron: a lock file (--lock-file, default $XDG_RUNTIME_DIR/kop-offsets-repair.lock or
/tmp/kop-offsets-repair.lock, flock) keeps two runs apart: a second run while one holds it
does nothing and exits 3 ("another repair is running"). A run with nothing stale does
nothing and exits 0.

Exit codes: 0 nothing stale or unserved, or everything it may fix is fixed (the second check
finds no stale row, no unserved partition and no coordinator_unavailable row); 1 stale rows,
unserved partitions or coordinator_unavailable rows remain (refused, beyond --max-bundles, or
still there after the reload), or misaligned rows were left; 2 usage error, no --yes
without a terminal, declined; 3 an endpoint failed, or the lock is held; 4 a reload did
not achieve its goal (the cache still differs after --wait).`),
		Example: cmdutil.Examples(`
  kop-offsets repair --dry-run
  kop-offsets repair --cluster wus --yes
  # refresh one group on the standby before failing it over
  kop-offsets repair --cluster wus --group orders-consumer --yes
  # crontab: every 10 minutes, unattended
  */10 * * * * kop-offsets repair --yes -o json >> /var/log/kop-offsets-repair.json`),
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Validate(); err != nil {
				return err
			}
			var err error
			if opts.Format, err = f.OutputFormat(output.StandardSpec); err != nil {
				return err
			}
			opts.Targets = func() ([]config.Cluster, []config.Cluster, error) {
				cfg, err := f.Config()
				if err != nil {
					return nil, nil, err
				}
				sel, err := f.Clusters()
				return sel, cfg.Clusters, err
			}
			opts.Check = FactoryCheck(f)
			opts.NewSession = reloadcmd.NewSessionFunc(f, func(format string, a ...any) {
				f.Logger().Debug(fmt.Sprintf(format, a...))
			})
			if runF != nil {
				return runF(opts)
			}
			return repairRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.LockFile, "lock-file", DefaultLockFile(), "lock file that keeps two repair runs apart")
	fl.StringArrayVar(&opts.Groups, "group", nil, "only these groups: name or glob (path.Match), repeatable (default: every group)")
	fl.StringArrayVar(&opts.Topics, "topic", nil, "only rows of these topics: name or glob, short or full name, repeatable")
	reloadcmd.BindReloadFlags(fl, &opts.Flags, "check and print the plans, write nothing",
		DefaultMaxBundles, "bundles reloaded per cluster and run")
	return cmd
}

// FactoryCheck runs the check engine (internal/check, as `check` does, cached side
// included) over all clusters and returns its report in the `check -o json` shape.
func FactoryCheck(f *cmdutil.Factory) func(context.Context, []config.Cluster, Scope) (*reload.CheckDocument, error) {
	return func(ctx context.Context, all []config.Cluster, scope Scope) (*reload.CheckDocument, error) {
		sources, closeAll, err := checkcmd.BuildSources(func() ([]config.Cluster, error) { return all, nil },
			checkcmd.FactoryConnect(f), checkcmd.SourceOptions{Cached: true, Copies: true})
		if err != nil {
			return nil, err
		}
		defer closeAll()
		rep, err := chk.Run(ctx, sources, chk.Options{Groups: scope.Groups, Topics: scope.Topics})
		if err != nil {
			return nil, err
		}
		return toDocument(rep)
	}
}

// toDocument converts the engine's report through its JSON form, the contract (cli.md).
func toDocument(rep any) (*reload.CheckDocument, error) {
	b, err := json.Marshal(rep)
	if err != nil {
		return nil, err
	}
	return reload.ParseCheckDocument(bytes.NewReader(b))
}

func repairRun(ctx context.Context, opts *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := reloadcmd.CheckConfirmable(opts.IO, opts.DryRun, opts.Yes); err != nil {
		return err
	}
	write, all, err := opts.Targets()
	if err != nil {
		return err
	}
	unlock, err := lock(opts.LockFile)
	if err != nil {
		return cmdutil.UnreachableError(err)
	}
	defer unlock()

	doc := &Document{SchemaVersion: 1, DryRun: opts.DryRun, Stale: []Row{}, Unserved: []Partition{}, Left: []Row{}, Clusters: []ClusterRepair{}, Summary: map[string]int{}}
	first, err := opts.Check(ctx, all, opts.Scope)
	if err != nil {
		return cmdutil.UnreachableError(fmt.Errorf("check: %w (nothing was reloaded)", err))
	}
	endpointFailed := first.ExitCode == cmdutil.ExitUnreachable
	if endpointFailed {
		doc.Errors = append(doc.Errors, "the first check could not reach every endpoint: only what it could check is repaired")
	}
	stale := map[string][]string{}
	unserved := map[string][]int32{}
	for _, cl := range write {
		for _, u := range first.Unserved {
			if u.Cluster == cl.Name {
				unserved[cl.Name] = append(unserved[cl.Name], u.OffsetsPartition)
				doc.Unserved = append(doc.Unserved, Partition{Cluster: u.Cluster, OffsetsPartition: u.OffsetsPartition, Answer: u.Answer})
			}
		}
	}
	misaligned := 0 // left rows whose standby would skip or re-read: the run cannot end ok
	for _, cl := range write {
		for _, r := range first.Rows {
			st := r.CellStatus(cl.Name)
			row := Row{Cluster: cl.Name, Group: r.Group, Topic: r.Topic, Partition: r.Partition, Status: st}
			switch {
			case st == reload.StatusCoordinatorUnavailable && slices.Contains(unserved[cl.Name], r.OffsetsPartition):
				// Its partition's bundle is reloaded: the second check says whether it is back.
			case r.Stale(cl.Name):
				row.Status = reload.StatusStaleCache
				doc.Stale = append(doc.Stale, row)
				if !slices.Contains(stale[cl.Name], r.Group) {
					stale[cl.Name] = append(stale[cl.Name], r.Group)
				}
			case st == reload.StatusOK || st == "" || st == string(offsets.StatusExpiring):
			default:
				row.Reason = reload.LeaveReason(st)
				if c := r.Clusters[cl.Name]; c.Error != "" {
					row.Reason += ": " + c.Error
				} else if st == reload.StatusMisaligned && c.Detail != "" {
					row.Reason += ": " + c.Detail
				}
				doc.Left = append(doc.Left, row)
				if st == reload.StatusMisaligned {
					misaligned++
				}
			}
		}
	}
	doc.Summary["stale"] = len(doc.Stale)
	doc.Summary["unserved"] = len(doc.Unserved)
	doc.Summary["left"] = len(doc.Left)

	worst := 0
	raise := func(code int) {
		rank := map[int]int{0: 0, 1: 1, 4: 2, 3: 3}
		if rank[code] > rank[worst] {
			worst = code
		}
	}
	if endpointFailed {
		raise(cmdutil.ExitUnreachable)
	}
	if misaligned > 0 {
		raise(cmdutil.ExitDrift)
		fmt.Fprintf(opts.IO.ErrOut, "%d misaligned rows left alone: a reload would make KoP serve a number that names another message; run the failover command in their reason\n", misaligned)
	}
	if len(doc.Stale) == 0 && len(doc.Unserved) == 0 {
		fmt.Fprintln(opts.IO.ErrOut, "nothing stale or unserved: nothing to do")
		doc.After = &AfterCheck{Stale: []Row{}, Unserved: []Partition{}}
		return finish(opts, doc, worst)
	}

	executed := false
	for _, cl := range write {
		groups, parts := stale[cl.Name], unserved[cl.Name]
		if len(groups) == 0 && len(parts) == 0 {
			continue
		}
		slices.Sort(groups)
		cr := ClusterRepair{Cluster: cl.Name, Groups: groups}
		sess, err := opts.NewSession(cl, all)
		if err != nil {
			cr.Error, cr.ExitCode = err.Error(), cmdutil.ExitCode(err)
			raise(cmdutil.ExitUnreachable)
			doc.Clusters = append(doc.Clusters, cr)
			continue
		}
		sess.Planner.AllowActive = opts.AllowActive
		sess.Executor.Wait, sess.Executor.Pause = opts.Wait, opts.Pause
		plan, err := sess.Planner.Plan(ctx, reload.Request{Groups: groups, Partitions: parts})
		if err != nil {
			sess.Close()
			cr.Error, cr.ExitCode = err.Error()+" (nothing was unloaded)", cmdutil.ExitUnreachable
			raise(cmdutil.ExitUnreachable)
			doc.Clusters = append(doc.Clusters, cr)
			continue
		}
		cr.Plan = plan
		res := reloadcmd.RunPlan(ctx, opts.IO, opts.Format, plan, sess.Executor, reloadcmd.RunOptions{
			DryRun: opts.DryRun, Yes: opts.Yes, MaxBundles: opts.MaxBundles, TruncateToMax: true, Confirm: opts.Confirm,
		})
		sess.Close()
		if res.Err != nil {
			return res.Err
		}
		cr.Refusal, cr.Execution, cr.ExitCode = res.Refusal, res.Execution, res.ExitCode
		if res.Refusal != "" {
			fmt.Fprintf(opts.IO.ErrOut, "cluster %s: %s\n", cl.Name, res.Refusal)
		}
		if res.Execution != nil {
			executed = true
			if opts.Format == output.Table {
				_ = reloadcmd.WriteExecution(opts.IO.Out, opts.IO.IsStdoutTTY(), opts.IO.ColorScheme(), res.Execution)
				fmt.Fprintln(opts.IO.Out)
			}
			fmt.Fprintln(opts.IO.ErrOut, reloadcmd.Summary(cl.Name, res.Execution))
			if res.ExitCode == cmdutil.ExitUnreachable || res.ExitCode == cmdutil.ExitWriteFailed {
				raise(res.ExitCode)
			}
		}
		doc.Clusters = append(doc.Clusters, cr)
	}
	if opts.DryRun {
		return finish(opts, doc, worst)
	}

	doc.After = &AfterCheck{Stale: []Row{}, Unserved: []Partition{}}
	if !executed {
		// Nothing was unloaded: the first check still stands.
		doc.After.Stale, doc.After.Unserved = doc.Stale, doc.Unserved
	} else {
		second, err := opts.Check(ctx, all, opts.Scope)
		if err != nil {
			doc.Errors = append(doc.Errors, "second check: "+err.Error())
			raise(cmdutil.ExitUnreachable)
		} else {
			if second.ExitCode == cmdutil.ExitUnreachable {
				raise(cmdutil.ExitUnreachable)
			}
			for _, cl := range write {
				for _, r := range second.Rows {
					if r.Stale(cl.Name) {
						doc.After.Stale = append(doc.After.Stale, Row{Cluster: cl.Name, Group: r.Group, Topic: r.Topic, Partition: r.Partition, Status: reload.StatusStaleCache})
					}
					if r.CellStatus(cl.Name) == reload.StatusCoordinatorUnavailable {
						doc.After.Unavailable++
					}
				}
				for _, u := range second.Unserved {
					if u.Cluster == cl.Name {
						doc.After.Unserved = append(doc.After.Unserved, Partition{Cluster: u.Cluster, OffsetsPartition: u.OffsetsPartition, Answer: u.Answer})
					}
				}
			}
		}
	}
	// No run that leaves rows stale or unserved ends ok.
	if len(doc.After.Stale) > 0 || len(doc.After.Unserved) > 0 || doc.After.Unavailable > 0 {
		raise(cmdutil.ExitDrift)
	}
	doc.Summary["staleAfter"] = len(doc.After.Stale)
	doc.Summary["unservedAfter"] = len(doc.After.Unserved)
	return finish(opts, doc, worst)
}

func finish(opts *Options, doc *Document, code int) error {
	doc.ExitCode = code
	if opts.Format != output.Table {
		if err := output.Print(opts.IO, opts.Format, doc, nil); err != nil {
			return err
		}
		return cmdutil.SilentError(code)
	}
	w := opts.IO.Out
	tty := opts.IO.IsStdoutTTY()
	if len(doc.Left) > 0 {
		fmt.Fprintln(w, "Left alone (repair only fixes stale_cache):")
		tp := output.NewTablePrinterTo(w, tty)
		tp.AddHeader("CLUSTER", "GROUP", "TOPIC", "PARTITION", "STATUS", "WHY")
		for _, r := range doc.Left {
			tp.AddRow(r.Cluster, r.Group, r.Topic, fmt.Sprint(r.Partition), strings.ToUpper(r.Status), r.Reason)
		}
		_ = tp.Render()
	}
	if doc.After != nil && (len(doc.Unserved) > 0 || len(doc.After.Unserved) > 0) {
		fmt.Fprintf(w, "unserved offsets partitions: %d before, %d after", len(doc.Unserved), len(doc.After.Unserved))
		for _, u := range doc.After.Unserved {
			fmt.Fprintf(w, "; %s/%d (%s)", u.Cluster, u.OffsetsPartition, u.Answer)
		}
		fmt.Fprintln(w)
	}
	if doc.After != nil && doc.After.Unavailable > 0 {
		fmt.Fprintf(w, "coordinator_unavailable rows after: %d\n", doc.After.Unavailable)
	}
	if doc.After != nil {
		if len(doc.After.Stale) == 0 {
			fmt.Fprintf(w, "stale_cache rows: %d before, 0 after\n", len(doc.Stale))
		} else {
			fmt.Fprintf(w, "stale_cache rows: %d before, %d still stale:\n", len(doc.Stale), len(doc.After.Stale))
			tp := output.NewTablePrinterTo(w, tty)
			tp.AddHeader("CLUSTER", "GROUP", "TOPIC", "PARTITION")
			for _, r := range doc.After.Stale {
				tp.AddRow(r.Cluster, r.Group, r.Topic, fmt.Sprint(r.Partition))
			}
			_ = tp.Render()
		}
	}
	for _, e := range doc.Errors {
		fmt.Fprintln(opts.IO.ErrOut, e)
	}
	return cmdutil.SilentError(code)
}

// writePID records the holder of the lock for an operator who finds the file.
func writePID(fh *os.File) {
	_ = fh.Truncate(0)
	_, _ = fmt.Fprintf(fh, "%d\n", os.Getpid())
}
