package watch

// Sync mode (--sync): after every cycle the groups that changed on any cluster are synced
// (package offsetsync): each one's source offsets translated and committed through KoP's
// OffsetCommit on the clusters where it has no members. KoP serves such a commit at once:
// no unload.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/match"
	"github.com/kop-offsets/kop-offsets/internal/offsetsync"
)

// GroupDescriber answers DescribeGroups on one cluster (kop.KafkaGroups).
type GroupDescriber interface {
	DescribeGroups(ctx context.Context, groups []string) (map[string]kop.GroupActivity, error)
}

// syncChunk is how many groups one DescribeGroups of a sync asks, per cluster.
const syncChunk = 1000

// syncState is what sync mode keeps between cycles: which groups to sync again, and whether
// each cluster was up (one that returns gets every group again).
type syncState struct {
	syncer *offsetsync.Syncer
	again  map[string]bool
	wasUp  map[string]bool
	swept  bool            // every group synced once
	split  map[string]bool // groups in split brain: logged when it starts and ends
	active bool            // this process holds every lease and syncs
	known  bool            // active is known (a change is logged)
	sweep  *SyncSweep      // set during SyncOnce: what the sweep did
	// leaseErr is why the last cycle did not hold every lease (nil: it did).
	leaseErr error
}

// newSync is the sync state of clusters, nil when o.Sync is off.
func newSync(o Options, clusters []*clusterRT) *syncState {
	if !o.Sync {
		return nil
	}
	pool := &align.Pool{Sources: map[string]align.Source{}, MaxMessages: o.SyncMaxMessages}
	s := &syncState{syncer: &offsetsync.Syncer{Pool: pool, Window: o.SplitBrainWindow, Now: o.Now},
		again: map[string]bool{}, wasUp: map[string]bool{}, split: map[string]bool{}}
	for _, c := range clusters {
		pool.Sources[c.Name] = c.Data
		cm := c.Committer
		if o.DryRun {
			cm = dryCommitter{}
		}
		s.syncer.Clusters = append(s.syncer.Clusters, offsetsync.Cluster{Name: c.Name, KafkaNamespace: c.KafkaNamespace, Committer: cm})
	}
	return s
}

// dryCommitter commits nothing (--dry-run): the syncs are logged and counted as dry_run.
type dryCommitter struct{}

func (dryCommitter) Commit(context.Context, string, []kop.SyncCommit) error   { return nil }
func (dryCommitter) Delete(context.Context, string, map[string][]int32) error { return nil }
func (dryCommitter) DeleteGroup(context.Context, string) error                { return nil }

// sync syncs the groups that changed (dirty), those left for later, and on the first cycle,
// a resync, or a cluster's return, every group.
func (w *Watcher) sync(ctx context.Context, dirty [][]string, resync bool) {
	s := w.syncing
	start := time.Now()
	defer func() { w.m.syncDuration.Observe(time.Since(start).Seconds()) }()
	if !w.holdLeases(ctx) {
		s.swept = false // when it takes over, it syncs every group: it missed what changed
		return
	}
	ask := maps.Clone(s.again)
	all := !s.swept || resync
	for _, c := range w.clusters {
		if c.up && !s.wasUp[c.Name] {
			all = true // back (or first seen up): it missed what the others committed
		}
		s.wasUp[c.Name] = c.up
	}
	for _, d := range dirty {
		for _, g := range d {
			ask[g] = true
		}
	}
	if all {
		for _, c := range w.clusters {
			_, parts := c.partitions()
			for _, p := range parts {
				for g := range p.groups() {
					ask[g] = true
				}
			}
		}
	}
	var groups []string
	for g := range ask {
		if match.Any(w.o.Groups, g) {
			groups = append(groups, g)
		}
	}
	slices.Sort(groups)
	if s.sweep != nil {
		s.sweep.Groups += len(groups)
	}
	s.again = map[string]bool{}
	var describing, warming, planning, applying time.Duration
	sends := 0
	for chunk := range slices.Chunk(groups, syncChunk) {
		if ctx.Err() != nil {
			return
		}
		t0 := time.Now()
		acts := w.describe(ctx, chunk)
		t1 := time.Now()
		views := make(map[string]map[string]offsetsync.View, len(chunk))
		for _, g := range chunk {
			views[g] = w.syncViews(g, acts)
		}
		s.syncer.Warm(ctx, views, syncReads)
		t1w := time.Now()
		plans := make([]*offsetsync.Plan, len(chunk))
		for i, g := range chunk {
			plans[i] = s.syncer.Plan(ctx, g, views[g])
			sends += b2i(plans[i].Sends())
		}
		t2 := time.Now()
		results := applyPlans(ctx, plans, syncParallel)
		if ctx.Err() != nil {
			return // stopping: what was sent is in KoP, the rest is read back at start
		}
		describing, warming, planning, applying = describing+t1.Sub(t0), warming+t1w.Sub(t1), planning+t2.Sub(t1w), applying+time.Since(t2)
		for _, res := range results {
			if w.recordSync(res) {
				s.again[res.Group] = true
			}
		}
	}
	s.swept = true
	w.log.Debug("sync step", "groups", len(groups), "groupsSent", sends, "describeSeconds", describing.Seconds(),
		"readSeconds", warming.Seconds(), "planSeconds", planning.Seconds(), "applySeconds", applying.Seconds())
}

