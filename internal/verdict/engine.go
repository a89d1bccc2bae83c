package verdict

import (
	"cmp"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/match"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/output"
)

// This file is the one row engine of check and watch: row keys, cells, statuses and the
// exit decision. check calls it once over everything it read; watch calls it for the groups
// of each cycle. Neither builds a cell or decides a status anywhere else, so the two cannot
// disagree on the same state (see the test TestCheckAndWatchAgree in package watch).

// Key is one row: a group's committed position on a topic partition. Topic is KoP's full
// name.
type Key struct {
	Group, Topic string
	Partition    int32
}

// Compare orders keys by group, topic and partition (the order of the rows).
func (k Key) Compare(o Key) int {
	return cmp.Or(strings.Compare(k.Group, o.Group), strings.Compare(k.Topic, o.Topic), cmp.Compare(k.Partition, o.Partition))
}

// Names interns group and topic names: rows held share one copy of each.
type Names map[string]string

// Intern returns the one copy of s.
func (n Names) Intern(s string) string {
	if v, ok := n[s]; ok {
		return v
	}
	s = strings.Clone(s)
	n[s] = s
	return s
}

// KeySet collects the keys of the rows: the union of what every cluster holds or serves.
// A key is held as two name ids and a partition (12 bytes, not the 40 of a Key), and each
// group and topic name once (in Names when set, which several sets may share).
type KeySet struct {
	Names Names
	ids   map[string]uint32
	names []string // by id
	keys  []keyID
}

// keyID is a Key as ids into the set's names.
type keyID struct {
	group, topic uint32
	partition    int32
}

func (ks *KeySet) id(s string) uint32 {
	if id, ok := ks.ids[s]; ok {
		return id
	}
	if ks.ids == nil {
		ks.ids = map[string]uint32{}
	}
	if ks.Names != nil {
		s = ks.Names.Intern(s)
	} else {
		s = strings.Clone(s)
	}
	id := uint32(len(ks.names))
	ks.ids[s] = id
	ks.names = append(ks.names, s)
	return id
}

// Grow makes room for n more keys.
func (ks *KeySet) Grow(n int) { ks.keys = slices.Grow(ks.keys, n) }

// AddPersisted adds the key of a persisted (or pending) commit of a cluster whose Kafka
// namespace is ns.
func (ks *KeySet) AddPersisted(co loader.CommittedOffset, ns string) {
	ks.Add(co.Group, loader.NormalizeTopic(co.Topic, ns), co.Partition)
}

// AddCached adds the keys KoP answered for group on a cluster whose Kafka namespace is ns.
func (ks *KeySet) AddCached(group string, f GroupFetch, ns string) {
	for t, ps := range f.Offsets {
		full := loader.NormalizeTopic(t, ns)
		for p := range ps {
			ks.Add(group, full, p)
		}
	}
}

// Add adds one key (topic: full name).
func (ks *KeySet) Add(group, topic string, partition int32) {
	ks.keys = append(ks.keys, keyID{ks.id(group), ks.id(topic), partition})
}

// Sorted returns the distinct keys whose topic matches topicGlobs (the short name in
// displayNS, or the full name), in row order. The set is empty afterwards.
func (ks *KeySet) Sorted(topicGlobs []string, displayNS string) Keys {
	keys, names := ks.keys, ks.names
	*ks = KeySet{Names: ks.Names}
	// Each name's place in sorted order, and whether it is a matching topic: asked once
	// per name, not once per key.
	byName := make([]uint32, len(names))
	for i := range byName {
		byName[i] = uint32(i)
	}
	slices.SortFunc(byName, func(a, b uint32) int { return strings.Compare(names[a], names[b]) })
	rank := make([]uint32, len(names))
	for r, id := range byName {
		rank[id] = uint32(r)
	}
	matched := make([]int8, len(names)) // 0 unknown, 1 yes, -1 no
	keys = slices.DeleteFunc(keys, func(k keyID) bool {
		if matched[k.topic] == 0 {
			matched[k.topic] = -1
			if t := names[k.topic]; match.Any(topicGlobs, loader.ShortName(t, displayNS), t) {
				matched[k.topic] = 1
			}
		}
		return matched[k.topic] < 0
	})
	slices.SortFunc(keys, func(a, b keyID) int {
		return cmp.Or(cmp.Compare(rank[a.group], rank[b.group]), cmp.Compare(rank[a.topic], rank[b.topic]), cmp.Compare(a.partition, b.partition))
	})
	return Keys{names: names, ids: slices.Clip(slices.Compact(keys))}
}

