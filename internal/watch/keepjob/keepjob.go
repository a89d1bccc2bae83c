// Package keepjob runs kept translations (watch --keep-translations) beside watch's exporter:
// one keeping engine (package streamkeep) per kept cluster, fed by watch's followers, made
// to retry what it left for later at each cycle, and observed through the job's metrics and
// decision log.
package keepjob

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/match"
	"github.com/kop-offsets/kop-offsets/internal/standby"
	"github.com/kop-offsets/kop-offsets/internal/streamkeep"
	"github.com/kop-offsets/kop-offsets/internal/streamsync"
	"github.com/kop-offsets/kop-offsets/internal/watch/job"
)

// Names of the series of kept translations.
const (
	MetricKept  = "kop_offsets_watch_kept_translations_total"
	MetricReads = "kop_offsets_watch_keep_messages_read_total"
)

// Metrics are the collectors of kept translations; watch registers them beside its own.
type Metrics struct {
	Kept  *prometheus.CounterVec
	Reads *prometheus.CounterVec
}

// NewMetrics returns the collectors, not registered.
func NewMetrics() *Metrics {
	return &Metrics{
		Kept: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricKept,
			Help: "Kept translations of replicated commits (--keep-translations), by source cluster and result (written; behind: written, the data not all replicated yet; dry_run). Failures count in kop_offsets_watch_errors_total{endpoint=keep}."}, []string{"cluster", "from", "result"}),
		Reads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricReads,
			Help: "Data-topic messages read to keep translations, by the copy read (source, target): the cost of keeping."}, []string{"cluster", "copy"}),
	}
}

// Collectors are every collector of m, to register.
func (m *Metrics) Collectors() []prometheus.Collector { return []prometheus.Collector{m.Kept, m.Reads} }

// Cluster is one watched cluster as keeping sees it.
type Cluster struct {
	Name           string
	KafkaNamespace string
	// Keeper keeps the translations of the commits replicated here; nil: none is kept.
	Keeper *standby.Keeper
	// Lease is the cluster's writer lease, taken for each keeping (nil: none).
	Lease streamsync.Lease
}

// Options tune the job.
type Options struct {
	Groups, Topics []string // globs, as watch's
	DryRun         bool
	CallTimeout    time.Duration
}

// Job is kept translations: implements job.Job.
type Job struct {
	clusters func() []Cluster // read at Start: the clusters as they are then
	o        Options
	env      job.Env
	m        *Metrics

	engines map[string]*streamkeep.Engine // by cluster, from Start on
}

var _ job.Job = (*Job)(nil)

// New returns the job keeping the clusters that clusters returns at Start.
func New(clusters func() []Cluster, o Options, env job.Env, m *Metrics) *Job {
	return &Job{clusters: clusters, o: o, env: env, m: m}
}

// Start implements job.Job: every cluster with a Keeper gets its keeping engine, before the
// followers start (they feed its Store); a commit replicated there is kept as it is read.
func (j *Job) Start() func(ctx context.Context) {
	engines := map[string]*streamkeep.Engine{}
	for _, c := range j.clusters() {
		if c.Keeper == nil {
			continue
		}
		accept := func(co loader.CommittedOffset) bool {
			return match.Any(j.o.Groups, co.Group) && match.Any(j.o.Topics, loader.ShortName(co.Topic, c.KafkaNamespace), co.Topic)
		}
		engines[c.Name] = streamkeep.New(c.Keeper, c.Lease, &observer{env: j.env, m: j.m, c: c}, streamkeep.Options{
			Accept: accept, Up: func(n string) bool { return j.env.Up(n, true) }, DryRun: j.o.DryRun, CallTimeout: j.o.CallTimeout})
	}
	j.engines = engines
	if len(engines) == 0 {
		return nil
	}
	return func(ctx context.Context) {
		var wg sync.WaitGroup
		for _, e := range engines {
			wg.Go(func() { e.Run(ctx) })
		}
		wg.Wait()
	}
}

// Store implements job.Job: the copy cluster's keeping engine reads (nil: not kept).
func (j *Job) Store(cluster string) *streamsync.Store {
	if e := j.engines[cluster]; e != nil {
		return e.Store()
	}
	return nil
}

// AfterCycle implements job.Job: translations are kept as they are read; the cycle makes
// what was left for later (a source that did not answer, a failed write) due again.
func (j *Job) AfterCycle(context.Context, job.Cycle) {
	for name, e := range j.engines {
		if j.env.Up(name, false) {
			e.Retry()
		}
	}
}

// observer turns one cluster's keeping into metrics and log lines.
type observer struct {
	env  job.Env
	m    *Metrics
	c    Cluster
	last align.TrackerStats
}

var _ streamkeep.Observer = (*observer)(nil)

func (o *observer) Kept(res standby.Result) {
	c := o.c
	for _, k := range res.Kept {
		result := "written"
		if k.Behind {
			result = "behind"
		}
		o.m.Kept.WithLabelValues(c.Name, k.From, result).Inc()
		o.env.Log.Debug("kept a translation", "cluster", c.Name, "group", k.Key.Group, "topic", loader.ShortName(k.Key.Topic, c.KafkaNamespace),
			"partition", k.Key.Partition, "from", k.From, "source", k.Source, "translated", k.Translated, "behind", k.Behind)
	}
	for _, err := range res.Errors {
		o.env.Errors.WithLabelValues(c.Name, "keep").Inc()
		o.env.Log.Warn("translation not kept", "cluster", c.Name, "err", err.Error())
	}
}

func (o *observer) Read(s align.TrackerStats) {
	o.m.Reads.WithLabelValues(o.c.Name, "source").Add(float64(s.SourceReads - o.last.SourceReads))
	o.m.Reads.WithLabelValues(o.c.Name, "target").Add(float64(s.TargetReads - o.last.TargetReads))
	o.last = s
}

func (o *observer) WouldKeep(co loader.CommittedOffset) {
	o.m.Kept.WithLabelValues(o.c.Name, co.Origin, "dry_run").Inc()
	o.env.Log.Info("would keep a translation (dry run)", "cluster", o.c.Name, "group", co.Group, "topic", loader.ShortName(co.Topic, o.c.KafkaNamespace),
		"partition", co.Partition, "from", co.Origin, "offset", co.Offset)
}

func (o *observer) Paused(err error) {
	o.env.Errors.WithLabelValues(o.c.Name, "keep").Inc()
	o.env.Log.Warn("keeping paused: another process writes this cluster's offsets topic (a watch --sync, a failover or a repair); no translation is kept here until it stops",
		"cluster", o.c.Name, "err", err.Error())
}

func (o *observer) Resumed() {
	o.env.Log.Info("keeping again: the cluster's writer lease is taken", "cluster", o.c.Name)
}