// syncParallel is how many groups' plans are sent at once, pipelined on the target's one
// Kafka connection. One OffsetCommit is a round trip and an append to the target's offsets
// topic (about 6 ms on the lab): one at a time, 1,000 groups changing every second took
// longer than the second (issue 31's scale test, p99 33 s). KoP on the lab, under 1,000
// commits a second of load on the other cluster, took about 3,300 commits a second with 32
// in flight and 5,000 to 5,900 with 128 (docs/performance.md); KoP queues up to 500 requests
// per connection (queued.max.requests), so 128 leaves room for the cycle's other requests.
const syncParallel = 128

// syncReads is how many topic partitions a cycle reads ahead at once (Syncer.Warm): each
// read is a few round trips to both clusters, and 20 partitions read one after the other took
// 3.6 s of a cycle.
const syncReads = 8

// applyPlans applies plans, at most par at once, and returns their results in plans' order.
func applyPlans(ctx context.Context, plans []*offsetsync.Plan, par int) []offsetsync.Result {
	out := make([]offsetsync.Result, len(plans))
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(par, 1))
	for i, p := range plans {
		if !p.Sends() {
			out[i] = p.Apply(ctx) // nothing to send: its result as decided
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out[i] = p.Apply(ctx)
		})
	}
	wg.Wait()
	return out
}

// holdLeases takes the writer lease of every cluster that is up, in name order (two
// replicas never hold one each), and reports whether this process holds them all: else it
// gives back what it took and waits for its turn (the holder's leases expire with its
// connections when it dies).
func (w *Watcher) holdLeases(ctx context.Context) bool {
	s := w.syncing
	cs := slices.Clone(w.clusters)
	slices.SortFunc(cs, func(a, b *clusterRT) int { return strings.Compare(a.Name, b.Name) })
	var failed error
	var on string
	for _, c := range cs {
		if c.SyncLease == nil || !c.up {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, w.o.CallTimeout)
		err := c.SyncLease.Acquire(cctx)
		cancel()
		if err != nil {
			failed, on = err, c.Name
			break
		}
	}
	active := failed == nil
	if !active {
		for _, c := range cs {
			if c.SyncLease != nil {
				c.SyncLease.Release()
			}
		}
	}
	w.m.syncActive.Set(b2f(active))
	if !s.known || active != s.active {
		if active {
			w.log.Info("sync active: this process holds the writer lease of every synced cluster")
		} else {
			w.log.Warn("sync standby: another process syncs, or a lease could not be taken; trying again every cycle", "cluster", on, "err", failed.Error())
		}
	}
	s.active, s.known = active, true
	s.leaseErr = nil
	if failed != nil {
		s.leaseErr = fmt.Errorf("cluster %s: %w", on, failed)
	}
	return active
}

// describe asks every cluster that is up about the members of groups; a cluster missing from
// the answer did not answer.
func (w *Watcher) describe(ctx context.Context, groups []string) map[string]map[string]kop.GroupActivity {
	out := map[string]map[string]kop.GroupActivity{}
	var mu sync.Mutex
	w.parallel(func(c *clusterRT) {
		if !c.up || c.Members == nil {
			return
		}
		cctx, cancel := context.WithTimeout(ctx, w.o.CallTimeout)
		defer cancel()
		acts, err := c.Members.DescribeGroups(cctx, groups)
		if err != nil {
			w.m.errors.WithLabelValues(c.Name, "sync").Inc()
			w.log.Warn("sync: DescribeGroups failed: no group is synced to or from the cluster this cycle", "cluster", c.Name, "groups", len(groups), "err", err.Error())
			return
		}
		mu.Lock()
		defer mu.Unlock()
		out[c.Name] = acts
	})
	return out
}

