// Package syncjob runs sync mode (watch --sync) beside watch's exporter: the sync engine
// (package streamsync) fed by watch's followers, the cycle's probe telling it which clusters
// answer and when a resync is due, and an observer turning what it does into the job's
// metrics and decision log.
package syncjob

import (
	"context"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/offsetsync"
	"github.com/kop-offsets/kop-offsets/internal/streamsync"
	"github.com/kop-offsets/kop-offsets/internal/watch/job"
)

// Cluster is one synced cluster and how to reach it.
type Cluster struct {
	Name           string
	KafkaNamespace string
	Committer      offsetsync.Committer
	Members        streamsync.Describer
	Data           align.Source
	Lease          streamsync.Lease
}

// Options tune the job (see watch.Options for each).
type Options struct {
	Groups, Topics   []string
	Window, Retry    time.Duration
	CallTimeout      time.Duration
	SplitBrainWindow time.Duration
	MaxMessages      int64
	DryRun           bool
}

// Job is sync mode: implements job.Job.
type Job struct {
	engine   *streamsync.Engine
	clusters []string
	env      job.Env
}

var _ job.Job = (*Job)(nil)

// New returns the sync job of clusters.
func New(clusters []Cluster, o Options, env job.Env, m *Metrics) *Job {
	var cs []streamsync.Cluster
	var names []string
	for _, c := range clusters {
		cs = append(cs, streamsync.Cluster{Name: c.Name, KafkaNamespace: c.KafkaNamespace, Committer: c.Committer,
			Members: c.Members, Data: c.Data, Lease: c.Lease})
		names = append(names, c.Name)
	}
	obs := &observer{env: env, m: m, dryRun: o.DryRun, split: map[string]bool{}}
	e := streamsync.New(cs, streamsync.Options{Groups: o.Groups, Topics: o.Topics, Window: o.Window,
		CallTimeout: min(o.CallTimeout, streamsync.DefaultCallTimeout), Retry: o.Retry, SplitBrainWindow: o.SplitBrainWindow, MaxMessages: o.MaxMessages,
		DryRun: o.DryRun, Now: env.Now, Observer: obs})
	return &Job{engine: e, clusters: names, env: env}
}

// Store implements job.Job: the engine's copy of cluster's offsets topic.
func (j *Job) Store(cluster string) *streamsync.Store { return j.engine.Store(cluster) }

// Start implements job.Job: the engine syncs as commits are read.
func (j *Job) Start() func(ctx context.Context) { return j.engine.Run }

// AfterCycle implements job.Job: the engine learns which clusters answer, and a resync
// (after the first cycle: the engine's start is one) makes every group due.
func (j *Job) AfterCycle(_ context.Context, c job.Cycle) {
	for _, name := range j.clusters {
		j.engine.SetUp(name, j.env.Up(name, false))
	}
	if c.Resync && !c.First {
		j.engine.Resync()
	}
}

// SweepAll syncs every group once (sync setup's seed; see streamsync.Engine.SweepAll).
func (j *Job) SweepAll(ctx context.Context) (streamsync.Sweep, error) { return j.engine.SweepAll(ctx) }
