// Package synccmd implements `kop-offsets sync setup`: the deployment `watch --sync` needs,
// the offsets topic not replicated between the synced clusters (docs/sync.md).
package synccmd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/audit"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/shared"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/explain"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/offsetsync"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/output"
)

// NewCmdSync returns `sync`, the parent of `sync setup`.
func NewCmdSync(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Set up the deployment of watch --sync (offsets committed through KoP, the offsets topic not replicated)",
		Long: strings.TrimSpace(`
Sync is the second deployment model (docs/sync.md). Instead of replicating KoP's offsets
topic and reloading stale caches (watch --repair), the offsets topic is not replicated
between the synced clusters and 'kop-offsets watch --sync' commits each group's translated
offsets through KoP's own OffsetCommit on the clusters where it has no members: KoP serves
them at once, with no unload. 'sync setup' makes the deployment.`),
		Example: cmdutil.Examples(`
  kop-offsets sync setup --dry-run
  kop-offsets sync setup --yes && kop-offsets watch --sync`),
		Args: cmdutil.NoArgs,
	}
	cmd.AddCommand(NewCmdSetup(f, nil))
	return cmd
}

// SetupOptions of `sync setup`.
type SetupOptions struct {
	IO       *iostreams.IOStreams
	Format   output.Format
	Clusters func() ([]config.Cluster, error)
	// Admins builds the replication admin of each cluster; release closes them.
	Admins func(cls []config.Cluster) (map[string]offsetsync.Replication, func(), error)
	Audit  audit.Sink

	// Seed syncs every group once after the setup is verified (factorySeed).
	Seed SeedFunc

	DryRun, Yes, Undo, NoSeed bool
	// Writes are the lease and audit flags every writing command takes: the seed's commits
	// go under the writer leases and into the trail (file and topic); the policy writes
	// into the trail's file.
	Writes              shared.Writes
	Verify, SeedTimeout time.Duration
	AlignmentMax        int64
	// Groups scope the seed (globs, as watch --sync's --group); none: every group.
	Groups  []string
	Confirm func(string) (bool, error)
}

