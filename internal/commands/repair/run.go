package repair

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/planrun"
	"github.com/kop-offsets/kop-offsets/internal/commands/render"
	"github.com/kop-offsets/kop-offsets/internal/commands/scope"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/explain"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/reload"
	"github.com/kop-offsets/kop-offsets/internal/repair"
	"github.com/kop-offsets/kop-offsets/internal/survey"
)

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

func newRun(opts *Options, tt scope.TenantTarget) *run {
	r := &run{opts: opts, write: tt.Clusters, all: tt.All, doc: newDocument(opts)}
	if tt.Named {
		r.tenant = tt.Tenant
	}
	return r
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
	res := planrun.RunPlan(ctx, opts.IO, opts.Format, plan, sess.Executor, planrun.RunOptions{
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
		_ = render.WriteExecution(opts.IO.Out, output.StdoutLayout(opts.IO).Cut(opts.ShowAll), opts.IO.ColorScheme(), res.Execution)
		fmt.Fprintln(opts.IO.Out)
	}
	fmt.Fprintln(opts.IO.ErrOut, r.label()+render.Summary(cl.Name, res.Execution))
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
