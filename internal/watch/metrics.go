package watch

import (
	"io"
	"slices"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/kop-offsets/kop-offsets/internal/promexport"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
	"github.com/kop-offsets/kop-offsets/internal/watch/job"
	"github.com/kop-offsets/kop-offsets/internal/watch/keepjob"
	"github.com/kop-offsets/kop-offsets/internal/watch/repairjob"
	"github.com/kop-offsets/kop-offsets/internal/watch/syncjob"
)

// Names of the series watch adds to those of check (promexport.Metric*).
const (
	MetricCycles          = "kop_offsets_watch_cycles_total"
	MetricCycleDuration   = "kop_offsets_watch_cycle_duration_seconds"
	MetricReplayDuration  = "kop_offsets_watch_replay_duration_seconds"
	MetricFetchDuration   = "kop_offsets_watch_fetch_duration_seconds"
	MetricErrors          = "kop_offsets_watch_errors_total"
	MetricMessages        = "kop_offsets_watch_messages_total"
	MetricGroupsFetched   = "kop_offsets_watch_groups_fetched_total"
	MetricClusterUp       = "kop_offsets_watch_cluster_up"
	MetricKoPUp           = "kop_offsets_watch_kop_up"
	MetricPartitionsLive  = "kop_offsets_watch_partitions_following"
	MetricReloads         = repairjob.MetricReloads
	MetricReloadsRefused  = repairjob.MetricRefused
	MetricReplicated      = "kop_offsets_replicated_commits_total"
	MetricReplicationLag  = "kop_offsets_replication_delay_seconds"
	MetricStaleness       = "kop_offsets_staleness_seconds"
	MetricStalenessServed = "kop_offsets_staleness_served_seconds"
	MetricStaleCommits    = "kop_offsets_stale_replicated_commits"
	MetricArrivalsDropped = "kop_offsets_watch_arrivals_dropped_total"
	MetricLastCycle       = "kop_offsets_watch_last_cycle_timestamp_seconds"
	MetricRows            = "kop_offsets_watch_rows"
	MetricKept            = keepjob.MetricKept
	MetricKeepReads       = keepjob.MetricReads
	MetricSynced          = syncjob.MetricSynced
	MetricSyncDeleted     = syncjob.MetricDeleted
	MetricSyncSkipped     = syncjob.MetricSkipped
	MetricSyncLatency     = syncjob.MetricLatency
	MetricSyncActive      = syncjob.MetricActive
	MetricSyncDuration    = syncjob.MetricDuration
)

// Metrics are watch's own collectors (Registry), plus the series of the latest report in
// check's names and labels, written by WriteText from the report a cycle published.
type Metrics struct {
	Registry *prometheus.Registry
	// tenant labels every series of a watch of one tenant of a multi-tenant KoP ("": none).
	tenant string

	cycles          prometheus.Counter
	cycleDuration   prometheus.Histogram
	replayDuration  *prometheus.HistogramVec
	fetchDuration   *prometheus.HistogramVec
	errors          *prometheus.CounterVec
	messages        *prometheus.CounterVec
	groupsFetched   *prometheus.CounterVec
	up              *prometheus.GaugeVec
	kopUp           *prometheus.GaugeVec
	following       *prometheus.GaugeVec
	replicated      *prometheus.CounterVec
	replDelay       *prometheus.HistogramVec
	staleness       *prometheus.GaugeVec
	stalenessServed *prometheus.HistogramVec
	staleCommits    *prometheus.GaugeVec
	dropped         *prometheus.CounterVec
	lastCycle       prometheus.Gauge

	// The jobs' own (registered here, beside the exporter's).
	sync   *syncjob.Metrics
	keep   *keepjob.Metrics
	repair *repairjob.Metrics

	report atomic.Pointer[snapshot] // the last cycle's; kop_offsets_watch_rows and the rows' series are read from it
}

// Buckets for durations from a few milliseconds (a fetch) to an hour (a stale standby).
var durationBuckets = job.DurationBuckets

// NewMetrics registers the collectors (and the Go and process collectors) in a new registry.
func NewMetrics() *Metrics { return NewTenantMetrics("") }