// Keys are row keys in row order, held compact (see KeySet).
type Keys struct {
	names []string
	ids   []keyID
}

// Len is the number of keys.
func (ks Keys) Len() int { return len(ks.ids) }

// At is the i-th key.
func (ks Keys) At(i int) Key {
	id := ks.ids[i]
	return Key{Group: ks.names[id.group], Topic: ks.names[id.topic], Partition: id.partition}
}

// All yields the keys in order.
func (ks Keys) All() iter.Seq[Key] {
	return func(yield func(Key) bool) {
		for i := range ks.ids {
			if !yield(ks.At(i)) {
				return
			}
		}
	}
}

// Side is one cluster as the engine sees it: what its offsets topic holds, what KoP served,
// the log-end offsets and the replication toward its peers. check fills one per cluster and
// run, watch one per cluster and cycle.
type Side struct {
	Name      string
	Namespace string // KoP's kafkaTenant/kafkaNamespace
	// Partitions is the offsets topic's partition count (0: unknown).
	Partitions int32
	// Persisted returns the loader view holding group, or nil and why the persisted side of
	// this cluster is unknown (the cell's error).
	Persisted func(group string) (*loader.PersistedOffsets, string)
	// Cached returns KoP's answer for group; false: KoP was not asked (nil: never).
	Cached func(group string) (GroupFetch, bool)
	// CacheErr: the whole cached side failed (KoP unreachable).
	CacheErr error
	// EndOffsets are the log-end offsets by full topic name and partition.
	EndOffsets map[string]map[int32]int64
	// Outbound is this cluster's replication by offsets partition toward each peer (nil:
	// unknown).
	Outbound map[int32]map[string]Inbound
}

// Judge builds rows from the sides and decides their statuses.
type Judge struct {
	// Source is the authoritative cluster ("" compares every cluster with the highest value).
	Source string
	// Now and ExpiryWarning drive the expiry rules (expired, expiring, expiresInSeconds).
	Now           time.Time
	ExpiryWarning time.Duration
	// Translate, when set, adds a cell's alignment before the row is classified (check).
	Translate func(side int, k Key, cell *Cell, ob *ClusterObservation)
	// DisplayNamespace is the namespace rows name their topic in (the first cluster's).
	DisplayNamespace string
	// SyncGrace: see DriftInput.SyncGrace (0: DefaultSyncGrace).
	SyncGrace time.Duration

	obs     []ClusterObservation // scratch of Row
	pending map[*loader.PersistedOffsets]bool
}

// OffsetsPartition is the offsets partition of group on the first side that knows its
// partition count (-1: none does).
func OffsetsPartition(group string, sides []Side) int32 {
	for _, s := range sides {
		if s.Partitions > 0 {
			return loader.PartitionFor(group, s.Partitions)
		}
	}
	return -1
}

// Row builds and classifies the row of k across sides. A Judge builds one row at a time.
func (j *Judge) Row(k Key, sides []Side) Row {
	r := Row{Group: k.Group, Topic: loader.ShortName(k.Topic, j.DisplayNamespace), Partition: k.Partition,
		OffsetsPartition: OffsetsPartition(k.Group, sides), fullTopic: k.Topic, Cells: make([]Cell, len(sides))}
	j.obs = slices.Grow(j.obs[:0], len(sides))[:len(sides)]
	for i := range sides {
		r.Cells[i], j.obs[i] = j.observe(sides, i, k)
		if j.Translate != nil {
			j.Translate(i, k, &r.Cells[i], &j.obs[i])
		}
	}
	d := ClassifyDrift(DriftInput{Clusters: j.obs, Source: j.Source, SyncGrace: j.SyncGrace.Milliseconds()})
	r.Status = d.Status
	home := homeOf(j.obs, d.Home)
	for i := range r.Cells {
		cell := &r.Cells[i]
		cell.Status = d.Clusters[i]
		cell.Follow = followOf(j.obs[i], home)
		cell.Detail = detail(&r, cell, j.obs[i], home)
		if at := j.obs[i].ExpireAt; at > 0 {
			in := float64(at-j.obs[i].Now) / 1000
			cell.ExpiresIn = &in
		}
	}
	return r
}

