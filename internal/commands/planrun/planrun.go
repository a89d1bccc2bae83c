// Package planrun carries out a reload plan for reload, repair, watch and failover: it shows
// the plan, applies the guards (--max-*-bundles, refused bundles), asks for confirmation,
// takes the lease and executes; with the flags those commands share.
package planrun

import (
	"context"
	"fmt"
	"strings"

	"github.com/kop-offsets/kop-offsets/internal/audit"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/render"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/reload"
)

// RunOptions tune RunPlan.
type RunOptions struct {
	DryRun     bool
	Yes        bool
	MaxBundles int
	// TruncateToMax reloads the first MaxBundles executable bundles and leaves the rest
	// (repair); otherwise a plan with more is refused (reload).
	TruncateToMax bool
	Confirm       func(string) (bool, error)
	// Quiet prints nothing (the caller prints a combined document).
	Quiet bool
	// BeforeWrite runs after the confirmation, before the first unload: it takes the
	// writer lease and opens the audit trail (Session.BeforeWrite). An error refuses the
	// run with nothing written: exit 3 (lease held, cluster down) or 2 (trail unwritable).
	BeforeWrite func(context.Context) error
	// Replan runs after BeforeWrite and returns a fresh plan when the one shown may be
	// stale (the lease was waited for: its holder wrote meanwhile), else nil
	// (Session.Replan).
	Replan func(context.Context) (*reload.Plan, error)
	// Reason is what the audit trail says the writes are for.
	Reason string
	// ShowAll (--show-all) prints every row of the plan's tables, not the first
	// output.MaxRows.
	ShowAll bool
}

// RunResult is the outcome of RunPlan.
type RunResult struct {
	// Plan is the plan carried out: the one given, or the one made again after a wait
	// for the lease.
	Plan      *reload.Plan
	Refusal   string
	Execution *reload.Execution
	ExitCode  outcome.Outcome
	Err       error // an error to return as is (the operator declined: exit 2)
}

// RunPlan shows plan, applies the guards, asks for confirmation and executes it. The plan
// goes to stdout in table format and to stderr otherwise when a confirmation is asked.
// When the lease had to be waited for, the plan is made again (o.Replan); a new plan that
// unloads other bundles is shown and, without --yes, confirmed again.
func RunPlan(ctx context.Context, ios *iostreams.IOStreams, format output.Format, plan *reload.Plan, ex *reload.Executor, o RunOptions) *RunResult {
	res := &RunResult{Plan: plan}
	showPlan(ios, format, plan, o)
	run, ok := selectRun(plan, o, res)
	if !ok {
		return res
	}
	if o.DryRun {
		res.Refusal = "dry run: nothing was unloaded"
		return res
	}
	if !confirmRun(ios, plan, run, o, res) {
		return res
	}
	if o.BeforeWrite != nil {
		if err := o.BeforeWrite(ctx); err != nil {
			res.Refusal, res.ExitCode = err.Error(), cmdutil.OutcomeOf(err)
			return res
		}
	}
	if plan, run, ok = replan(ctx, ios, format, plan, run, o, res); !ok {
		return res
	}
	res.Plan = plan
	res.Execution = ex.Execute(audit.WithWhy(ctx, audit.Why{Reason: o.Reason, Plan: plan}), plan, run)
	res.ExitCode = res.Execution.ExitCode
	return res
}

// showPlan prints plan: on stdout in table format, else on stderr when it is to be confirmed.
func showPlan(ios *iostreams.IOStreams, format output.Format, plan *reload.Plan, o RunOptions) {
	if o.Quiet {
		return
	}
	cs := ios.ColorScheme()
	switch {
	case format == output.Table:
		_ = render.WritePlan(ios.Out, output.StdoutLayout(ios).Cut(o.ShowAll), cs, plan)
		fmt.Fprintln(ios.Out)
	case !o.DryRun && !o.Yes:
		_ = render.WritePlan(ios.ErrOut, output.StderrLayout(ios).Cut(o.ShowAll), cs, plan)
	}
}

