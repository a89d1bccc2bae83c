// Package repairjob runs watch --repair beside watch's exporter: after each cycle it reloads,
// under a policy, the bundles holding the stale_cache and coordinator_unavailable rows the
// cycle found, and counts what it did and refused in the job's own metrics.
package repairjob

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kop-offsets/kop-offsets/internal/streamsync"
	"github.com/kop-offsets/kop-offsets/internal/watch/job"
)

// Names of the series of repair.
const (
	MetricReloads = "kop_offsets_watch_reloads_total"
	MetricRefused = "kop_offsets_watch_reloads_refused_total"
)

// Metrics are the collectors of repair; watch registers them beside its own.
type Metrics struct {
	Reloads *prometheus.CounterVec
	Refused *prometheus.CounterVec
}

// NewMetrics returns the collectors, not registered.
func NewMetrics() *Metrics {
	return &Metrics{
		Reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricReloads,
			Help: "Bundle reloads by result (reload's bundle statuses; dry_run: logged, not done)."}, []string{"cluster", "result"}),
		Refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricRefused,
			Help: "Reloads the policy refused, by reason."}, []string{"cluster", "reason"}),
	}
}

// Collectors are every collector of m, to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Reloads, m.Refused}
}

// Target is one watched cluster as repair sees it.
type Target struct {
	Name string
	// Reloader writes to the cluster; nil: repair never writes there.
	Reloader Reloader
}

// Options tune the job (see watch.Options).
type Options struct {
	DryRun      bool
	MaxBundles  int           // reloads per cluster and cycle
	Cooldown    time.Duration // between two reloads of one bundle
	CallTimeout time.Duration
}

// Job is repair: implements job.Job.
type Job struct {
	targets func() []Target // read at each cycle: the clusters as they are then
	o       Options
	env     job.Env
	m       *Metrics

	lastReload map[string]map[string]time.Time // cluster -> bundle -> when it was reloaded
}

var _ job.Job = (*Job)(nil)

// New returns the job repairing the clusters targets returns.
func New(targets func() []Target, o Options, env job.Env, m *Metrics) *Job {
	return &Job{targets: targets, o: o, env: env, m: m, lastReload: map[string]map[string]time.Time{}}
}

// Store implements job.Job: repair does not read the commit stream.
func (*Job) Store(string) *streamsync.Store { return nil }

// Start implements job.Job: repair runs within the cycles only.
func (*Job) Start() func(context.Context) { return nil }

// AfterCycle implements job.Job: once every cluster that answers has replayed, each one
// that answers and may be written is repaired among the groups the cycle asked. A resync
// forgets the cooldowns that have passed.
func (j *Job) AfterCycle(ctx context.Context, c job.Cycle) {
	if c.Resync {
		for _, last := range j.lastReload {
			for r, at := range last {
				if c.Start.Sub(at) >= j.o.Cooldown {
					delete(last, r)
				}
			}
		}
	}
	if !c.Ready {
		return
	}
	for _, t := range j.targets() {
		if t.Reloader != nil && j.env.Up(t.Name, false) {
			j.repair(ctx, t, c)
		}
	}
}

// last is when each bundle of cluster was last reloaded.
func (j *Job) last(cluster string) map[string]time.Time {
	m := j.lastReload[cluster]
	if m == nil {
		m = map[string]time.Time{}
		j.lastReload[cluster] = m
	}
	return m
}