// observe builds the cell and the classifier input of row k on sides[i].
func (j *Judge) observe(sides []Side, i int, k Key) (Cell, ClusterObservation) {
	s := &sides[i]
	ob := ClusterObservation{Cluster: s.Name, Cached: CachedOffsets{State: CacheNotChecked},
		Now: j.Now.UnixMilli(), ExpiryWarning: j.ExpiryWarning.Milliseconds()}
	cell := Cell{Cluster: s.Name}
	if view, why := s.Persisted(k.Group); view == nil {
		ob.Unreachable = true
		cell.Error = why
	} else {
		j.persistedCell(view, s, k, &cell, &ob)
	}
	cachedCell(s, k, &cell, &ob)
	if leo, ok := s.EndOffsets[k.Topic][k.Partition]; ok {
		cell.LogEndOffset = &leo
		if committed := cmp.Or(cell.Cached, cell.Persisted); committed != nil {
			lag := max(leo-*committed, 0)
			cell.Lag = &lag
		}
	}
	ob.Inbound = InboundFor(sides, s.Name, k.Group)
	return cell, ob
}

// InboundFor is the replication of group's offsets partition toward cluster: the peers'
// replicators, by peer.
func InboundFor(sides []Side, cluster, group string) map[string]Inbound {
	var in map[string]Inbound // nil until a peer has one: most rows of one cluster have none
	for _, peer := range sides {
		if peer.Name == cluster || peer.Partitions <= 0 {
			continue
		}
		if st, ok := peer.Outbound[loader.PartitionFor(group, peer.Partitions)][cluster]; ok {
			if in == nil {
				in = map[string]Inbound{}
			}
			in[peer.Name] = st
		}
	}
	return in
}

// persistedCell is what the loader would load, a transactional commit it leaves pending, a
// partition it cannot load, and the expiry.
func (j *Judge) persistedCell(view *loader.PersistedOffsets, s *Side, k Key, cell *Cell, ob *ClusterObservation) {
	co, ok := view.Lookup(k.Group, k.Topic, k.Partition)
	if ok {
		v := co.Offset
		cell.Persisted, ob.Persisted = &v, &v
		cell.CommitTimestamp = output.NewTime(co.CommitTimestamp.Time())
		if co.ExpireTimestamp != nil {
			ob.ExpireAt = int64(*co.ExpireTimestamp)
			cell.ExpireTimestamp = output.NewTime(time.UnixMilli(ob.ExpireAt))
		}
		ob.Newer = co.Newer
	}
	if pc, pok := j.pendingOffset(view, k); pok && (!ok || pc.Offset != co.Offset) {
		pv, loaded := pc.Offset, cell.Persisted
		ob.Pending, cell.Persisted = &pv, &pv
		cell.CommitTimestamp = output.NewTime(pc.CommitTimestamp.Time())
		cell.Predicted = &Prediction{Offset: loaded, Reason: fmt.Sprintf("a transactional commit (producer %d) the loader leaves pending: its COMMIT marker is invisible to readers", pc.Producer())}
	}
	if s.Partitions > 0 {
		if f, failed := view.LoadFailure(loader.PartitionFor(k.Group, s.Partitions)); failed {
			ob.LoadFailure = f.String()
			cell.Predicted = &Prediction{Reason: f.String()}
		}
	}
}

// pendingOffset is view.PendingOffset, asked only of a view that holds pending commits: the
// first question builds an index of every key of the view, which a view without any does
// not need.
func (j *Judge) pendingOffset(view *loader.PersistedOffsets, k Key) (loader.CommittedOffset, bool) {
	has, ok := j.pending[view]
	if !ok {
		if j.pending == nil {
			j.pending = map[*loader.PersistedOffsets]bool{}
		}
		has = len(view.Pending()) > 0
		j.pending[view] = has
	}
	if !has {
		return loader.CommittedOffset{}, false
	}
	return view.PendingOffset(k.Group, k.Topic, k.Partition)
}

