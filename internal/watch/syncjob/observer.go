package syncjob

import (
	"errors"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/offsetsync"
	"github.com/kop-offsets/kop-offsets/internal/streamsync"
	"github.com/kop-offsets/kop-offsets/internal/watch/job"
)

// observer records what the engine does: metrics and the decision log. The engine calls it
// from one goroutine at a time.
type observer struct {
	env    job.Env
	m      *Metrics
	dryRun bool
	split  map[string]bool // groups in split brain: logged when it starts and ends
}

var _ streamsync.Observer = (*observer)(nil)

// Active records whether this process holds every lease (logged when it changes).
func (s *observer) Active(active bool, cluster string, err error) {
	s.m.Active.Set(b2f(active))
	if active {
		s.env.Log.Info("sync active: this process holds the writer lease of every synced cluster")
		return
	}
	s.env.Log.Warn("sync standby: another process syncs, or a lease could not be taken; trying again every second", "cluster", cluster, "err", err.Error())
}

// DescribeFailed counts a DescribeGroups that failed.
func (s *observer) DescribeFailed(cluster string, groups int, err error) {
	s.env.Errors.WithLabelValues(cluster, "sync").Inc()
	s.env.Log.Warn("sync: DescribeGroups failed: no group is synced to or from the cluster until it answers", "cluster", cluster, "groups", groups, "err", err.Error())
}

// Step records one step's duration.
func (s *observer) Step(st streamsync.StepStats) {
	s.m.Duration.Observe(st.All.Seconds())
	s.env.Log.Debug("sync step", "groups", st.Groups, "groupsSent", st.Sent, "describeSeconds", st.Describe.Seconds(),
		"readSeconds", st.Read.Seconds(), "planSeconds", st.Plan.Seconds(), "applySeconds", st.Apply.Seconds())
}

// Received counts the offsets of the synced groups' own commits read on cluster.
func (s *observer) Received(cluster string, n int) {
	s.m.Received.WithLabelValues(cluster).Add(float64(n))
}

// Result logs and counts what one group's sync did.
func (s *observer) Result(res offsetsync.Result) {
	s.synced(res)
	lg := s.env.Log
	for _, d := range res.Deleted {
		s.m.Deleted.WithLabelValues(d.Cluster, res.Source).Inc()
		lg.Info("sync deleted an offset its source no longer holds", "cluster", d.Cluster, "group", res.Group, "topic", d.Topic, "partition", d.Partition, "from", res.Source)
	}
	for _, d := range res.Undeleted {
		s.m.Skipped.WithLabelValues("offset_delete_unsupported").Inc()
		lg.Info("sync left an offset its source no longer holds: the cluster's KoP does not support OffsetDelete; KoP's offset retention expires it",
			"cluster", d.Cluster, "group", res.Group, "topic", d.Topic, "partition", d.Partition, "from", res.Source)
	}
	s.skipped(res)
	for _, err := range res.Errors {
		cluster := ""
		if ce, ok := errors.AsType[*offsetsync.ClusterError](err); ok {
			cluster = ce.Cluster
		}
		s.env.Errors.WithLabelValues(cluster, "sync").Inc()
		lg.Warn("sync failed", "group", res.Group, "err", err.Error())
	}
}

// synced counts and logs the offsets one group's sync committed (or would have).
func (s *observer) synced(res offsetsync.Result) {
	now := s.env.Now()
	result, msg := "written", "synced"
	if s.dryRun {
		result, msg = "dry_run", "would sync (dry run)"
	}
	for _, sy := range res.Synced {
		r := result
		if sy.Behind {
			r = "behind"
		}
		s.m.Synced.WithLabelValues(sy.Cluster, res.Source, r).Inc()
		if !s.dryRun && sy.SourceAt > 0 {
			s.m.Latency.WithLabelValues(sy.Cluster, res.Source).Observe(max(now.Sub(time.UnixMilli(int64(sy.SourceAt))).Seconds(), 0))
		}
		s.env.Log.Debug(msg, "cluster", sy.Cluster, "group", res.Group, "topic", sy.Topic, "partition", sy.Partition,
			"from", res.Source, "source", sy.Source, "translated", sy.Translated, "behind", sy.Behind)
	}
}

// skipped counts and logs why a group was not synced (split brain: logged when it starts and
// ends), or not to or from a cluster.
func (s *observer) skipped(res offsetsync.Result) {
	lg := s.env.Log
	switch {
	case res.SplitBrain != "":
		s.m.Skipped.WithLabelValues("split_brain").Inc()
		if !s.split[res.Group] {
			s.split[res.Group] = true
			lg.Warn("group not synced: split brain (logged once; counted at every retry)", "group", res.Group, "why", res.SplitBrain)
		}
	case res.Replicated != "":
		s.m.Skipped.WithLabelValues("replicated").Inc()
		lg.Warn("group not synced: the offsets topic replicates", "group", res.Group, "why", res.Replicated)
	}
	if res.SplitBrain == "" && s.split[res.Group] {
		delete(s.split, res.Group)
		lg.Info("split brain over: the group is synced again", "group", res.Group, "from", res.Source)
	}
	for _, l := range res.Left {
		if l.Partition >= 0 || !s.env.Up(l.Cluster, false) {
			continue // a key left (its error counts), or a cluster down: synced when it returns
		}
		s.m.Skipped.WithLabelValues("unknown").Inc()
		lg.Debug("group not synced to or from a cluster for now", "cluster", l.Cluster, "group", res.Group, "why", l.Why)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
