// Package reload implements `kop-offsets reload`: unload the namespace bundles that hold
// the offsets partitions of some groups, make a broker load them again, and verify that KoP
// then serves the persisted offsets. The domain logic is in internal/reload.
package reload

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/planrun"
	"github.com/kop-offsets/kop-offsets/internal/commands/render"
	"github.com/kop-offsets/kop-offsets/internal/commands/scope"
	"github.com/kop-offsets/kop-offsets/internal/commands/session"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/reload"
)

// DefaultMaxBundles is the default of --max-plan-bundles: one bundle, i.e. one group's offsets
// partition and its neighbours. Unloading more at once multiplies the rebalances; an operator
// who wants it says so.
const DefaultMaxBundles = 1

// Options of `reload`.
type Options struct {
	IO     *iostreams.IOStreams
	Format output.Format

	// Target returns the cluster to write to and every configured cluster.
	Target     func() (config.Cluster, []config.Cluster, error)
	NewSession session.Func
	// Confirm asks the operator on the terminal; default Confirm.
	Confirm func(question string) (bool, error)

	Groups     []string
	Partitions []int32
	FromCheck  string
	// AcceptLoss reloads bundles where KoP would then serve older offsets or none.
	AcceptLoss bool
	planrun.Flags
	session.Writes
}

// Document is what `reload -o json` prints.
type Document struct {
	SchemaVersion int          `json:"schemaVersion"`
	DryRun        bool         `json:"dryRun"`
	Plan          *reload.Plan `json:"plan"`
	// Refusal says why nothing was done (every bundle refused, more bundles than
	// --max-plan-bundles, the operator declined); empty when the plan was carried out.
	Refusal   string            `json:"refusal,omitempty"`
	Execution *reload.Execution `json:"execution"`
	ExitCode  outcome.Outcome   `json:"exitCode"`
}

// reloadLong is the long help of the command.
const reloadLong = `
Make KoP on one cluster (--cluster) drop and reload the cached offsets of some consumer
groups, without restarting brokers, and prove that it then serves what its offsets topic
holds.

KoP reads an offsets partition only when its broker takes ownership of the namespace
bundle of <tenant>/__kafka that holds the partition. A single-topic unload clears the
partition's groups but does not load them again. So reload, for each bundle:
  1. unloads the bundle (admin API),
  2. looks up every offsets partition in it, which makes a broker take the bundle: KoP
     loads every offsets partition of the bundle from the topic,
  3. waits (at most --wait) until OffsetFetch for every affected group answers without
     COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR and with the offsets now persisted.

Blast radius: every group persisted in any offsets partition of those bundles is reloaded,
and the members of groups live on this cluster pause while KoP loads (measured on KoP 3.1:
about a second for a consumer that commits asynchronously, a few seconds for one that
commits synchronously; no rebalance, no duplicate, no offset back: docs/reload.md). The plan
lists them all, with their members on this cluster and on the other configured clusters
(DescribeGroups). A group live on this cluster is reloaded (its own commits since the plan
are not a loss: the load reads them back); --refuse-live refuses such bundles. A bundle with
a group whose activity here is unknown (KoP did not answer: not proven idle) is refused
unless --allow-active. A group live only on another cluster (the primary of an
active-passive pair) is reported, since its cache here lags again as it commits. More
bundles than --max-plan-bundles (default 1): nothing is done.

Never worse: the plan asks KoP what it serves for every affected group and compares it with
what its loader would load from the topic (a transactional commit whose marker the loader
cannot see, a record KoP cannot parse, compaction, a tombstone). A bundle where any offset
would move back or vanish is refused, naming the rows and why, unless --accept-loss. The
comparison is made again just before each unload. Bundles are paced: the next one is
unloaded only when KoP answers for every offsets partition of the previous one; a partition
left unloaded is unloaded and looked up once more, then reported with the command to fix it.

The plan is printed first. --dry-run stops there. Otherwise reload asks on a terminal, or
needs --yes; without a terminal and without --yes it exits 2 before contacting anything.
It stops at the first bundle that does not end verified and says exactly which bundles
were unloaded and which were not. See docs/reload.md.

One writer per cluster: after the confirmation and before the first unload, reload takes
the cluster's writer lease, an exclusive producer on the lock topic (--lease-topic, default
persistent://<tenant>/kop-offsets/writer-lease; its namespace is created when missing and
must be replicated to this cluster only). When another process holds it (watch --repair,
a repair or reload on any host), nothing is unloaded and the error names the holder
(command, pid, user, host, since when); --lease-wait waits for it. Every unload and lookup
is appended to the audit trail (--audit-file), which 'kop-offsets history' reads back.

Used for: fixing stale_cache rows of 'kop-offsets check' (--from-check takes its -o json).
Required permission: Pulsar admin (namespace bundle unload, topic lookup) on
<tenant>/<metadataNamespace>; produce on the lock topic (and, once, namespace creation
in <tenant>); Kafka DescribeGroups/OffsetFetch on the groups.
Output: the plan, then per bundle and per group the cached offsets before and after;
-o json|yaml gives one document (schemaVersion 1) with plan and execution.`

