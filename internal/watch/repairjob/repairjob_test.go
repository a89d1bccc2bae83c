package repairjob

import (
	"context"
	"errors"
	"io"
	"iter"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kop-offsets/kop-offsets/internal/reload"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
	"github.com/kop-offsets/kop-offsets/internal/watch/job"
)

// planCounter is a Reloader whose plans fail: it counts them.
type planCounter struct{ plans int }

func (p *planCounter) Plan(context.Context, []string) (*reload.Plan, error) {
	p.plans++
	return nil, errors.New("no plan here")
}

func (p *planCounter) Reload(context.Context, *reload.Plan, reload.PlannedBundle) reload.BundleResult {
	return reload.BundleResult{}
}

// staleOn is the rows of a group whose cell on cluster is stale_cache.
func staleOn(cluster string) func(string) iter.Seq[verdict.Row] {
	return func(string) iter.Seq[verdict.Row] {
		return func(yield func(verdict.Row) bool) {
			yield(verdict.Row{Cells: []verdict.Cell{{Cluster: cluster, Status: verdict.StatusStaleCache}}})
		}
	}
}

// TestRepairOnlyWhenReadyAndUp: repair plans on a cluster that answers once every cluster
// has replayed, never before, never on a cluster down; a plan that fails counts as a reload
// error of the cluster.
func TestRepairOnlyWhenReadyAndUp(t *testing.T) {
	wus, eus := &planCounter{}, &planCounter{}
	env := job.Env{Log: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "errors"}, []string{"cluster", "endpoint"}),
		Up:     func(c string, _ bool) bool { return c == "wus" }, Now: time.Now}
	j := New(func() []Target {
		return []Target{{Name: "wus", Reloader: wus}, {Name: "eus", Reloader: eus}, {Name: "scus"}}
	},
		Options{MaxBundles: 1, Cooldown: time.Minute, CallTimeout: time.Second}, env, NewMetrics())
	c := job.Cycle{Start: time.Now(), Asked: []string{"orders"}, Rows: staleOn("wus"),
		Inbound: func(string, string) map[string]verdict.Inbound { return nil }}
	j.AfterCycle(context.Background(), c)
	if wus.plans != 0 {
		t.Fatalf("%d plans before every cluster replayed, want none", wus.plans)
	}
	c.Ready = true
	j.AfterCycle(context.Background(), c)
	if wus.plans != 1 || eus.plans != 0 {
		t.Fatalf("plans: wus %d (want 1), eus down %d (want 0)", wus.plans, eus.plans)
	}
	if n := testutil.ToFloat64(env.Errors.WithLabelValues("wus", "reload")); n != 1 {
		t.Errorf("reload errors %v, want 1", n)
	}
}

// TestResyncForgetsPassedCooldowns: a resync drops the bundles whose cooldown has passed,
// and keeps the others.
func TestResyncForgetsPassedCooldowns(t *testing.T) {
	now := time.Now()
	env := job.Env{Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Up: func(string, bool) bool { return false }, Now: time.Now}
	j := New(func() []Target { return nil }, Options{Cooldown: time.Minute}, env, NewMetrics())
	j.last("wus")["old"] = now.Add(-2 * time.Minute)
	j.last("wus")["new"] = now.Add(-time.Second)
	j.AfterCycle(context.Background(), job.Cycle{Start: now})
	if len(j.last("wus")) != 2 {
		t.Fatalf("cooldowns forgotten without a resync: %v", j.last("wus"))
	}
	j.AfterCycle(context.Background(), job.Cycle{Start: now, Resync: true})
	if _, ok := j.last("wus")["old"]; ok || len(j.last("wus")) != 1 {
		t.Errorf("after a resync: %v, want only the bundle still cooling down", j.last("wus"))
	}
}