// NewCmdSetup returns `sync setup`. runF replaces the run function in tests.
func NewCmdSetup(f *cmdutil.Factory, runF func(*SetupOptions) error) *cobra.Command {
	opts := &SetupOptions{IO: f.IOStreams, Clusters: f.Clusters}
	cmd := &cobra.Command{
		Use:   "setup",
		Short: "Stop replicating the offsets topic between the synced clusters (or, with --undo, replicate it again)",
		Long: strings.TrimSpace(`
Plans, on every selected cluster (--cluster, two or more; default all), a topic-level
replication policy of KoP's offsets topic that leaves out the other selected clusters, so
that the offsets topic no longer replicates between them; replication toward clusters not
selected, and of every other topic of the namespace, stays as it is. The policy is the
cluster's own (local topic policies): each cluster is written separately.

The plan is shown first; --dry-run stops there; without --yes it asks. Each policy write is
recorded in the audit trail (--audit-file, action "policy"), then read back until every
cluster's offsets topic has stopped replicating to the others (its policy and its
replicators), at most --verify.

Then it seeds: it replays every selected cluster's offsets topic and syncs every group once,
as 'watch --sync' does when it starts (each group's offsets translated by message
identity and committed through KoP's OffsetCommit on the clusters where it has no members;
KoP serves them at once), under the writer leases (--lease-topic) and into the audit trail.
Every target then holds its groups' translated offsets. A group live on two clusters is
split brain and left. --no-seed skips it; when another process holds a lease (a watch --sync
runs), the seed is left to it. Start 'kop-offsets watch --sync' on the same clusters right
after: until it runs, commits on one cluster reach no other.

--undo removes the topic-level policies of the offsets topic: the namespace's replication
applies again (then run 'watch' or 'watch --repair', the replication model).`),
		Example: cmdutil.Examples(`
  kop-offsets sync setup --dry-run
  kop-offsets sync setup --cluster scus --cluster wus --yes
  kop-offsets sync setup --yes --no-seed -o json
  kop-offsets sync setup --undo --yes`),
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if opts.Format, err = f.OutputFormat(output.StandardSpec); err != nil {
				return err
			}
			if opts.Verify <= 0 {
				return cmdutil.FlagErrorf("--verify must be positive, got %s", opts.Verify)
			}
			if opts.AlignmentMax <= 0 {
				return cmdutil.FlagErrorf("--alignment-max-messages must be positive, got %d", opts.AlignmentMax)
			}
			if opts.SeedTimeout <= 0 {
				return cmdutil.FlagErrorf("--seed-timeout must be positive, got %s", opts.SeedTimeout)
			}
			if err := opts.Writes.Validate(); err != nil {
				return err
			}
			if opts.Undo && (opts.NoSeed || len(opts.Groups) > 0) {
				return cmdutil.FlagErrorf("--no-seed and --group scope the seed: no meaning with --undo (nothing is seeded when replication is given back)")
			}
			if err := shared.CheckConfirmable(f.IOStreams, opts.DryRun, opts.Yes); err != nil {
				return err
			}
			if opts.Admins == nil {
				opts.Admins = factoryAdmins(f)
			}
			if opts.Seed == nil {
				opts.Seed = factorySeed(f, opts)
			}
			if opts.Audit == nil && opts.Writes.AuditFile != "" {
				file := &audit.File{Path: opts.Writes.AuditFile}
				defer func() { _ = file.Close() }()
				opts.Audit = file
			}
			if opts.Confirm == nil {
				opts.Confirm = func(q string) (bool, error) { return shared.Confirm(f.IOStreams, q) }
			}
			if runF != nil {
				return runF(opts)
			}
			return setupRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.DryRun, "dry-run", false, "show the plan, write nothing")
	fl.BoolVar(&opts.Yes, "yes", false, "do not ask for confirmation")
	fl.BoolVar(&opts.Undo, "undo", false, "remove the offsets topic's topic-level replication policy on the selected clusters (the namespace's replication applies again)")
	fl.DurationVar(&opts.Verify, "verify", time.Minute, "how long to read the clusters back for the policies and replicators to take")
	cmdutil.PatternsVar(fl, &opts.Groups, "group", "the seed syncs this group name or glob, repeatable, as watch --sync --group (default: every group)")
	fl.BoolVar(&opts.NoSeed, "no-seed", false, "do not sync every group once after the setup (watch --sync then does when it starts)")
	fl.DurationVar(&opts.SeedTimeout, "seed-timeout", 10*time.Minute, "how long the seed may take (replaying every offsets topic, then one sync of every group)")
	fl.Int64Var(&opts.AlignmentMax, "alignment-max-messages", align.DefaultMaxMessages, "the seed's messages read at most per copy of a topic partition for its first translation, as watch --sync's")
	// No --lease-wait: as watch --sync, the seed leaves a held lease to its holder.
	shared.BindWriteFlags(fl, &opts.Writes, false)
	return cmd
}

// Result is the document of `sync setup` (-o json).
type Result struct {
	SchemaVersion int                    `json:"schemaVersion"`
	Undo          bool                   `json:"undo"`
	Steps         []offsetsync.SetupStep `json:"steps"`
	Changes       []offsetsync.Change    `json:"changes"`
	Applied       []Applied              `json:"applied,omitempty"`
	After         []offsetsync.SetupStep `json:"after,omitempty"`
	Seed          *Seed                  `json:"seed,omitempty"`
	DryRun        bool                   `json:"dryRun,omitempty"`
	Verdict       string                 `json:"verdict"`
	Exit          outcome.Outcome        `json:"exitCode"`
	Next          string                 `json:"next,omitempty"`
	// Errors are the clusters whose offsets topic could not be read, explained.
	Errors []explain.Problem `json:"errors,omitempty"`
}

// Applied is one change as written.
type Applied struct {
	Cluster string `json:"cluster"`
	Error   string `json:"error,omitempty"`
}

