package survey

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/explain"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/match"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// Options select and tune a check.
type Options struct {
	Groups []string // globs (path.Match); none: every group
	Topics []string // globs matched against the short and the full name; none: every topic
	// Source is the authoritative cluster; "" compares all clusters with each other.
	Source string
	// SkipAlignment leaves out the translation of offsets replicated from another cluster
	// (package align): misaligned is then never found.
	SkipAlignment bool
	// AlignmentMaxMessages bounds the messages read per copy of a topic partition
	// (0: align.DefaultMaxMessages).
	AlignmentMaxMessages int64
	// FailOn lists the statuses that make the exit code 1 (nil: every status but ok).
	FailOn []verdict.Status
	// Concurrency bounds the offsets partitions replayed at once per cluster (default 4).
	Concurrency int
	// ExpiryWarning is the window in which an offset close to its expireTimestamp is
	// reported expiring (0: DefaultExpiryWarning; negative: never).
	ExpiryWarning time.Duration
	// Now is the time the expiry rules compare with (zero: time.Now()).
	Now time.Time
	// SyncGrace is how long a cluster may stay behind the group's newest own commit in a
	// sync or kept deployment before it is sync_lag (0: verdict.DefaultSyncGrace).
	SyncGrace time.Duration
}

// DefaultExpiryWarning is the window of the expiring status: a day before KoP expires an
// offset that has not been committed again (KoP's default retention is 3 days).
const DefaultExpiryWarning = 24 * time.Hour

// literalGroups returns the group filter when it names groups only (no glob), else nil.
func literalGroups(globs []string) []string {
	if lit := match.Literals(globs); len(lit) > 0 {
		return slices.Compact(slices.Sorted(slices.Values(lit)))
	}
	return nil
}

// clusterState is what was read from one cluster.
type clusterState struct {
	c          Cluster
	partitions int32
	persisted  []*loader.PersistedOffsets          // by offsets partition; nil: not replayed
	reread     map[string]*loader.PersistedOffsets // group -> its partition read after KoP answered (settle.go)
	settleWarn string                              // the second read failed (settle.go)
	pErr       error                               // persisted side failed: the cluster is unreachable for this check
	listed     []ListedGroup
	cached     map[string]verdict.GroupFetch
	cacheErr   error // the whole cached side failed
	listErr    error // some brokers did not list their groups (kop.PartialListError)
	unserved   []UnservedPartition
	leo        map[string]map[int32]int64
	repl       map[int32]map[string]verdict.Inbound
}

