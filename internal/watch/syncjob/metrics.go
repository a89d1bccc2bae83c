package syncjob

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kop-offsets/kop-offsets/internal/watch/job"
)

// Names of the series of sync.
const (
	MetricSynced   = "kop_offsets_sync_commits_total"
	MetricReceived = "kop_offsets_sync_source_commits_total"
	MetricDeleted  = "kop_offsets_sync_deletes_total"
	MetricSkipped  = "kop_offsets_sync_groups_skipped_total"
	MetricLatency  = "kop_offsets_sync_latency_seconds"
	MetricActive   = "kop_offsets_sync_active"
	MetricDuration = "kop_offsets_sync_duration_seconds"
)

// Metrics are the collectors of sync; watch registers them beside its own.
type Metrics struct {
	Synced   *prometheus.CounterVec
	Received *prometheus.CounterVec
	Deleted  *prometheus.CounterVec
	Skipped  *prometheus.CounterVec
	Latency  *prometheus.HistogramVec
	Duration prometheus.Histogram
	Active   prometheus.Gauge
}

// NewMetrics returns the collectors, not registered.
func NewMetrics() *Metrics {
	cl := "cluster"
	return &Metrics{
		Synced: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricSynced,
			Help: "Offsets committed through KoP's OffsetCommit by --sync, by target cluster, source cluster and result (written; behind: written, the data not all replicated yet; dry_run). Failures count in kop_offsets_watch_errors_total{endpoint=sync}."}, []string{cl, "from", "result"}),
		Received: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricReceived,
			Help: "Offsets the synced groups committed on a cluster themselves (not the tool's commits, not arrived by replication), read from its offsets topic as they land: what sync carries. Coalesced, kop_offsets_sync_commits_total{from=<cluster>} is never more per target."}, []string{cl}),
		Deleted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricDeleted,
			Help: "Offsets --sync deleted on a target because their source no longer holds them."}, []string{cl, "from"}),
		Skipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricSkipped,
			Help: "Group syncs not done, by reason (split_brain: live or committing on two clusters; replicated: a commit arrived by replication; unknown: a cluster's members unknown; offset_delete_unsupported: an offset the source dropped that the target's KoP cannot delete)."}, []string{"reason"}),
		Latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricLatency,
			Help: "Time from a commit on its source (its commit timestamp) to its translation committed on the target.", Buckets: job.DurationBuckets}, []string{cl, "from"}),
		Duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: MetricDuration,
			Help: "Duration of one sync step (--sync: a batch of due groups: DescribeGroups where membership is not known, translation, OffsetCommits). Steps run as commits arrive: steps near a second long are a sync falling behind its sources.", Buckets: job.DurationBuckets}),
		Active: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricActive,
			Help: "1 when this process syncs (--sync: it holds the writer lease of every synced cluster that is up), 0 when it waits as a standby replica."}),
	}
}

// Collectors are every collector of m, to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Active, m.Duration, m.Synced, m.Received, m.Deleted, m.Skipped, m.Latency}
}