// selectRun applies the guards to plan and returns the bundles to unload; false (with the
// refusal in res) when there are none to unload.
func selectRun(plan *reload.Plan, o RunOptions, res *RunResult) ([]reload.PlannedBundle, bool) {
	run := plan.Executable()
	refuse := func(msg string, code outcome.Outcome) ([]reload.PlannedBundle, bool) {
		res.Refusal, res.ExitCode = msg, code
		if o.DryRun && code != outcome.OK {
			// The code says what the real run would do (issue 32): a dry run that would be
			// refused is not a green light.
			res.Refusal = "dry run: would be " + msg
		}
		return nil, false
	}
	if len(plan.Bundles) == 0 {
		return refuse("nothing to reload", outcome.OK)
	}
	if len(run) == 0 {
		return refuse("refused: every bundle of the plan has live or unknown groups, or offsets a reload would lose (see the plan); nothing was unloaded", outcome.WriteFailed)
	}
	if len(run) > o.MaxBundles {
		if !o.TruncateToMax {
			return refuse(fmt.Sprintf("refused: the plan unloads %d bundles, more than --max-plan-bundles %d; nothing was unloaded", len(run), o.MaxBundles), outcome.WriteFailed)
		}
		run = run[:o.MaxBundles]
	}
	return run, true
}

// confirmRun asks the operator to confirm run (unless --yes); false (with the error in
// res) when not confirmed.
func confirmRun(ios *iostreams.IOStreams, plan *reload.Plan, run []reload.PlannedBundle, o RunOptions, res *RunResult) bool {
	if o.Yes {
		return true
	}
	confirm := o.Confirm
	if confirm == nil {
		confirm = func(q string) (bool, error) { return Confirm(ios, q) }
	}
	groups, live := 0, 0
	for _, b := range run {
		groups += len(b.Groups)
		live += len(b.Active)
	}
	q := fmt.Sprintf("Unload %d bundle(s) of %s on %s (%s)? %d group(s) reload, %d of them live or unknown.",
		len(run), plan.Namespace, plan.Cluster, rangesOf(run), groups, live)
	ok, err := confirm(q)
	if err != nil {
		res.Err = cmdutil.UsageError(fmt.Errorf("confirmation: %w", err))
		return false
	}
	if !ok {
		res.Err = fmt.Errorf("not confirmed: nothing was unloaded: %w", cmdutil.ErrCancel)
		return false
	}
	return true
}

// replan makes the plan again when o.Replan has a fresher one (the lease was waited for).
// A new plan that unloads other bundles is shown, and confirmed again without --yes; one
// that unloads none is a refusal like any plan's. It returns the plan and bundles to carry
// out; false (with the refusal in res) when nothing is to be unloaded.
func replan(ctx context.Context, ios *iostreams.IOStreams, format output.Format, plan *reload.Plan, run []reload.PlannedBundle, o RunOptions, res *RunResult) (*reload.Plan, []reload.PlannedBundle, bool) {
	if o.Replan == nil {
		return plan, run, true
	}
	fresh, err := o.Replan(ctx)
	if err != nil {
		res.Refusal = fmt.Sprintf("planning again after waiting for the writer lease: %v; nothing was unloaded", err)
		res.ExitCode = outcome.Unreachable
		return nil, nil, false
	}
	if fresh == nil {
		return plan, run, true
	}
	res.Plan = fresh
	freshRun, ok := selectRun(fresh, o, res)
	if ok && rangesOf(freshRun) == rangesOf(run) {
		return fresh, freshRun, true
	}
	fmt.Fprintf(ios.ErrOut, "cluster %s: the plan changed while waiting for the writer lease (another process wrote); the new plan:\n", fresh.Cluster)
	showPlan(ios, format, fresh, RunOptions{Quiet: o.Quiet})
	if !ok || !confirmRun(ios, fresh, freshRun, o, res) {
		return nil, nil, false
	}
	return fresh, freshRun, true
}

func rangesOf(bs []reload.PlannedBundle) string {
	s := make([]string, len(bs))
	for i, b := range bs {
		s[i] = b.Range
	}
	return strings.Join(s, ", ")
}