// cachedCell is what KoP answered.
func cachedCell(s *Side, k Key, cell *Cell, ob *ClusterObservation) {
	switch {
	case s.CacheErr != nil:
		ob.Cached.State = CacheError
		if cell.Error == "" {
			cell.Error = fmt.Sprintf("KoP unreachable: %v", s.CacheErr)
		}
		return
	case s.Cached == nil:
		return
	}
	f, asked := s.Cached(k.Group)
	switch {
	case !asked:
	case f.Unavailable:
		ob.Cached.State = CacheCoordinatorUnavailable
		cell.Error = fmt.Sprintf("KoP: %v", f.Err)
	case f.Err != nil:
		ob.Cached.State = CacheError
		cell.Error = fmt.Sprintf("KoP: %v", f.Err)
	default:
		ob.Cached.State = CacheAnswered
		if v, ok := CachedOffset(f, s.Namespace, k); ok {
			cell.Cached, ob.Cached.Offset = &v, &v
		}
	}
}

// CachedOffset is KoP's answer for k in f (topics as KoP named them, in namespace ns).
func CachedOffset(f GroupFetch, ns string, k Key) (int64, bool) {
	for t, ps := range f.Offsets {
		if loader.NormalizeTopic(t, ns) != k.Topic {
			continue
		}
		if v, ok := ps[k.Partition]; ok {
			return v, true
		}
	}
	return 0, false
}

// detail explains the statuses whose fix is not a reload.
func detail(r *Row, c *Cell, ob ClusterObservation, home *ClusterObservation) string {
	switch c.Status {
	case StatusAhead, StatusSyncLag, StatusOverwritten:
		return followDetail(r, c, ob, home)
	case StatusUnloadable:
		return ob.LoadFailure
	case StatusMisaligned:
		return c.Alignment + "; a reload would serve the untranslated number, do not reload; fix: " + align.FailoverCommand(r.Group, r.Topic, c.Origin, c.Cluster)
	case StatusCacheAhead:
		if ob.Pending != nil && ob.Cached.Offset != nil && *ob.Pending == *ob.Cached.Offset {
			return "KoP serves a transactional commit that its loader cannot apply (the COMMIT marker is a Pulsar marker entry no reader sees): right now, lost at the next load; do not reload"
		}
		return "KoP serves a newer offset than its loader reads from the topic (a tombstone, compaction, or a commit after this check read the topic): a reload would move it back"
	case StatusExpired:
		return "past its expireTimestamp: KoP drops it from its cache within 10 minutes and writes a tombstone that replicates; commit again to keep it"
	}
	return ""
}

// ExitCode is the exit decision of cli.md over a set of rows (their summary by status):
// Unreachable when a cluster or endpoint could not be reached (unreachable, or a row in
// error); else Found when a status failOn names was found (nil: DefaultFailOn), or an
// offsets partition is unserved and failOn names coordinator_unavailable; else OK. check's exit code and watch's
// kop_offsets_check_exit_code are this function of the same rows.
func ExitCode(summary map[string]int, unreachable, unserved bool, failOn []Status) outcome.Outcome {
	if unreachable || summary[string(StatusError)] > 0 {
		return outcome.Unreachable
	}
	if failOn == nil {
		failOn = DefaultFailOn()
	}
	if unserved && slices.Contains(failOn, StatusCoordinatorUnavailable) {
		return outcome.Found // groups of them can neither join nor commit
	}
	for _, st := range failOn {
		if summary[string(st)] > 0 {
			return outcome.Found
		}
	}
	return outcome.OK
}

// DefaultFailOn is every status but ok and expiring (a warning: name it in --fail-on to
// fail on it).
func DefaultFailOn() []Status {
	return slices.DeleteFunc(slices.Clone(Statuses), func(s Status) bool {
		return s == StatusOK || s == StatusExpiring
	})
}