// NewCmdReload returns `reload`. runF replaces the run function in tests.
func NewCmdReload(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams}
	var partitions []int
	cmd := &cobra.Command{
		Use:   "reload (--group G... | --partition N... | --from-check FILE) --cluster NAME",
		Short: "Invalidate and reload KoP's cached group metadata through a bundle unload, then verify",
		Long:  strings.TrimSpace(reloadLong),
		Example: cmdutil.Examples(`
  # see what reloading group G on wus would touch
  kop-offsets reload --cluster wus --group G --dry-run

  # reload it, without a prompt
  kop-offsets reload --cluster wus --group G --yes

  # reload every stale_cache row of wus found by check
  kop-offsets check -o json > check.json
  kop-offsets reload --cluster wus --from-check check.json --max-plan-bundles 4 --pause 30s --yes`),
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			n := 0
			for _, b := range []bool{len(opts.Groups) > 0 || len(partitions) > 0, opts.FromCheck != ""} {
				if b {
					n++
				}
			}
			if n != 1 {
				return cmdutil.FlagErrorf("give --group and/or --partition, or --from-check")
			}
			for _, p := range partitions {
				if p < 0 || p > 1<<31-1 {
					return cmdutil.FlagErrorf("--partition %d: not an offsets partition", p)
				}
				opts.Partitions = append(opts.Partitions, int32(p))
			}
			if err := opts.Flags.Validate(); err != nil {
				return err
			}
			var err error
			if opts.Format, opts.NewSession, err = session.WriteSetup(f, opts.Writes); err != nil {
				return err
			}
			opts.Target = func() (config.Cluster, []config.Cluster, error) { return scope.Target(f) }
			if runF != nil {
				return runF(opts)
			}
			return reloadRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	cmdutil.PatternsVar(fl, &opts.Groups, "group", "reload the bundles of these groups' offsets partitions: name or glob (matched against the groups persisted in the offsets topic), repeatable")
	fl.BoolVar(&opts.AcceptLoss, "accept-loss", false, "reload bundles even where KoP would then serve older offsets or none (the plan names them); repair never does")
	fl.IntSliceVar(&partitions, "partition", nil, "offsets partition whose bundle is reloaded (repeatable, comma-separated)")
	fl.StringVar(&opts.FromCheck, "from-check", "", "reload the groups of the stale_cache rows and the unserved offsets partitions of this cluster in a 'check -o json' file (- for stdin)")
	planrun.BindReloadFlags(fl, &opts.Flags, "print the plan and stop: nothing is written",
		"max-plan-bundles", DefaultMaxBundles, "refuse a plan that unloads more bundles than this (nothing is unloaded)")
	cmdutil.Renamed(fl, f.IOStreams.ErrOut, "max-bundles", "max-plan-bundles")
	session.BindWriteFlags(fl, &opts.Writes, true)
	planrun.BindShowAll(fl, &opts.ShowAll)
	return cmd
}

