package check

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/offsets"
	"github.com/kop-offsets/kop-offsets/internal/output"
)

// Exit codes of a Report (cli.md).
const (
	ExitOK          = 0
	ExitDrift       = 1
	ExitUnreachable = 3
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
	FailOn []offsets.Status
	// Concurrency bounds the offsets partitions replayed at once per cluster (default 4).
	Concurrency int
	// ExpiryWarning is the window in which an offset close to its expireTimestamp is
	// reported expiring (0: DefaultExpiryWarning; negative: never).
	ExpiryWarning time.Duration
	// Now is the time the expiry rules compare with (zero: time.Now()).
	Now time.Time
}

// DefaultExpiryWarning is the window of the expiring status: a day before KoP expires an
// offset that has not been committed again (KoP's default retention is 3 days).
const DefaultExpiryWarning = 24 * time.Hour

// Report is the document `check -o json` prints (cli.md: "A check row").
type Report struct {
	SchemaVersion int            `json:"schemaVersion"`
	Clusters      []string       `json:"clusters"`
	Source        *string        `json:"source"`
	Rows          []Row          `json:"rows"`
	Errors        []ClusterError `json:"errors,omitempty"`
	// Unserved are the offsets partitions KoP does not serve on a cluster (every group of
	// them gets NOT_COORDINATOR or "loading" for the whole --coordinator-wait), apart from
	// the rows they leave coordinator_unavailable.
	Unserved []UnservedPartition `json:"unserved,omitempty"`
	Warnings []string            `json:"warnings,omitempty"`
	Summary  map[string]int      `json:"summary"`
	ExitCode int                 `json:"exitCode"`
}

// Row is one group/topic/partition.
type Row struct {
	Group            string          `json:"group"`
	Topic            string          `json:"topic"`
	Partition        int32           `json:"partition"`
	OffsetsPartition int32           `json:"offsetsPartition"`
	Status           offsets.Status  `json:"status"`
	Clusters         map[string]Cell `json:"clusters"`

	fullTopic string
}

// UnservedPartition is an offsets partition KoP does not serve on one cluster.
type UnservedPartition struct {
	Cluster          string `json:"cluster"`
	OffsetsPartition int32  `json:"offsetsPartition"`
	// Answer is what KoP kept answering for a probe group of the partition.
	Answer string `json:"answer"`
	// Owner is the broker that owns the partition's bundle (none: no broker owns it; the
	// next lookup assigns it), when it could be read.
	Owner string `json:"owner,omitempty"`
	Fix   string `json:"fix"`
}

// Cell is one row on one cluster.
type Cell struct {
	Cached *int64 `json:"cached"`
	// Persisted is what the offsets topic holds: the loader's value, or a newer
	// transactional commit whose COMMIT marker the loader cannot see.
	Persisted *int64 `json:"persisted"`
	// Predicted is what KoP would serve after a load, present only where it differs from
	// Persisted.
	Predicted       *Prediction    `json:"predicted,omitempty"`
	CommitTimestamp *output.Time   `json:"commitTimestamp"`
	ExpireTimestamp *output.Time   `json:"expireTimestamp,omitempty"`
	ExpiresIn       *float64       `json:"expiresInSeconds,omitempty"` // negative: expired
	LogEndOffset    *int64         `json:"logEndOffset"`
	Lag             *int64         `json:"lag"`
	Status          offsets.Status `json:"status"`
	Error           string         `json:"error,omitempty"`
	// Detail says why for unloadable, misaligned, cache_ahead and expired.
	Detail string `json:"detail,omitempty"`
	// Origin is the cluster the persisted commit was replicated from (absent: written on
	// this cluster): its offset counts in Origin's numbering of the topic.
	Origin string `json:"origin,omitempty"`
	// Translated is the persisted offset in this cluster's numbering (the first message the
	// group has not consumed on Origin), present when Origin is set and alignment is known.
	Translated *int64 `json:"translated,omitempty"`
	// Alignment explains Translated, or why alignment is unknown.
	Alignment string `json:"alignment,omitempty"`
}