func setupRun(ctx context.Context, o *SetupOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	cls, err := o.Clusters()
	if err != nil {
		return err
	}
	if len(cls) < 2 {
		return cmdutil.UsageErrorf("sync setup needs two clusters or more to sync between, got %d (--cluster, or the configuration)", len(cls))
	}
	admins, release, err := o.Admins(cls)
	if err != nil {
		return err
	}
	defer release()
	var sites []offsetsync.Site
	for _, cl := range cls {
		sites = append(sites, offsetsync.Site{Name: cl.Name, PulsarName: cl.PulsarName(), OffsetsTopic: cl.OffsetsTopic(), Admin: admins[cl.Name]})
	}
	res := &Result{SchemaVersion: 1, Undo: o.Undo, DryRun: o.DryRun}
	res.Steps = offsetsync.Check(ctx, sites)
	res.Changes = offsetsync.Changes(res.Steps, o.Undo)
	for _, st := range res.Steps {
		if st.Err != nil {
			res.Errors = append(res.Errors, explain.ProblemOf(st.Err))
		}
	}
	switch {
	case len(res.Errors) > 0:
		res.Verdict, res.Exit = "refused: nothing written (a cluster not read could be left replicating)", outcome.Unreachable
	case len(res.Changes) == 0:
		res.Verdict = "nothing to do: " + done(o.Undo)
	case o.DryRun:
		res.Verdict = fmt.Sprintf("dry run: %d cluster(s) would be written, nothing was", len(res.Changes))
		if !o.Undo && !o.NoSeed {
			res.Verdict += "; then every group would be synced once (the seed)"
		}
	default:
		ok, err := o.confirm(res)
		if err != nil {
			return cmdutil.UsageError(fmt.Errorf("sync setup: confirmation: %w; nothing written", err)) // 2, as every confirmation
		}
		if !ok {
			return cmdutil.UsageError(errors.New("sync setup: not confirmed, nothing written"))
		}
		res.Verdict, res.Exit = apply(ctx, o, sites, res)
	}
	// The seed: after a verified setup (or one that was already in place), every group once.
	if !o.Undo && !o.DryRun && res.Exit == outcome.OK {
		var tail string
		res.Seed, tail, res.Exit = seed(ctx, o, cls)
		res.Verdict += "; " + tail
	}
	if !o.Undo && res.Exit == outcome.OK && !o.DryRun {
		var flags []string
		for _, cl := range cls {
			flags = append(flags, "--cluster "+cl.Name)
		}
		res.Next = "kop-offsets watch --sync " + strings.Join(flags, " ")
	}
	if err := output.Print(o.IO, o.Format, res, func(tp *output.TablePrinter) { table(tp, res) }); err != nil {
		return err
	}
	if o.Format == output.Table {
		for _, e := range res.Errors {
			fmt.Fprint(o.IO.ErrOut, explain.Lines(e.Error, e.Fix))
		}
		fmt.Fprintln(o.IO.ErrOut, res.Verdict)
		if res.Next != "" {
			fmt.Fprintln(o.IO.ErrOut, "next: "+res.Next)
		}
	}
	return cmdutil.SilentError(res.Exit)
}

func done(undo bool) string {
	if undo {
		return "no selected cluster has a topic-level replication policy of its offsets topic"
	}
	return "the offsets topic replicates between none of the selected clusters"
}

func (o *SetupOptions) confirm(res *Result) (bool, error) {
	if o.Yes {
		return true, nil
	}
	var lines []string
	for _, c := range res.Changes {
		lines = append(lines, "  "+c.Cluster+": "+c.String())
	}
	fmt.Fprintln(o.IO.ErrOut, strings.Join(lines, "\n"))
	return o.Confirm(fmt.Sprintf("write these %d replication policies?", len(res.Changes)))
}