// syncViews is group on every cluster that is up and has replayed its partition, the
// offsets filtered by --topic.
func (w *Watcher) syncViews(g string, acts map[string]map[string]kop.GroupActivity) map[string]offsetsync.View {
	views := map[string]offsetsync.View{}
	for _, c := range w.clusters {
		if !c.up {
			continue
		}
		p := c.partitionOf(g)
		if p == nil {
			continue
		}
		var v offsetsync.View
		for co := range p.offsetsOf(g) {
			if match.Any(w.o.Topics, loader.ShortName(co.Topic, c.KafkaNamespace), co.Topic) {
				v.Offsets = append(v.Offsets, co)
			}
		}
		if a, ok := acts[c.Name][g]; ok && a.Err == nil {
			v.Members, v.MembersKnown = a.Members, true
		}
		views[c.Name] = v
	}
	return views
}

// recordSync logs and counts what a sync did, and says whether the group is to be synced
// again next cycle (a failure, a key behind, members unknown on a cluster that is up).
func (w *Watcher) recordSync(res offsetsync.Result) (again bool) {
	now := w.o.Now()
	result := "written"
	if w.o.DryRun {
		result = "dry_run"
	}
	for _, sy := range res.Synced {
		r := result
		if sy.Behind {
			r, again = "behind", true
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
	if sw := w.syncing.sweep; sw != nil {
		sw.Offsets += len(res.Synced)
		sw.Deleted += len(res.Deleted)
		if len(res.Synced) > 0 {
			sw.Synced++
		}
		if res.SplitBrain != "" {
			sw.SplitBrain = append(sw.SplitBrain, res.Group)
		}
	}
	for _, d := range res.Deleted {
		w.m.syncDeleted.WithLabelValues(d.Cluster, res.Source).Inc()
		w.log.Info("sync deleted an offset its source no longer holds", "cluster", d.Cluster, "group", res.Group, "topic", d.Topic, "partition", d.Partition, "from", res.Source)
	}
	for _, d := range res.Undeleted {
		// Looked at again when the group changes or at a resync, not every cycle.
		w.m.syncSkipped.WithLabelValues("offset_delete_unsupported").Inc()
		w.log.Info("sync left an offset its source no longer holds: the cluster's KoP does not support OffsetDelete; KoP's offset retention expires it",
			"cluster", d.Cluster, "group", res.Group, "topic", d.Topic, "partition", d.Partition, "from", res.Source)
	}
	switch {
	case res.SplitBrain != "":
		// Looked at again every cycle: once one side's members leave, the other is the source.
		w.m.syncSkipped.WithLabelValues("split_brain").Inc()
		again = true
		if !w.syncing.split[res.Group] {
			w.syncing.split[res.Group] = true
			w.log.Warn("group not synced: split brain (logged once; counted every cycle)", "group", res.Group, "why", res.SplitBrain)
		}
	case res.Replicated != "":
		w.m.syncSkipped.WithLabelValues("replicated").Inc()
		w.log.Warn("group not synced: the offsets topic replicates", "group", res.Group, "why", res.Replicated)
	}
	if res.SplitBrain == "" && w.syncing.split[res.Group] {
		delete(w.syncing.split, res.Group)
		w.log.Info("split brain over: the group is synced again", "group", res.Group, "from", res.Source)
	}
	for _, l := range res.Left {
		if l.Partition >= 0 || !w.isUp(l.Cluster) {
			continue // a key left (its error counts), or a cluster down: synced when it returns
		}
		// A cluster that answers, but not about the group's members: again next cycle.
		w.m.syncSkipped.WithLabelValues("unknown").Inc()
		again = true
		w.log.Debug("group not synced to or from a cluster this cycle", "cluster", l.Cluster, "group", res.Group, "why", l.Why)
	}
	for _, err := range res.Errors {
		again = true
		cluster := ""
		if ce, ok := errors.AsType[*offsetsync.ClusterError](err); ok {
			cluster = ce.Cluster
		}
		w.m.errors.WithLabelValues(cluster, "sync").Inc()
		w.log.Warn("sync failed", "group", res.Group, "err", err.Error())
	}
	return again
}

// isUp reports whether the watched cluster name is up.
func (w *Watcher) isUp(name string) bool {
	for _, c := range w.clusters {
		if c.Name == name {
			return c.up
		}
	}
	return false
}