// Prediction is what KoP's loader would serve after a load of the row's offsets partition.
type Prediction struct {
	Offset *int64 `json:"offset"` // null: nothing
	Reason string `json:"reason"`
}

// IsGlob reports whether a --group/--topic value is a pattern rather than a name.
func IsGlob(s string) bool { return strings.ContainsAny(s, `*?[\`) }

// MatchAny reports whether any name matches any glob (path.Match); no globs match all.
// check, repair and watch scope groups and topics with it.
func MatchAny(globs []string, names ...string) bool {
	if len(globs) == 0 {
		return true
	}
	for _, g := range globs {
		for _, n := range names {
			if ok, _ := path.Match(g, n); ok {
				return true
			}
		}
	}
	return false
}

// literalGroups returns the group filter when it names groups only (no glob), else nil.
func literalGroups(globs []string) []string {
	if len(globs) == 0 {
		return nil
	}
	for _, g := range globs {
		if IsGlob(g) {
			return nil
		}
	}
	return slices.Compact(slices.Sorted(slices.Values(globs)))
}

// clusterState is what was read from one cluster.
type clusterState struct {
	c          Cluster
	partitions int32
	persisted  *offsets.PersistedOffsets
	pErr       error // persisted side failed: the cluster is unreachable for this check
	listed     []ListedGroup
	cached     map[string]GroupFetch
	cacheErr   error // the whole cached side failed
	unserved   []UnservedPartition
	leo        map[string]map[int32]int64
	repl       map[int32]map[string]offsets.Inbound
}

type rowKey struct {
	group, topic string // topic: full name
	partition    int32
}

// Run checks clusters. Errors of single clusters are in the report (Errors, cells marked
// error, ExitCode 3); Run itself fails only on bad options.
func Run(ctx context.Context, clusters []Cluster, o Options) (*Report, error) {
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
	rep := &Report{SchemaVersion: 1, Clusters: names, Rows: []Row{}, Summary: map[string]int{}}
	if o.Source != "" {
		rep.Source = &o.Source
	}
	states := make([]*clusterState, len(clusters))
	for i, c := range clusters {
		states[i] = &clusterState{c: c}
	}

	// 1. Persisted side, every cluster in parallel.
	parallel(states, func(s *clusterState) { s.readPersisted(ctx, o) })

	// 2. The groups to look at: persisted (filtered), named literally, and listed by KoP.
	groupSet := map[string]bool{}
	for _, g := range literalGroups(o.Groups) {
		groupSet[g] = true
	}
	for _, s := range states {
		if s.persisted == nil {
			continue
		}
		for _, g := range s.persisted.Groups() {
			if MatchAny(o.Groups, g.Group) {
				groupSet[g.Group] = true
			}
		}
	}
	// 3. Cached side.
	parallel(states, func(s *clusterState) {
		if s.c.Fetcher == nil {
			return
		}
		listed, err := s.c.Fetcher.ListGroups(ctx)
		if err != nil {
			s.cacheErr = err
			return
		}
		s.listed = listed
	})
	for _, s := range states {
		for _, g := range s.listed {
			if MatchAny(o.Groups, g.Group) {
				groupSet[g.Group] = true
			}
		}
	}
	groups := slices.Sorted(func(yield func(string) bool) {
		for g := range groupSet {
			if !yield(g) {
				return
			}
		}
	})
	parallel(states, func(s *clusterState) {
		if s.c.Fetcher == nil || s.cacheErr != nil || (len(groups) == 0 && s.partitions <= 0) {
			return
		}
		// A probe group per offsets partition asked with the others: a partition KoP does
		// not serve is named even when none of its groups is selected or committed.
		probes := s.probeGroups(o)
		s.cached = s.c.Fetcher.FetchOffsets(ctx, append(slices.Clone(groups), probes...))
		for _, pg := range probes {
			if f := s.cached[pg]; f.Unavailable {
				p := offsets.PartitionFor(pg, s.partitions)
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
				s.unserved = append(s.unserved, u)
			}
			delete(s.cached, pg)
		}
	})

	// 4. Rows: the union of what every cluster holds or serves.
	keys := map[rowKey]bool{}
	for _, s := range states {
		if s.persisted != nil {
			// One walk over the offsets: a lookup per group would walk them once per group.
			for _, co := range s.persisted.Offsets() {
				if groupSet[co.Group] {
					keys[rowKey{co.Group, offsets.NormalizeTopic(co.Topic, s.c.KafkaNamespace), co.Partition}] = true
				}
			}
			for _, co := range s.persisted.Pending() {
				if groupSet[co.Group] {
					keys[rowKey{co.Group, offsets.NormalizeTopic(co.Topic, s.c.KafkaNamespace), co.Partition}] = true
				}
			}
		}
		for g, f := range s.cached {
			for t, ps := range f.Offsets {
				for p := range ps {
					keys[rowKey{g, offsets.NormalizeTopic(t, s.c.KafkaNamespace), p}] = true
				}
			}
		}
	}
	displayNS := ""
	if len(clusters) > 0 {
		displayNS = clusters[0].KafkaNamespace
	}
	var rows []Row
	for k := range keys {
		short := offsets.ShortName(k.topic, displayNS)
		if !MatchAny(o.Topics, short, k.topic) {
			continue
		}
		rows = append(rows, Row{Group: k.group, Topic: short, Partition: k.partition, fullTopic: k.topic, Clusters: map[string]Cell{}})
	}
	slices.SortFunc(rows, func(a, b Row) int {
		return cmp.Or(strings.Compare(a.Group, b.Group), strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})

	// Offsets partitions: by the first cluster that knows its partition count.
	var nParts []int32
	for _, s := range states {
		if s.partitions > 0 {
			nParts = append(nParts, s.partitions)
		}
	}
	if len(slices.Compact(slices.Clone(nParts))) > 1 {
		var parts []string
		for _, s := range states {
			parts = append(parts, fmt.Sprintf("%s=%d", s.c.Name, s.partitions))
		}
		rep.Warnings = append(rep.Warnings, "the offsets topics have different partition counts ("+strings.Join(parts, ", ")+
			"): a group lives in different offsets partitions; offsetsPartition is the first cluster's")
	}
	partsNeeded := map[int32]bool{}
	for i := range rows {
		rows[i].OffsetsPartition = -1
		if len(nParts) > 0 {
			rows[i].OffsetsPartition = offsets.PartitionFor(rows[i].Group, nParts[0])
		}
		for _, s := range states {
			if s.partitions > 0 {
				partsNeeded[offsets.PartitionFor(rows[i].Group, s.partitions)] = true
			}
		}
	}

	// 5. Replication stats and log-end offsets, per cluster in parallel.
	topicSet := map[string]bool{}
	for _, r := range rows {
		topicSet[r.fullTopic] = true
	}
	parallel(states, func(s *clusterState) {
		if s.pErr == nil && s.c.Replication != nil && len(clusters) > 1 {
			s.repl = map[int32]map[string]offsets.Inbound{}
			for _, p := range slices.Sorted(mapKeys(partsNeeded)) {
				st, err := s.c.Replication.OutboundReplication(ctx, p)
				if err != nil {
					rep.addErr(clusterErr(s.c.Name, "admin", err))
					break
				}
				s.repl[p] = st
			}
		}
		if s.c.Fetcher != nil && s.cacheErr == nil && len(topicSet) > 0 {
			var topics []string
			for t := range topicSet {
				topics = append(topics, offsets.ShortName(t, s.c.KafkaNamespace))
			}
			slices.Sort(topics)
			leo, err := s.c.Fetcher.EndOffsets(ctx, topics)
			if err != nil {
				rep.addWarning(fmt.Sprintf("cluster %s: log-end offsets: %v", s.c.Name, err))
			}
			s.leo = map[string]map[int32]int64{}
			for t, ps := range leo {
				s.leo[offsets.NormalizeTopic(t, s.c.KafkaNamespace)] = ps
			}
		}
	})

	// 6. Alignment: every persisted value replicated from another cluster, translated.
	var aligned map[align.Request]align.Result
	byName := make(map[string]*clusterState, len(states))
	for _, s := range states {
		byName[s.c.Name] = s
	}
	if !o.SkipAlignment && len(states) > 1 {
		aligned = alignRows(ctx, rows, states, byName, o.AlignmentMaxMessages)
	}

	// 7. Cells, classification.
	for i := range rows {
		r := &rows[i]
		obs := make([]offsets.ClusterObservation, len(states))
		for j, s := range states {
			cell, ob := s.observe(r, states)
			ob.Now = o.Now.UnixMilli()
			ob.ExpiryWarning = o.ExpiryWarning.Milliseconds()
			if aligned != nil {
				s.translate(r, &cell, &ob, states, byName, aligned)
			}
			r.Clusters[s.c.Name] = cell
			obs[j] = ob
		}
		d := offsets.ClassifyDrift(offsets.DriftInput{Clusters: obs, Source: o.Source})
		r.Status = d.Status
		for j, s := range states {
			cell := r.Clusters[s.c.Name]
			cell.Status = d.Clusters[s.c.Name]
			cell.Detail = detail(r, s.c.Name, cell, obs[j])
			if obs[j].ExpireAt > 0 {
				in := float64(obs[j].ExpireAt-obs[j].Now) / 1000
				cell.ExpiresIn = &in
			}
			r.Clusters[s.c.Name] = cell
		}
		rep.Summary[string(r.Status)]++
	}
	rep.Rows = append(rep.Rows, rows...)

	for _, s := range states {
		if s.persisted != nil {
			for _, f := range s.persisted.LoadFailures() {
				rep.addWarning(fmt.Sprintf("cluster %s: %s: after any load KoP serves no group of that partition; remove the record (see docs/kop-facts.md) before reloading", s.c.Name, f))
			}
			if n := s.persisted.Counts.BadCRC; n > 0 {
				rep.addWarning(fmt.Sprintf("cluster %s: %d record batches with a bad CRC in the offsets topic: KoP loads them without checking (so does the prediction)", s.c.Name, n))
			}
		}
		if s.pErr != nil {
			rep.addErr(clusterErr(s.c.Name, "pulsar", s.pErr))
		}
		if s.cacheErr != nil {
			rep.addErr(clusterErr(s.c.Name, "kafka", s.cacheErr))
		}
		rep.Unserved = append(rep.Unserved, s.unserved...)
	}
	slices.SortFunc(rep.Unserved, func(a, b UnservedPartition) int {
		return cmp.Or(strings.Compare(a.Cluster, b.Cluster), cmp.Compare(a.OffsetsPartition, b.OffsetsPartition))
	})
	slices.SortFunc(rep.Errors, func(a, b ClusterError) int {
		return cmp.Or(strings.Compare(a.Cluster, b.Cluster), strings.Compare(a.Endpoint, b.Endpoint))
	})
	rep.ExitCode = exitCode(rep, o.FailOn)
	return rep, nil
}

func exitCode(rep *Report, failOn []offsets.Status) int {
	if len(rep.Errors) > 0 {
		return ExitUnreachable
	}
	for _, r := range rep.Rows {
		if r.Status == offsets.StatusError {
			return ExitUnreachable
		}
	}
	if failOn == nil {
		failOn = DefaultFailOn()
	}
	if len(rep.Unserved) > 0 && slices.Contains(failOn, offsets.StatusCoordinatorUnavailable) {
		return ExitDrift // groups of them can neither join nor commit
	}
	for _, r := range rep.Rows {
		if slices.Contains(failOn, r.Status) {
			return ExitDrift
		}
	}
	return ExitOK
}

// DefaultFailOn is every status but ok and expiring (a warning: name it in --fail-on to
// fail on it).
func DefaultFailOn() []offsets.Status {
	return slices.DeleteFunc(slices.Clone(offsets.Statuses), func(s offsets.Status) bool {
		return s == offsets.StatusOK || s == offsets.StatusExpiring
	})
}

// detail explains the statuses whose fix is not a reload.
func detail(r *Row, cluster string, c Cell, ob offsets.ClusterObservation) string {
	switch c.Status {
	case offsets.StatusUnloadable:
		return ob.LoadFailure
	case offsets.StatusMisaligned:
		return c.Alignment + "; a reload would serve the untranslated number, do not reload; fix: " + align.FailoverCommand(r.Group, r.Topic, c.Origin, cluster)
	case offsets.StatusCacheAhead:
		if ob.Pending != nil && ob.Cached.Offset != nil && *ob.Pending == *ob.Cached.Offset {
			return "KoP serves a transactional commit that its loader cannot apply (the COMMIT marker is a Pulsar marker entry no reader sees): right now, lost at the next load; do not reload"
		}
		return "KoP serves a newer offset than its loader reads from the topic (a tombstone, compaction, or a commit after this check read the topic): a reload would move it back"
	case offsets.StatusExpired:
		return "past its expireTimestamp: KoP drops it from its cache within 10 minutes and writes a tombstone that replicates; commit again to keep it"
	}
	return ""
}

var reportMu sync.Mutex

func (r *Report) addErr(e ClusterError) {
	reportMu.Lock()
	defer reportMu.Unlock()
	r.Errors = append(r.Errors, e)
}

func (r *Report) addWarning(w string) {
	reportMu.Lock()
	defer reportMu.Unlock()
	r.Warnings = append(r.Warnings, w)
	slices.Sort(r.Warnings)
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func parallel(states []*clusterState, fn func(*clusterState)) {
	var wg sync.WaitGroup
	for _, s := range states {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(s)
		}()
	}
	wg.Wait()
}

// probeGroups are the probe groups of the offsets partitions this check looks at: those of
// the literal groups, else every partition.
func (s *clusterState) probeGroups(o Options) []string {
	if s.partitions <= 0 {
		return nil
	}
	var parts []int32
	if lit := literalGroups(o.Groups); lit != nil {
		for _, g := range lit {
			parts = append(parts, offsets.PartitionFor(g, s.partitions))
		}
		slices.Sort(parts)
		parts = slices.Compact(parts)
	} else {
		for p := range s.partitions {
			parts = append(parts, p)
		}
	}
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = offsets.ProbeGroup(p, s.partitions)
	}
	return out
}

// readPersisted replays the offsets partitions that hold the selected groups.
func (s *clusterState) readPersisted(ctx context.Context, o Options) {
	n, err := s.c.Reader.Partitions(ctx)
	if err != nil {
		s.pErr = err
		return
	}
	s.partitions = n
	var parts []int32
	if lit := literalGroups(o.Groups); lit != nil {
		set := map[int32]bool{}
		for _, g := range lit {
			set[offsets.PartitionFor(g, n)] = true
		}
		parts = slices.Sorted(mapKeys(set))
	} else {
		for p := range n {
			parts = append(parts, p)
		}
	}
	s.persisted, s.pErr = ReplayPartitions(ctx, s.c.Reader, parts, o.Concurrency)
}

// ReplayPartitions replays partitions of reader, at most concurrency at once, and merges them.
func ReplayPartitions(ctx context.Context, reader offsets.OffsetTopicReader, parts []int32, concurrency int) (*offsets.PersistedOffsets, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]*offsets.PersistedOffsets, len(parts))
	errs := make([]error, len(parts))
	sem := make(chan struct{}, max(concurrency, 1))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i], errs[i] = offsets.ReplayPartition(ctx, reader, p, offsets.OrderingKoP)
			if errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	// The first failure cancelled the others: report it, not their cancellations.
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return offsets.Merge(results...), nil
}

// observe builds the cell and the classifier input of row r on this cluster.
func (s *clusterState) observe(r *Row, all []*clusterState) (Cell, offsets.ClusterObservation) {
	ob := offsets.ClusterObservation{Cluster: s.c.Name, Cached: offsets.CachedOffsets{State: offsets.CacheNotChecked}}
	var cell Cell
	if s.pErr != nil {
		ob.Unreachable = true
		cell.Error = fmt.Sprintf("offsets topic unreadable: %v", s.pErr)
	} else {
		co, ok := s.persisted.Lookup(r.Group, r.fullTopic, r.Partition)
		if ok {
			v := co.Offset
			cell.Persisted, ob.Persisted = &v, &v
			cell.CommitTimestamp = output.NewTime(time.UnixMilli(int64(co.CommitTimestamp)))
			if co.ExpireTimestamp != nil {
				ob.ExpireAt = int64(*co.ExpireTimestamp)
				cell.ExpireTimestamp = output.NewTime(time.UnixMilli(ob.ExpireAt))
			}
		}
		if pc, pok := s.persisted.PendingOffset(r.Group, r.fullTopic, r.Partition); pok && (!ok || pc.Offset != co.Offset) {
			pv, loaded := pc.Offset, cell.Persisted
			ob.Pending = &pv
			cell.Persisted = &pv
			cell.CommitTimestamp = output.NewTime(time.UnixMilli(int64(pc.CommitTimestamp)))
			cell.Predicted = &Prediction{Offset: loaded, Reason: fmt.Sprintf("a transactional commit (producer %d) the loader leaves pending: its COMMIT marker is invisible to readers", ptrOr(pc.ProducerID))}
		}
		if f, failed := s.persisted.LoadFailure(offsets.PartitionFor(r.Group, s.partitions)); failed && s.partitions > 0 {
			ob.LoadFailure = f.String()
			cell.Predicted = &Prediction{Reason: f.String()}
		}
	}
	switch {
	case s.c.Fetcher == nil:
	case s.cacheErr != nil:
		ob.Cached.State = offsets.CacheError
		if cell.Error == "" {
			cell.Error = fmt.Sprintf("KoP unreachable: %v", s.cacheErr)
		}
	default:
		f := s.cached[r.Group]
		switch {
		case f.Unavailable:
			ob.Cached.State = offsets.CacheCoordinatorUnavailable
			cell.Error = fmt.Sprintf("KoP: %v", f.Err)
		case f.Err != nil:
			ob.Cached.State = offsets.CacheError
			cell.Error = fmt.Sprintf("KoP: %v", f.Err)
		default:
			ob.Cached.State = offsets.CacheAnswered
			for t, ps := range f.Offsets {
				if offsets.NormalizeTopic(t, s.c.KafkaNamespace) != r.fullTopic {
					continue
				}
				if v, ok := ps[r.Partition]; ok {
					cell.Cached, ob.Cached.Offset = &v, &v
				}
			}
		}
	}
	if leo, ok := s.leo[r.fullTopic][r.Partition]; ok {
		cell.LogEndOffset = &leo
		committed := cell.Cached
		if committed == nil {
			committed = cell.Persisted
		}
		if committed != nil {
			lag := max(leo-*committed, 0)
			cell.Lag = &lag
		}
	}
	// Inbound replication: the other clusters' replicators of this group's offsets partition
	// toward this cluster.
	ob.Inbound = map[string]offsets.Inbound{}
	for _, peer := range all {
		if peer == s || peer.partitions <= 0 {
			continue
		}
		if in, ok := peer.repl[offsets.PartitionFor(r.Group, peer.partitions)][s.c.Name]; ok {
			ob.Inbound[peer.c.Name] = in
		}
	}
	return cell, ob
}

func ptrOr(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}
