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
	MetricReloads         = "kop_offsets_watch_reloads_total"
	MetricReloadsRefused  = "kop_offsets_watch_reloads_refused_total"
	MetricReplicated      = "kop_offsets_replicated_commits_total"
	MetricReplicationLag  = "kop_offsets_replication_delay_seconds"
	MetricStaleness       = "kop_offsets_staleness_seconds"
	MetricStalenessServed = "kop_offsets_staleness_served_seconds"
	MetricStaleCommits    = "kop_offsets_stale_replicated_commits"
	MetricArrivalsDropped = "kop_offsets_watch_arrivals_dropped_total"
	MetricLastCycle       = "kop_offsets_watch_last_cycle_timestamp_seconds"
	MetricRows            = "kop_offsets_watch_rows"
	MetricKept            = "kop_offsets_watch_kept_translations_total"
	MetricKeepReads       = "kop_offsets_watch_keep_messages_read_total"
	MetricSynced          = "kop_offsets_sync_commits_total"
	MetricSyncDeleted     = "kop_offsets_sync_deletes_total"
	MetricSyncSkipped     = "kop_offsets_sync_groups_skipped_total"
	MetricSyncLatency     = "kop_offsets_sync_latency_seconds"
	MetricSyncActive      = "kop_offsets_sync_active"
	MetricSyncDuration    = "kop_offsets_sync_duration_seconds"
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
	reloads         *prometheus.CounterVec
	refused         *prometheus.CounterVec
	replicated      *prometheus.CounterVec
	replDelay       *prometheus.HistogramVec
	staleness       *prometheus.GaugeVec
	stalenessServed *prometheus.HistogramVec
	staleCommits    *prometheus.GaugeVec
	dropped         *prometheus.CounterVec
	lastCycle       prometheus.Gauge
	kept            *prometheus.CounterVec
	keepReads       *prometheus.CounterVec
	synced          *prometheus.CounterVec
	syncDeleted     *prometheus.CounterVec
	syncSkipped     *prometheus.CounterVec
	syncLatency     *prometheus.HistogramVec
	syncDuration    prometheus.Histogram
	syncActive      prometheus.Gauge

	report atomic.Pointer[snapshot] // the last cycle's; kop_offsets_watch_rows and the rows' series are read from it
}

// Buckets for durations from a few milliseconds (a fetch) to an hour (a stale standby).
var durationBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}

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
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricReloads,
			Help: "Bundle reloads by result (reload's bundle statuses; dry_run: logged, not done)."}, []string{cl, "result"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricReloadsRefused,
			Help: "Reloads the policy refused, by reason."}, []string{cl, "reason"}),
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
		kept: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricKept,
			Help: "Kept translations of replicated commits (--keep-translations), by source cluster and result (written; behind: written, the data not all replicated yet; dry_run). Failures count in kop_offsets_watch_errors_total{endpoint=keep}."}, []string{cl, "from", "result"}),
		keepReads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricKeepReads,
			Help: "Data-topic messages read to keep translations, by the copy read (source, target): the cost of keeping."}, []string{cl, "copy"}),
		synced: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricSynced,
			Help: "Offsets committed through KoP's OffsetCommit by --sync, by target cluster, source cluster and result (written; behind: written, the data not all replicated yet; dry_run). Failures count in kop_offsets_watch_errors_total{endpoint=sync}."}, []string{cl, "from", "result"}),
		syncDeleted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricSyncDeleted,
			Help: "Offsets --sync deleted on a target because their source no longer holds them."}, []string{cl, "from"}),
		syncSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricSyncSkipped,
			Help: "Group syncs not done, by reason (split_brain: live or committing on two clusters; replicated: a commit arrived by replication; unknown: a cluster's members unknown; offset_delete_unsupported: an offset the source dropped that the target's KoP cannot delete)."}, []string{"reason"}),
		syncLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricSyncLatency,
			Help: "Time from a commit on its source (its commit timestamp) to its translation committed on the target.", Buckets: durationBuckets}, []string{cl, "from"}),
		syncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: MetricSyncDuration,
			Help: "Duration of one sync step (--sync: a batch of due groups: DescribeGroups where membership is not known, translation, OffsetCommits). Steps run as commits arrive: steps near a second long are a sync falling behind its sources.", Buckets: durationBuckets}),
		syncActive: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricSyncActive,
			Help: "1 when this process syncs (--sync: it holds the writer lease of every synced cluster that is up), 0 when it waits as a standby replica."}),
	}
	m.tenant = tenant
	var reg prometheus.Registerer = m.Registry
	if tenant != "" {
		reg = prometheus.WrapRegistererWith(prometheus.Labels{"tenant": tenant}, m.Registry)
	}
	m.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(m.syncActive, m.syncDuration, m.synced, m.syncDeleted, m.syncSkipped, m.syncLatency, m.cycles, m.cycleDuration, m.replayDuration, m.fetchDuration, m.errors, m.messages,
		m.groupsFetched, m.up, m.kopUp, m.following, m.reloads, m.refused, m.replicated, m.replDelay, m.staleness,
		m.stalenessServed, m.staleCommits, m.dropped, m.lastCycle, m.kept, m.keepReads, rowsCollector{m})
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
