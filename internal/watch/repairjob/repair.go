package repairjob

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/audit"
	"github.com/kop-offsets/kop-offsets/internal/reload"
	"github.com/kop-offsets/kop-offsets/internal/repair"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
	"github.com/kop-offsets/kop-offsets/internal/watch/job"
)

// repair reloads, under the policy, the bundles holding the stale_cache rows of c among
// the groups asked this cycle, and those holding coordinator_unavailable rows (KoP kept
// answering NOT_COORDINATOR or loading for the whole coordinator wait: it dropped the
// partition's load, and only another load brings it back). Policy, per group then per bundle:
//   - refuse a group whose offsets partition still has replication backlog toward c (the
//     reload would load a value about to change);
//   - refuse a bundle reload refuses: not-proven-idle groups on c (live ones only under
//     RefuseLive), an offset the loader model says the reload would move back or drop,
//     whatever else it refuses;
//   - refuse a bundle reloaded less than Cooldown ago, or beyond MaxBundles this cycle;
//   - report, not refuse, groups live on other clusters only (the plan's LiveElsewhere):
//     the cache will lag again.
func (j *Job) repair(ctx context.Context, c Target, cy job.Cycle) {
	stale, behind := repair.Targets(cy.Asked, cy.Rows, c.Name)
	if len(stale) == 0 {
		return
	}
	var groups []string
	for _, g := range stale {
		if b, from := backlogToward(cy.Inbound(c.Name, g)); b > 0 {
			j.refuse(c, "replication_backlog", "", []string{g},
				fmt.Sprintf("offsets partition of %s still has %d entries to replicate from %s toward %s", g, b, from, c.Name))
			continue
		}
		groups = append(groups, g)
	}
	if len(groups) == 0 {
		return
	}
	// A plan asks KoP about every group of the bundles (thousands at scale), not only the
	// stale ones: a call timeout is too short for it.
	cctx, cancel := context.WithTimeout(ctx, max(2*j.o.CallTimeout, planTimeout))
	plan, err := c.Reloader.Plan(cctx, groups)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			j.env.Errors.WithLabelValues(c.Name, "reload").Inc()
			j.env.Log.Error("reload plan failed; nothing unloaded", "cluster", c.Name, "groups", groups, "err", err.Error())
		}
		return
	}
	done, stopped := 0, false
	gates := repair.Gates{Last: repair.Cooldown(j.last(c.Name)), Now: j.env.Now(), Cooldown: j.o.Cooldown, MaxBundles: j.o.MaxBundles}
	guard, guarded := c.Reloader.(WriteGuard)
	var guardErr error // the guard's refusal: every bundle of the cycle is refused
	defer func() {
		if guarded && done > 0 && guardErr == nil && !j.o.DryRun {
			guard.AfterWrite()
		}
	}()
	for _, pb := range plan.Bundles {
		bg := repair.BundleGroups(plan, pb, groups)
		reason, detail := gates.Refuse(plan, pb, c.Name, done)
		switch {
		case reason != "":
			j.refuse(c, reason, pb.Range, bg, detail)
		case stopped:
			j.refuse(c, "earlier_bundle_failed", pb.Range, bg, "an earlier bundle of this cycle did not end verified")
		case ctx.Err() != nil:
			j.refuse(c, "stopping", pb.Range, bg, "the process is stopping")
		case j.o.DryRun:
			done++
			j.reportLiveElsewhere(c, plan, pb, behind)
			j.m.Reloads.WithLabelValues(c.Name, "dry_run").Inc()
			j.env.Log.Info("would reload bundle (dry run)", "cluster", c.Name, "bundle", pb.Range, "groups", bg,
				"blastRadius", pb.Groups, "offsetsPartitions", pb.OffsetsPartitions)
		case guardErr != nil:
			j.refuse(c, guardReason(guardErr), pb.Range, bg, guardErr.Error())
		case guarded && done == 0 && j.guardRefuses(ctx, guard, &guardErr):
			j.refuse(c, guardReason(guardErr), pb.Range, bg, guardErr.Error())
		default:
			done++
			j.reportLiveElsewhere(c, plan, pb, behind)
			stopped = !j.reloadBundle(ctx, c, plan, pb, bg)
		}
	}
}

// reloadBundle reloads pb on c, records it (the audit trail's reason comes with ctx) and
// reports whether it ended verified.
func (j *Job) reloadBundle(ctx context.Context, c Target, plan *reload.Plan, pb reload.PlannedBundle, bg []string) bool {
	j.env.Log.Info("reloading bundle", "cluster", c.Name, "bundle", pb.Range, "groups", bg, "blastRadius", pb.Groups)
	res := c.Reloader.Reload(audit.WithWhy(ctx, audit.Why{Reason: "watch --repair: stale_cache rows", Plan: plan}), plan, pb)
	j.last(c.Name)[pb.Range] = j.env.Now()
	j.m.Reloads.WithLabelValues(c.Name, res.Status).Inc()
	attrs := []any{"cluster", c.Name, "bundle", pb.Range, "groups", bg, "result", res.Status,
		"unloaded", res.Unloaded, "loaded", res.Loaded}
	if res.Error != "" {
		attrs = append(attrs, "err", res.Error)
	}
	if res.Status != reload.BundleVerified {
		j.env.Errors.WithLabelValues(c.Name, "reload").Inc()
		j.env.Log.Error("bundle reload did not end verified", attrs...)
		return false
	}
	j.env.Log.Info("bundle reloaded", attrs...)
	return true
}

// guardRefuses takes c's write guard (the writer lease) before the cycle's first unload
// there; on failure it sets *err and reports true.
func (j *Job) guardRefuses(ctx context.Context, g WriteGuard, err *error) bool {
	cctx, cancel := context.WithTimeout(ctx, j.o.CallTimeout)
	defer cancel()
	*err = g.BeforeWrite(cctx)
	return *err != nil
}

// planTimeout bounds a reload plan of watch --repair: the plan reads the bundles' offsets
// partitions and asks both KoPs about each of their groups.
const planTimeout = 5 * time.Minute

// backlogToward is the largest replication backlog of a group's offsets partition from a
// peer toward a cluster (in: by peer).
func backlogToward(in map[string]verdict.Inbound) (int64, string) {
	var best int64
	var from string
	for peer, in := range in {
		if in.Backlog > best {
			best, from = in.Backlog, peer
		}
	}
	return best, from
}

// reportLiveElsewhere logs the groups of a bundle about to be reloaded on c that are live
// on another cluster (reload's plan says which): reloading here touches none of their
// members, but their cache here will lag again as they commit.
func (j *Job) reportLiveElsewhere(c Target, plan *reload.Plan, pb reload.PlannedBundle, behind map[string]int64) {
	for _, g := range pb.LiveElsewhere {
		var on []string
		if ag, ok := plan.Group(g); ok {
			for cl, a := range ag.Activity {
				if cl != c.Name && a.Status == reload.ActivityLive {
					on = append(on, cl)
				}
			}
		}
		slices.Sort(on)
		j.env.Log.Info("group live on another cluster: reloading anyway, the cache will lag again",
			"cluster", c.Name, "bundle", pb.Range, "group", g, "liveOn", on, "behindBy", behind[g])
	}
}

func (j *Job) refuse(c Target, reason, bundle string, groups []string, detail string) {
	j.m.Refused.WithLabelValues(c.Name, reason).Inc()
	j.env.Log.Info("reload refused", "cluster", c.Name, "reason", reason, "bundle", bundle, "groups", groups, "detail", detail)
}