// apply writes every change (recording each), then reads the clusters back until they
// hold, at most o.Verify.
func apply(ctx context.Context, o *SetupOptions, sites []offsetsync.Site, res *Result) (string, outcome.Outcome) {
	sink := o.Audit
	if sink == nil {
		sink = audit.Discard{}
	}
	failed := 0
	for _, c := range res.Changes {
		start := time.Now()
		err := c.Apply(ctx, adminOf(sites, c.Cluster))
		rec := audit.Record{Time: output.Time{Time: time.Now()}, Who: audit.Self(), Cluster: c.Cluster, Action: audit.ActionPolicy,
			Topic: c.OffsetsTopic, Reason: "sync setup: " + c.String(), Groups: []string{}, Result: audit.ResultOK, DurationMs: time.Since(start).Milliseconds()}
		a := Applied{Cluster: c.Cluster}
		if err != nil {
			failed++
			rec.Result, rec.Error, a.Error = audit.ResultError, err.Error(), err.Error()
		}
		if aerr := sink.Write(rec); aerr != nil {
			fmt.Fprintf(o.IO.ErrOut, "warning: audit trail: %v\n", aerr)
		}
		res.Applied = append(res.Applied, a)
	}
	if failed > 0 {
		return fmt.Sprintf("%d of %d write(s) failed (see applied)", failed, len(res.Changes)), outcome.WriteFailed
	}
	deadline := time.Now().Add(o.Verify)
	for {
		res.After = offsetsync.Check(ctx, sites)
		why := pending(res.After, o.Undo)
		if why == "" && !o.Undo {
			why = replicating(ctx, sites)
		}
		if why == "" {
			return "done and verified: " + done(o.Undo), outcome.OK
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Sprintf("written, not verified within %s: %s", o.Verify, why), outcome.WriteFailed
		}
		time.Sleep(time.Second)
	}
}

// pending says what of the setup does not hold yet ("" when all does).
func pending(steps []offsetsync.SetupStep, undo bool) string {
	var why []string
	for _, st := range steps {
		switch {
		case st.Error != "":
			why = append(why, st.Error)
		case undo && st.TopicLevel:
			why = append(why, st.Cluster+": a topic-level policy is still read back")
		case !undo && len(st.Synced) > 0:
			why = append(why, fmt.Sprintf("%s: still replicates to %s", st.Cluster, strings.Join(st.Synced, ",")))
		}
	}
	return strings.Join(why, "; ")
}

// Replicators is a Replication that also lists the replicators its offsets topic's
// partitions have (*pulsarx.Admin through factoryAdmins): a policy Pulsar holds but has not
// acted on yet still replicates.
type Replicators interface {
	Replicators(ctx context.Context, offsetsTopic string) (map[string]bool, error)
}

// replicating says which cluster's offsets topic still has a replicator toward another
// synced cluster ("" when none has, or the admins cannot list them).
func replicating(ctx context.Context, sites []offsetsync.Site) string {
	var why []string
	for _, s := range sites {
		r, ok := s.Admin.(Replicators)
		if !ok {
			continue
		}
		remotes, err := r.Replicators(ctx, s.OffsetsTopic)
		if err != nil {
			why = append(why, fmt.Sprintf("cluster %s: replicators: %v", s.Name, err))
			continue
		}
		for _, o := range sites {
			if o.PulsarName != s.PulsarName && remotes[o.PulsarName] {
				why = append(why, fmt.Sprintf("%s: a replicator toward %s still runs", s.Name, o.PulsarName))
			}
		}
	}
	return strings.Join(why, "; ")
}

func adminOf(sites []offsetsync.Site, name string) offsetsync.Replication {
	i := slices.IndexFunc(sites, func(s offsetsync.Site) bool { return s.Name == name })
	return sites[i].Admin
}

func table(tp *output.TablePrinter, res *Result) {
	tp.AddHeader("CLUSTER", "OFFSETS-TOPIC", "REPLICATES-TO", "POLICY", "ACTION")
	for _, st := range res.Steps {
		action := "-"
		for _, c := range res.Changes {
			if c.Cluster == st.Cluster {
				action = c.String()
			}
		}
		policy := "namespace"
		if st.TopicLevel {
			policy = "topic"
		}
		cur := strings.Join(st.Current, ",")
		if st.Err != nil {
			cur, policy, action = "?", "?", "none: not read ("+explain.ProblemOf(st.Err).Cause+")"
		}
		tp.AddRow(st.Cluster, st.OffsetsTopic, cur, policy, action)
	}
}
