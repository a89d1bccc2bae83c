package watch

// The jobs beside the exporter, wired from the clusters and the Options: each is its own
// package (syncjob, keepjob, repairjob) owning its metrics and log lines; the cycle knows
// them only as job.Job.

import (
	"time"

	"github.com/kop-offsets/kop-offsets/internal/reload"
	"github.com/kop-offsets/kop-offsets/internal/streamsync"
	"github.com/kop-offsets/kop-offsets/internal/watch/job"
	"github.com/kop-offsets/kop-offsets/internal/watch/keepjob"
	"github.com/kop-offsets/kop-offsets/internal/watch/repairjob"
	"github.com/kop-offsets/kop-offsets/internal/watch/syncjob"
)

// SyncLease is a writer lease held for as long as the process syncs (*lease.Lease).
type SyncLease = streamsync.Lease

// GroupDescriber answers DescribeGroups on one cluster (kop.KafkaGroups).
type GroupDescriber = streamsync.Describer

// jobs are the jobs of this watch, in order: the first with a Store of a cluster is fed
// that cluster's commits.
func (w *Watcher) jobs() []job.Job {
	js := make([]job.Job, 0, 3)
	if w.sync != nil {
		js = append(js, w.sync)
	}
	js = append(js, w.keep)
	if w.repair != nil {
		js = append(js, w.repair)
	}
	return js
}

// store is the Store of cluster the followers feed: the first job's that reads it.
func (w *Watcher) store(cluster string) *streamsync.Store {
	for _, j := range w.jobs() {
		if s := j.Store(cluster); s != nil {
			return s
		}
	}
	return nil
}

// env is what every job gets from the watch.
func (w *Watcher) env() job.Env {
	return job.Env{Log: w.log, Errors: w.m.errors, Up: w.clusters.up, Now: w.o.Now}
}

// newSyncJob is the sync job of the clusters as they are now.
func (w *Watcher) newSyncJob() *syncjob.Job {
	var cs []syncjob.Cluster
	for _, c := range w.clusters {
		cs = append(cs, syncjob.Cluster{Name: c.Name, KafkaNamespace: c.KafkaNamespace, Committer: c.Committer,
			Members: c.Members, Data: c.Data, Lease: c.SyncLease})
	}
	o := w.o
	return syncjob.New(cs, syncjob.Options{Groups: o.Groups, Topics: o.Topics, Window: o.SyncWindow, Retry: o.SyncRetry,
		CallTimeout: o.CallTimeout, SplitBrainWindow: o.SplitBrainWindow, MaxMessages: o.SyncMaxMessages, DryRun: o.DryRun},
		w.env(), w.m.sync)
}

// keepClusters are the clusters as keeping sees them (read when the job starts).
func (w *Watcher) keepClusters() []keepjob.Cluster {
	var cs []keepjob.Cluster
	for _, c := range w.clusters {
		cs = append(cs, keepjob.Cluster{Name: c.Name, KafkaNamespace: c.KafkaNamespace, Keeper: c.Keeper, Lease: c.KeepLease})
	}
	return cs
}

// repairTargets are the clusters as repair sees them (read at each cycle).
func (w *Watcher) repairTargets() []repairjob.Target {
	var ts []repairjob.Target
	for _, c := range w.clusters {
		ts = append(ts, repairjob.Target{Name: c.Name, Reloader: c.Reloader})
	}
	return ts
}

// The repair job's types, under the names watch's users know them by.
type (
	// Reloader writes to one cluster for --repair (repairjob.Reloader).
	Reloader = repairjob.Reloader
	// ReloadSession is the Reloader of reload's Planner and Executor.
	ReloadSession = repairjob.ReloadSession
	// ShutdownSafeAdmin is a reload.BundleAdmin safe to stop at any moment.
	ShutdownSafeAdmin = repairjob.ShutdownSafeAdmin
	// WriteGuard is taken around --repair's writes on a cluster in a cycle.
	WriteGuard = repairjob.WriteGuard
	// GuardedReloader is a Reloader whose writes are guarded.
	GuardedReloader = repairjob.GuardedReloader
)

// NewReloadSession wires p and e (see repairjob.NewReloadSession).
func NewReloadSession(p *reload.Planner, e *reload.Executor, callTimeout time.Duration) *ReloadSession {
	return repairjob.NewReloadSession(p, e, callTimeout)
}