// Run checks clusters. Errors of single clusters are in the report (Errors, cells marked
// error, ExitCode 3); Run itself fails only on bad options.
func Run(ctx context.Context, clusters []Cluster, o Options) (*Report, error) {
	var rows []verdict.Row
	rep, err := Stream(ctx, clusters, o, func(r *verdict.Row) error {
		rows = append(rows, *r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	rep.Rows = append(rep.Rows, rows...)
	return rep, nil
}

// Stream is Run that hands every row, in order, to emit as soon as it is classified,
// without keeping it: the report it returns has no rows (but their summary and exit code).
// An error of emit ends the check and is returned.
func Stream(ctx context.Context, clusters []Cluster, o Options, emit func(*verdict.Row) error) (*Report, error) {
	ru, err := newRun(clusters, o)
	if err != nil {
		return nil, err
	}
	// 1. Persisted side, every cluster in parallel.
	parallel(ru.states, func(s *clusterState) { s.readPersisted(ctx, ru.o) })
	// 2. The groups to look at, and KoP's answers for them.
	ru.selectGroups(ctx)
	ru.fetchCached(ctx)
	ru.settleAhead(ctx) // groups that committed between the read and KoP's answer
	// 3. Rows: the union of what every cluster holds or serves.
	keys := ru.rowKeys()
	ru.warnPartitionCounts()
	// 4. Replication stats and log-end offsets, per cluster in parallel.
	ru.fetchStats(ctx, keys)
	// 5. Cells, classification (with alignment), one row at a time.
	judge := ru.judge(ctx, keys)
	sides := make([]verdict.Side, len(ru.states))
	for i, s := range ru.states {
		sides[i] = s.side()
	}
	rowed := map[string]bool{}
	for k := range keys.All() {
		r := judge.Row(k, sides)
		rowed[r.Group] = true
		ru.rep.Summary[string(r.Status)]++
		if err := emit(&r); err != nil {
			return nil, err
		}
	}
	ru.warnRowless(rowed)
	ru.finish()
	return ru.rep, nil
}

// run is one check in progress.
type run struct {
	o        Options
	states   []*clusterState
	rep      *Report
	groupSet map[string]bool
	groups   []string // groupSet, sorted
}

func newRun(clusters []Cluster, o Options) (*run, error) {
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.ExpiryWarning == 0 {
		o.ExpiryWarning = DefaultExpiryWarning
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	names := make([]string, len(clusters))
	for i, c := range clusters {
		names[i] = c.Name
	}
	if o.Source != "" && !slices.Contains(names, o.Source) {
		return nil, fmt.Errorf("source cluster %q is not among the checked clusters (%s)", o.Source, strings.Join(names, ", "))
	}
	ru := &run{o: o, rep: &Report{SchemaVersion: 1, Clusters: names, Rows: []verdict.Row{}, Summary: map[string]int{}}}
	if o.Source != "" {
		ru.rep.Source = &ru.o.Source
	}
	for _, c := range clusters {
		ru.states = append(ru.states, &clusterState{c: c})
	}
	return ru, nil
}

// selectGroups collects the groups to look at: named literally, persisted (filtered) and
// listed by KoP.
func (ru *run) selectGroups(ctx context.Context) {
	ru.groupSet = map[string]bool{}
	for _, g := range literalGroups(ru.o.Groups) {
		ru.groupSet[g] = true
	}
	for _, s := range ru.states {
		for _, v := range s.views() {
			for _, g := range v.Groups() {
				if match.Any(ru.o.Groups, g.Group) {
					ru.groupSet[g.Group] = true
				}
			}
		}
	}
	parallel(ru.states, func(s *clusterState) {
		if s.c.Fetcher == nil || s.cacheErr != nil {
			return
		}
		s.listGroups(ctx)
	})
	for _, s := range ru.states {
		for _, g := range s.listed {
			if match.Any(ru.o.Groups, g.Group) {
				ru.groupSet[g.Group] = true
			}
		}
	}
	ru.groups = slices.Sorted(maps.Keys(ru.groupSet))
}

// listGroups asks KoP for its groups. When only some brokers answer, their groups and the
// named ones are still asked for offsets (only groups whose coordinator is down fail), and
// the run ends unreachable (exit 3) with the silent brokers named: one broker of three down
// does not blind the whole cluster's cached side.
func (s *clusterState) listGroups(ctx context.Context) {
	s.listed, s.cacheErr = s.c.Fetcher.ListGroups(ctx)
	var partial *kop.PartialListError
	if errors.As(s.cacheErr, &partial) {
		s.listErr, s.cacheErr = s.cacheErr, nil
	}
}

// fetchCached asks KoP on every cluster for the groups, and probes the offsets partitions.
func (ru *run) fetchCached(ctx context.Context) {
	parallel(ru.states, func(s *clusterState) {
		if s.c.Fetcher == nil || s.cacheErr != nil || (len(ru.groups) == 0 && s.partitions <= 0) {
			return
		}
		// A probe group per offsets partition asked with the others: a partition KoP does
		// not serve is named even when none of its groups is selected or committed.
		probes := s.probeGroups(ru.o)
		s.cached = kop.Collect(ctx, s.c.Fetcher, append(slices.Clone(ru.groups), probes...))
		for _, pg := range probes {
			if f := s.cached[pg]; f.Unavailable {
				s.unserved = append(s.unserved, s.unservedPartition(ctx, loader.PartitionFor(pg, s.partitions), f))
			}
			delete(s.cached, pg)
		}
	})
}

func (s *clusterState) unservedPartition(ctx context.Context, p int32, f verdict.GroupFetch) UnservedPartition {
	u := UnservedPartition{Cluster: s.c.Name, OffsetsPartition: p, Answer: fmt.Sprint(f.Err),
		Fix: fmt.Sprintf("kop-offsets reload --cluster %s --partition %d --yes (or kop-offsets repair --cluster %s)", s.c.Name, p, s.c.Name)}
	if s.c.Owner != nil {
		switch owner, err := s.c.Owner(ctx, p); {
		case err != nil:
			u.Owner = "unknown: " + err.Error()
		case owner == "":
			u.Owner = "none"
		default:
			u.Owner = owner
		}
	}
	return u
}

// rowKeys is the union of the selected groups' keys on every cluster, filtered by topic,
// sorted.
func (ru *run) rowKeys() verdict.Keys {
	var ks verdict.KeySet
	for _, s := range ru.states {
		for _, v := range s.views() {
			// One walk over the offsets: a lookup per group would walk them once per group.
			ks.Grow(v.Len())
			for co := range v.AllOffsets() {
				if ru.groupSet[co.Group] {
					ks.AddPersisted(co, s.c.KafkaNamespace)
				}
			}
			for _, co := range v.Pending() {
				if ru.groupSet[co.Group] {
					ks.AddPersisted(co, s.c.KafkaNamespace)
				}
			}
		}
		for g, f := range s.cached {
			ks.AddCached(g, f, s.c.KafkaNamespace)
		}
	}
	return ks.Sorted(ru.o.Topics, ru.displayNamespace())
}

func (ru *run) displayNamespace() string {
	if len(ru.states) > 0 {
		return ru.states[0].c.KafkaNamespace
	}
	return ""
}

// warnPartitionCounts warns when the offsets topics differ in partition count.
func (ru *run) warnPartitionCounts() {
	var nParts []int32
	for _, s := range ru.states {
		if s.partitions > 0 {
			nParts = append(nParts, s.partitions)
		}
	}
	if len(slices.Compact(nParts)) <= 1 {
		return
	}
	var parts []string
	for _, s := range ru.states {
		parts = append(parts, fmt.Sprintf("%s=%d", s.c.Name, s.partitions))
	}
	ru.rep.Warnings = append(ru.rep.Warnings, "the offsets topics have different partition counts ("+strings.Join(parts, ", ")+
		"): a group lives in different offsets partitions; offsetsPartition is the first cluster's")
}

// fetchStats reads the replication stats of the rows' offsets partitions and the log-end
// offsets of their topics, per cluster in parallel.
func (ru *run) fetchStats(ctx context.Context, keys verdict.Keys) {
	partsNeeded := map[int32]bool{}
	topicSet := map[string]bool{}
	prev := ""
	for k := range keys.All() {
		topicSet[k.Topic] = true
		if k.Group == prev {
			continue
		}
		prev = k.Group
		for _, s := range ru.states {
			if s.partitions > 0 {
				partsNeeded[loader.PartitionFor(k.Group, s.partitions)] = true
			}
		}
	}
	parallel(ru.states, func(s *clusterState) {
		if s.pErr == nil && s.c.Replication != nil && len(ru.states) > 1 {
			s.repl = map[int32]map[string]verdict.Inbound{}
			if _, err := ReadOutbound(ctx, s.c.Replication, partsNeeded, 0, s.repl); err != nil {
				ru.rep.addErr(clusterErr(s.c, explain.Admin, err))
			}
		}
		if s.c.Fetcher != nil && s.cacheErr == nil && len(topicSet) > 0 {
			s.leo = map[string]map[int32]int64{}
			if err := ReadEndOffsets(ctx, s.c.Fetcher, s.c.KafkaNamespace, maps.Keys(topicSet), s.leo); err != nil {
				ru.rep.addWarning(fmt.Sprintf("cluster %s: log-end offsets: %v", s.c.Name, err))
			}
		}
	})
}

// judge is the engine of this check, with the alignment of every persisted value replicated
// from another cluster translated up front.
func (ru *run) judge(ctx context.Context, keys verdict.Keys) *verdict.Judge {
	j := &verdict.Judge{Source: ru.o.Source, Now: ru.o.Now, ExpiryWarning: ru.o.ExpiryWarning, DisplayNamespace: ru.displayNamespace(), SyncGrace: ru.o.SyncGrace}
	if ru.o.SkipAlignment || len(ru.states) <= 1 {
		return j
	}
	byName := make(map[string]*clusterState, len(ru.states))
	for _, s := range ru.states {
		byName[s.c.Name] = s
	}
	aligned, tool := alignRows(ctx, keys, ru.states, byName, ru.o.AlignmentMaxMessages)
	j.Translate = func(i int, k verdict.Key, cell *verdict.Cell, ob *verdict.ClusterObservation) {
		ru.states[i].translate(k, cell, ob, ru.states, byName, aligned, tool[k])
	}
	return j
}

// side is this cluster as the engine sees it.
func (s *clusterState) side() verdict.Side {
	sd := verdict.Side{Name: s.c.Name, Namespace: s.c.KafkaNamespace, Partitions: s.partitions, CacheErr: s.cacheErr,
		EndOffsets: s.leo, Outbound: s.repl}
	if s.pErr != nil {
		ce := clusterErr(s.c, explain.Pulsar, s.pErr)
		why := fmt.Sprintf("offsets topic unreadable: %s %s", ce.Endpoint, ce.Cause)
		sd.Persisted = func(string) (*loader.PersistedOffsets, string) { return nil, why }
	} else {
		sd.Persisted = func(g string) (*loader.PersistedOffsets, string) { return s.view(g), "" }
	}
	if s.c.Fetcher != nil {
		sd.Cached = func(g string) (verdict.GroupFetch, bool) { return s.cached[g], true }
	}
	return sd
}

// warnRowless names the groups that have no row although KoP failed to answer for them: a
// row needs a topic partition, from the offsets topic or from KoP, and a group whose
// coordinator is down (a crashed broker still registered) on a cluster whose offsets topic
// is unreadable has neither. Seen on the lab with one of two KoP brokers killed: without
// this, the groups named on the command line vanished from the report.
func (ru *run) warnRowless(rowed map[string]bool) {
	for _, s := range ru.states {
		var names []string
		var first error
		for _, g := range ru.groups {
			f, ok := s.cached[g]
			if rowed[g] || !ok || (f.Err == nil && !f.Unavailable) {
				continue
			}
			names = append(names, g)
			if first == nil {
				first = f.Err
			}
		}
		if len(names) == 0 {
			continue
		}
		why := "KoP kept answering loading or not coordinator"
		if first != nil {
			why = first.Error()
		}
		ru.rep.addWarning(fmt.Sprintf("cluster %s: %d group(s) have no row: KoP could not be asked for their offsets (%s) and the offsets topic did not give them: %s",
			s.c.Name, len(names), why, strings.Join(names, ", ")))
	}
}

// finish adds what the clusters reported beside the rows, and the exit code.
func (ru *run) finish() {
	rep := ru.rep
	for _, s := range ru.states {
		var badCRC int64
		for _, v := range s.views() {
			for _, f := range v.LoadFailures() {
				rep.addWarning(fmt.Sprintf("cluster %s: %s: after any load KoP serves no group of that partition; remove the record (see docs/kop-facts.md) before reloading", s.c.Name, f))
			}
			badCRC += v.Counts.BadCRC
		}
		if badCRC > 0 {
			rep.addWarning(fmt.Sprintf("cluster %s: %d record batches with a bad CRC in the offsets topic: KoP loads them without checking (so does the prediction)", s.c.Name, badCRC))
		}
		if s.pErr != nil {
			rep.addErr(clusterErr(s.c, explain.Pulsar, s.pErr))
			if s.c.Fetcher == nil || s.cacheErr != nil {
				rep.Unread = append(rep.Unread, s.c.Name)
			}
		}
		for _, err := range []error{s.cacheErr, s.listErr} {
			if err != nil {
				rep.addErr(clusterErr(s.c, explain.Kafka, err))
			}
		}
		rep.Unserved = append(rep.Unserved, s.unserved...)
	}
	slices.SortFunc(rep.Unserved, func(a, b UnservedPartition) int {
		return cmp.Or(strings.Compare(a.Cluster, b.Cluster), cmp.Compare(a.OffsetsPartition, b.OffsetsPartition))
	})
	slices.SortFunc(rep.Errors, func(a, b ClusterError) int {
		return cmp.Or(strings.Compare(a.Cluster, b.Cluster), strings.Compare(a.Endpoint, b.Endpoint))
	})
	rep.ExitCode = verdict.ExitCode(rep.Summary, len(rep.Errors) > 0, len(rep.Unserved) > 0, ru.o.FailOn)
}

func parallel(states []*clusterState, fn func(*clusterState)) {
	var wg sync.WaitGroup
	for _, s := range states {
		wg.Go(func() { fn(s) })
	}
	wg.Wait()
}
