package repairjob

import (
	"context"
	"fmt"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/reload"
)

// Reloader is what watch needs of internal/reload on the cluster it writes to: a plan for
// some groups (bundles, blast radius, refusals) and the reload of one planned bundle.
// ReloadSession implements it with reload's Planner and Executor; tests use fakes.
type Reloader interface {
	Plan(ctx context.Context, groups []string) (*reload.Plan, error)
	// Reload unloads one bundle of plan, loads it again and verifies it. When ctx ends
	// during the call, a bundle not yet unloaded is left alone and one already unloaded is
	// looked up again before returning (see ReloadSession).
	Reload(ctx context.Context, plan *reload.Plan, bundle reload.PlannedBundle) reload.BundleResult
}

// ReloadSession is the Reloader of reload.Planner and reload.Executor.
//
// The planner must not allow active groups: reload's plan then refuses a bundle with groups
// of unknown activity on the cluster it writes to (and, under RefuseLive, live ones), or an
// offset its loader model says would move back or vanish, and reports groups live elsewhere
// (LiveElsewhere); watch leaves every refused bundle alone. Groups live on the cluster are
// reloaded by default: their own commits are no loss (reload's live.go).
type ReloadSession struct {
	Planner  *reload.Planner
	Executor *reload.Executor
}

// NewReloadSession wires p and e; e's admin is wrapped so that a shutdown never leaves a
// bundle unloaded and not looked up: an unload is not started once ctx has ended, and the
// unload and lookups that follow it run to completion (bounded by callTimeout) even when
// ctx ends in between.
func NewReloadSession(p *reload.Planner, e *reload.Executor, callTimeout time.Duration) *ReloadSession {
	if callTimeout <= 0 {
		callTimeout = 30 * time.Second
	}
	p.AllowActive = false
	e.Admin = ShutdownSafeAdmin{BundleAdmin: e.Admin, CallTimeout: callTimeout}
	return &ReloadSession{Planner: p, Executor: e}
}

// Plan implements Reloader.
func (s *ReloadSession) Plan(ctx context.Context, groups []string) (*reload.Plan, error) {
	return s.Planner.Plan(ctx, reload.Request{Groups: groups})
}

// Reload implements Reloader.
func (s *ReloadSession) Reload(ctx context.Context, plan *reload.Plan, pb reload.PlannedBundle) reload.BundleResult {
	ex := s.Executor.Execute(ctx, plan, []reload.PlannedBundle{pb})
	for _, b := range ex.Bundles {
		if b.Range == pb.Range {
			return b
		}
	}
	return reload.BundleResult{Range: pb.Range, Status: reload.BundleNotAttempted, Error: "not in the plan"}
}

// ShutdownSafeAdmin wraps a reload.BundleAdmin for a process that may be stopped at any
// moment: UnloadBundle refuses to start after ctx has ended, and the unload and the
// lookups (the load) are not cancelled by ctx, only bounded by CallTimeout.
type ShutdownSafeAdmin struct {
	reload.BundleAdmin
	CallTimeout time.Duration
}

// UnloadBundle implements reload.BundleAdmin.
func (a ShutdownSafeAdmin) UnloadBundle(ctx context.Context, namespace, bundleRange string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bundle %s/%s not unloaded: stopping (%w)", namespace, bundleRange, err)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.CallTimeout)
	defer cancel()
	return a.BundleAdmin.UnloadBundle(cctx, namespace, bundleRange)
}

// LookupOwner implements reload.BundleAdmin.
func (a ShutdownSafeAdmin) LookupOwner(ctx context.Context, topic string) (pulsarx.Owner, error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.CallTimeout)
	defer cancel()
	return a.BundleAdmin.LookupOwner(cctx, topic)
}