// NewTenantMetrics is NewMetrics for a watch of one tenant: every series but the Go and
// process collectors' carries tenant="<tenant>" (none when tenant is empty).
func NewTenantMetrics(tenant string) *Metrics {
	c, cl := []string{"cluster"}, "cluster"
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		cycles:   prometheus.NewCounter(prometheus.CounterOpts{Name: MetricCycles, Help: "Watch cycles completed."}),
		cycleDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: MetricCycleDuration,
			Help: "Duration of a watch cycle (fetch, classification, repair).", Buckets: durationBuckets}),
		replayDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricReplayDuration,
			Help: "Time to replay one offsets partition up to its last message at the start (the initial replay, and after a reconnect).", Buckets: durationBuckets}, c),
		fetchDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricFetchDuration,
			Help: "Duration of the OffsetFetch of one cycle on one cluster (all batches).", Buckets: durationBuckets}, c),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricErrors,
			Help: "Failures per cluster and endpoint (pulsar: offsets topic, admin: admin API, kafka: KoP, reload)."}, []string{cl, "endpoint"}),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricMessages,
			Help: "Offsets-topic messages read after the initial replay."}, c),
		groupsFetched: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricGroupsFetched,
			Help: "Groups asked with OffsetFetch."}, c),
		up: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricClusterUp,
			Help: "1 when the cluster's admin API answered in the last cycle and every offsets partition is followed."}, c),
		kopUp: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricKoPUp,
			Help: "1 when KoP answered OffsetFetch in the last cycle that asked it."}, c),
		following: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricPartitionsLive,
			Help: "Offsets partitions caught up and followed."}, c),
		replicated: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricReplicated,
			Help: "Offset commits that arrived on the cluster by geo-replication, by source cluster."}, []string{cl, "from"}),
		replDelay: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricReplicationLag,
			Help: "Arrival of a replicated commit on the cluster minus its commit timestamp on the source.", Buckets: durationBuckets}, []string{cl, "from"}),
		staleness: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricStaleness,
			Help: "Age of the oldest replicated commit KoP on the cluster does not serve yet (0: KoP serves every replicated commit)."}, c),
		stalenessServed: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricStalenessServed,
			Help: "Time from a replicated commit's arrival to KoP on the cluster serving it (as seen by the cycles).", Buckets: durationBuckets}, c),
		staleCommits: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricStaleCommits,
			Help: "Group/topic/partitions with a replicated commit KoP does not serve yet."}, c),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricArrivalsDropped,
			Help: "Replicated commits not tracked for staleness because too many arrived within one cycle."}, c),
		lastCycle: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricLastCycle, Help: "Unix time of the end of the last cycle."}),
	}
	m.tenant = tenant
	var reg prometheus.Registerer = m.Registry
	if tenant != "" {
		reg = prometheus.WrapRegistererWith(prometheus.Labels{"tenant": tenant}, m.Registry)
	}
	m.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.sync, m.keep, m.repair = syncjob.NewMetrics(), keepjob.NewMetrics(), repairjob.NewMetrics()
	reg.MustRegister(m.sync.Collectors()...)
	reg.MustRegister(m.cycles, m.cycleDuration, m.replayDuration, m.fetchDuration, m.errors, m.messages,
		m.groupsFetched, m.up, m.kopUp, m.following, m.replicated, m.replDelay, m.staleness,
		m.stalenessServed, m.staleCommits, m.dropped, m.lastCycle, rowsCollector{m})
	reg.MustRegister(m.repair.Collectors()...)
	reg.MustRegister(m.keep.Collectors()...)
	return m
}

// setReport publishes the report of a cycle; its series (check's names, see promexport) and
// kop_offsets_watch_rows are built when scraped, so a cycle does not pay for them.
func (m *Metrics) setReport(s *snapshot) { m.report.Store(s) }

// rowsDesc describes kop_offsets_watch_rows.
var rowsDesc = prometheus.NewDesc(MetricRows,
	"Rows of the last cycle's report by status (check's summary), whichever rows --row-series exports.",
	[]string{"status"}, nil)

// rowsCollector collects kop_offsets_watch_rows at scrape time from the report the last
// cycle published (none before the first cycle).
type rowsCollector struct{ m *Metrics }

func (rowsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- rowsDesc }

func (r rowsCollector) Collect(ch chan<- prometheus.Metric) {
	s := r.m.report.Load()
	if s == nil {
		return
	}
	for _, st := range verdict.Statuses { // every status, so that none goes away between cycles
		ch <- prometheus.MustNewConstMetric(rowsDesc, prometheus.GaugeValue, float64(s.head.Summary[string(st)]), string(st))
	}
}

// WriteText writes every series in Prometheus's text format: the registry's, then those of
// the latest report, streamed a row at a time (promexport.WriteText), so that a scrape does
// not hold the series of every row at once.
func (m *Metrics) WriteText(w io.Writer) error {
	gatherErr := promexport.EncodeText(w, m.Registry)
	if snap := m.report.Load(); snap != nil {
		head, rows := &snap.head, promexport.Rows(snap.seriesRows)
		if m.tenant != "" {
			head, rows = withTenant(m.tenant, head, rows)
		}
		if err := promexport.WriteText(w, head, rows); err != nil {
			return err
		}
	}
	return gatherErr
}

// withTenant names tenant in the rows and unserved partitions of a report, for their labels.
func withTenant(tenant string, head *survey.Report, rows promexport.Rows) (*survey.Report, promexport.Rows) {
	h := *head
	h.Unserved = slices.Clone(head.Unserved)
	for i := range h.Unserved {
		h.Unserved[i].Tenant = tenant
	}
	return &h, func(fn func(*verdict.Row)) {
		rows(func(r *verdict.Row) {
			r.Tenant = tenant
			fn(r)
		})
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
