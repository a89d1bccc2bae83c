package watch

// Sync mode (--sync) is run by its own engine (package streamsync): the followers feed it
// every message they read, and it syncs a group the moment one of its commits is read. Watch
// tells it which clusters answer (the cycle's probe) and when a resync is due, and observes
// what it does (syncObserver: the exporter's metrics and the decision log).

import (
	"errors"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/offsetsync"
	"github.com/kop-offsets/kop-offsets/internal/streamsync"
)

// GroupDescriber answers DescribeGroups on one cluster (kop.KafkaGroups).
type GroupDescriber = streamsync.Describer

// newEngine is the sync engine of clusters, nil when o.Sync is off.
func newEngine(o Options, clusters []*clusterRT, obs *syncObserver) *streamsync.Engine {
	if !o.Sync {
		return nil
	}
	var cs []streamsync.Cluster
	for _, c := range clusters {
		cs = append(cs, streamsync.Cluster{Name: c.Name, KafkaNamespace: c.KafkaNamespace, Committer: c.Committer,
			Members: c.Members, Data: c.Data, Lease: c.SyncLease})
	}
	return streamsync.New(cs, streamsync.Options{Groups: o.Groups, Topics: o.Topics, Window: o.SyncWindow,
		CallTimeout: min(o.CallTimeout, streamsync.DefaultCallTimeout), Retry: o.SyncRetry, SplitBrainWindow: o.SplitBrainWindow, MaxMessages: o.SyncMaxMessages,
		DryRun: o.DryRun, Now: o.Now, Observer: obs})
}

// syncObserver records what the engine does: metrics and the decision log. The engine calls
// it from one goroutine at a time.
type syncObserver struct {
	w     *Watcher
	split map[string]bool // groups in split brain: logged when it starts and ends
}

// Active records whether this process holds every lease (logged when it changes).
func (s *syncObserver) Active(active bool, cluster string, err error) {
	s.w.m.syncActive.Set(b2f(active))
	if active {
		s.w.log.Info("sync active: this process holds the writer lease of every synced cluster")
		return
	}
	s.w.log.Warn("sync standby: another process syncs, or a lease could not be taken; trying again every second", "cluster", cluster, "err", err.Error())
}

// DescribeFailed counts a DescribeGroups that failed.
func (s *syncObserver) DescribeFailed(cluster string, groups int, err error) {
	s.w.m.errors.WithLabelValues(cluster, "sync").Inc()
	s.w.log.Warn("sync: DescribeGroups failed: no group is synced to or from the cluster until it answers", "cluster", cluster, "groups", groups, "err", err.Error())
}

// Step records one step's duration.
func (s *syncObserver) Step(st streamsync.StepStats) {
	s.w.m.syncDuration.Observe(st.All.Seconds())
	s.w.log.Debug("sync step", "groups", st.Groups, "groupsSent", st.Sent, "describeSeconds", st.Describe.Seconds(),
		"readSeconds", st.Read.Seconds(), "planSeconds", st.Plan.Seconds(), "applySeconds", st.Apply.Seconds())
}

// Result logs and counts what one group's sync did.
func (s *syncObserver) Result(res offsetsync.Result) {
	w := s.w
	now := w.o.Now()
	result := "written"
	if w.o.DryRun {
		result = "dry_run"
	}
	for _, sy := range res.Synced {
		r := result
		if sy.Behind {
			r = "behind"
		}
		w.m.synced.WithLabelValues(sy.Cluster, res.Source, r).Inc()
		if !w.o.DryRun && sy.SourceAt > 0 {
			w.m.syncLatency.WithLabelValues(sy.Cluster, res.Source).Observe(max(now.Sub(time.UnixMilli(int64(sy.SourceAt))).Seconds(), 0))
		}
		msg := "synced"
		if w.o.DryRun {
			msg = "would sync (dry run)"
		}
		w.log.Debug(msg, "cluster", sy.Cluster, "group", res.Group, "topic", sy.Topic, "partition", sy.Partition,
			"from", res.Source, "source", sy.Source, "translated", sy.Translated, "behind", sy.Behind)
	}
	for _, d := range res.Deleted {
		w.m.syncDeleted.WithLabelValues(d.Cluster, res.Source).Inc()
		w.log.Info("sync deleted an offset its source no longer holds", "cluster", d.Cluster, "group", res.Group, "topic", d.Topic, "partition", d.Partition, "from", res.Source)
	}
	for _, d := range res.Undeleted {
		w.m.syncSkipped.WithLabelValues("offset_delete_unsupported").Inc()
		w.log.Info("sync left an offset its source no longer holds: the cluster's KoP does not support OffsetDelete; KoP's offset retention expires it",
			"cluster", d.Cluster, "group", res.Group, "topic", d.Topic, "partition", d.Partition, "from", res.Source)
	}
	s.skipped(res)
	for _, err := range res.Errors {
		cluster := ""
		if ce, ok := errors.AsType[*offsetsync.ClusterError](err); ok {
			cluster = ce.Cluster
		}
		w.m.errors.WithLabelValues(cluster, "sync").Inc()
		w.log.Warn("sync failed", "group", res.Group, "err", err.Error())
	}
}

// skipped counts and logs why a group was not synced (split brain: logged when it starts and
// ends), or not to or from a cluster.
func (s *syncObserver) skipped(res offsetsync.Result) {
	w := s.w
	switch {
	case res.SplitBrain != "":
		w.m.syncSkipped.WithLabelValues("split_brain").Inc()
		if !s.split[res.Group] {
			s.split[res.Group] = true
			w.log.Warn("group not synced: split brain (logged once; counted at every retry)", "group", res.Group, "why", res.SplitBrain)
		}
	case res.Replicated != "":
		w.m.syncSkipped.WithLabelValues("replicated").Inc()
		w.log.Warn("group not synced: the offsets topic replicates", "group", res.Group, "why", res.Replicated)
	}
	if res.SplitBrain == "" && s.split[res.Group] {
		delete(s.split, res.Group)
		w.log.Info("split brain over: the group is synced again", "group", res.Group, "from", res.Source)
	}
	for _, l := range res.Left {
		if l.Partition >= 0 || !w.clusterUp(l.Cluster, false) {
			continue // a key left (its error counts), or a cluster down: synced when it returns
		}
		w.m.syncSkipped.WithLabelValues("unknown").Inc()
		w.log.Debug("group not synced to or from a cluster for now", "cluster", l.Cluster, "group", res.Group, "why", l.Why)
	}
}