func reloadRun(ctx context.Context, opts *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := planrun.CheckConfirmable(opts.IO, opts.DryRun, opts.Yes); err != nil {
		return err
	}
	target, all, err := opts.Target()
	if err != nil {
		return err
	}
	req := reload.Request{Groups: opts.Groups, Partitions: opts.Partitions}
	if opts.FromCheck != "" {
		doc, err := readCheck(opts.FromCheck, opts.IO)
		if err != nil {
			return err
		}
		req.Groups = doc.StaleGroups(target.Name)
		req.Partitions = doc.UnservedOn(target.Name)
		if len(req.Groups) == 0 && len(req.Partitions) == 0 {
			if doc.ExitCode == outcome.Unreachable {
				// What that check could not read is unknown: "nothing to reload" would be a
				// green light it cannot give (issue 32).
				msg := fmt.Sprintf("the check in %s could not reach every endpoint (its exitCode is 3): no stale_cache row or unserved offsets partition of cluster %s in what it read, the rest is unknown; nothing was reloaded: run check again once the clusters answer", opts.FromCheck, target.Name)
				fmt.Fprintln(opts.IO.ErrOut, msg)
				return printDoc(opts, &Document{SchemaVersion: 1, DryRun: opts.DryRun, Refusal: "check incomplete", ExitCode: outcome.Unreachable}, nil)
			}
			fmt.Fprintf(opts.IO.ErrOut, "no stale_cache row or unserved offsets partition of cluster %s in %s: nothing to reload\n", target.Name, opts.FromCheck)
			return printDoc(opts, &Document{SchemaVersion: 1, DryRun: opts.DryRun, Refusal: "nothing stale"}, nil)
		}
	}
	sess, err := opts.NewSession(target, all)
	if err != nil {
		return err
	}
	defer sess.Close()
	sess.Planner.AllowActive = opts.AllowActive
	sess.Planner.RefuseLive = opts.RefuseLive
	sess.Planner.AcceptLoss, sess.Executor.AcceptLoss = opts.AcceptLoss, opts.AcceptLoss
	sess.Executor.Wait, sess.Executor.Pause = opts.Wait, opts.Pause

	plan, err := sess.Planner.Plan(ctx, req)
	if err != nil {
		if errors.Is(err, reload.ErrBadRequest) {
			return cmdutil.UsageError(err)
		}
		return cmdutil.UnreachableError(fmt.Errorf("%w (nothing was unloaded)", err))
	}
	doc := &Document{SchemaVersion: 1, DryRun: opts.DryRun, Plan: plan}
	res := planrun.RunPlan(ctx, opts.IO, opts.Format, plan, sess.Executor, planrun.RunOptions{
		DryRun: opts.DryRun, Yes: opts.Yes, MaxBundles: opts.MaxBundles, TruncateToMax: false, Confirm: opts.Confirm,
		BeforeWrite: sess.BeforeWrite, Replan: sess.Replan(req), Reason: "reload: " + requestReason(opts),
		ShowAll: opts.ShowAll,
	})
	if res.Err != nil {
		return res.Err
	}
	doc.Plan = res.Plan
	doc.Refusal, doc.Execution, doc.ExitCode = res.Refusal, res.Execution, res.ExitCode
	return printDoc(opts, doc, res)
}

// requestReason says what the operator asked reload for.
func requestReason(opts *Options) string {
	switch {
	case opts.FromCheck != "":
		return "stale_cache rows of " + opts.FromCheck
	case len(opts.Groups) > 0 && len(opts.Partitions) > 0:
		return "requested groups and offsets partitions"
	case len(opts.Partitions) > 0:
		return "requested offsets partitions"
	}
	return "requested groups"
}

func printDoc(opts *Options, doc *Document, res *planrun.RunResult) error {
	cs := opts.IO.ColorScheme()
	if opts.Format != output.Table {
		if err := output.Print(opts.IO, opts.Format, doc, nil); err != nil {
			return err
		}
	} else if res != nil && res.Execution != nil {
		if err := render.WriteExecution(opts.IO.Out, output.StdoutLayout(opts.IO).Cut(opts.ShowAll), cs, res.Execution); err != nil {
			return err
		}
	}
	if res != nil && res.Execution != nil && doc.Plan != nil {
		fmt.Fprintln(opts.IO.ErrOut, render.Summary(doc.Plan.Cluster, res.Execution))
	}
	if doc.Refusal != "" && res != nil {
		fmt.Fprintln(opts.IO.ErrOut, doc.Refusal)
	}
	return cmdutil.SilentError(doc.ExitCode)
}

func readCheck(path string, ios *iostreams.IOStreams) (*reload.CheckDocument, error) {
	if path == "-" {
		d, err := reload.ParseCheckDocument(ios.In)
		if err != nil {
			return nil, cmdutil.UsageErrorf("--from-check -: %v", err)
		}
		return d, nil
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, cmdutil.UsageErrorf("--from-check: %v", err)
	}
	defer func() { _ = fh.Close() }()
	d, err := reload.ParseCheckDocument(fh)
	if err != nil {
		return nil, cmdutil.UsageErrorf("--from-check %s: %v", path, err)
	}
	return d, nil
}
