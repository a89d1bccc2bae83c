package loader

import (
	"cmp"
	"iter"
	"slices"
	"strings"
	"sync"
)

// PersistedOffsets is what an offsets topic holds after replaying it as KoP's loader does:
// offsets by group/topic/partition and groups, with counts of what was read. It views the
// replayed states of its partitions (no copy) and is read-only: several goroutines may read it.
type PersistedOffsets struct {
	Partitions []int32        // offsets partitions replayed, sorted
	Counts     Counts         // summed over Partitions
	Errors     []MessageError // the first undecodable messages (at most 100 per partition)

	parts        []*state // one per partition, sorted by partition
	loadFailures map[int32]LoadFailure

	// Indexes built on first use.
	indexOnce sync.Once
	byGroup   map[string]*state // when there are several parts
	pending   []CommittedOffset
	pendingBy map[pendingKey]CommittedOffset
}

type pendingKey struct {
	group, topic string
	partition    int32
}

func (p *PersistedOffsets) index() {
	p.indexOnce.Do(func() {
		for _, s := range p.parts {
			s.once.Do(func() {
				if s.viewed {
					s.buildIndex() // the Replayer goes on with its key map
				} else {
					s.freeze()
				}
			})
		}
		if len(p.parts) > 1 {
			n := 0
			for _, s := range p.parts {
				n += len(s.gnames)
			}
			p.byGroup = make(map[string]*state, n)
			for _, s := range p.parts {
				for name := range s.groups.ids {
					p.byGroup[name] = s
				}
			}
		}
		p.pendingBy = map[pendingKey]CommittedOffset{}
		for _, s := range p.parts {
			for pid, t := range s.pending {
				for _, e := range t {
					c := s.committed(&e.entry, e.metadata, pid)
					p.pending = append(p.pending, c)
					k := pendingKey{c.Group, c.Topic, c.Partition}
					// Of several open transactions on one key, the one KoP applied last is not
					// known; the highest offset is the one a regression check must protect.
					if o, ok := p.pendingBy[k]; !ok || c.Offset > o.Offset {
						p.pendingBy[k] = c
					}
				}
			}
		}
		sortOffsets(p.pending)
	})
}

// part returns the state that holds group, or nil.
func (p *PersistedOffsets) part(group string) *state {
	switch len(p.parts) {
	case 0:
		return nil
	case 1:
		return p.parts[0]
	}
	p.index()
	return p.byGroup[group]
}

// LoadFailure returns the first record of partition that KoP cannot parse, if any: KoP
// would then load nothing from that partition.
func (p *PersistedOffsets) LoadFailure(partition int32) (LoadFailure, bool) {
	f, ok := p.loadFailures[partition]
	return f, ok
}

// LoadFailures returns every partition's load failure, sorted by partition.
func (p *PersistedOffsets) LoadFailures() []LoadFailure {
	out := make([]LoadFailure, 0, len(p.loadFailures))
	for _, f := range p.loadFailures {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b LoadFailure) int { return cmp.Compare(a.Partition, b.Partition) })
	return out
}

// Predict returns what KoP's loader would serve for a group's topic partition after a
// load: the replayed offset, or nothing when its offsets partition cannot be loaded.
func (p *PersistedOffsets) Predict(group, topic string, partition int32) (CommittedOffset, bool) {
	c, ok := p.Lookup(group, topic, partition)
	if !ok {
		return c, false
	}
	if _, failed := p.loadFailures[c.OffsetsPartition]; failed {
		return CommittedOffset{}, false
	}
	return c, true
}

// PendingOffset returns the transactional offset the topic holds for a key without a
// COMMIT or ABORT its loader can see (the highest one when several transactions are open).
func (p *PersistedOffsets) PendingOffset(group, topic string, partition int32) (CommittedOffset, bool) {
	p.index()
	c, ok := p.pendingBy[pendingKey{group, topic, partition}]
	return c, ok
}

// Lookup returns the persisted offset of a group for a topic partition. topic is compared
// as stored (KoP full name): pass NormalizeTopic(name, kafkaNamespace).
func (p *PersistedOffsets) Lookup(group, topic string, partition int32) (CommittedOffset, bool) {
	p.index()
	s := p.part(group)
	if s == nil {
		return CommittedOffset{}, false
	}
	k, ok := s.key(group, topic, partition)
	if !ok {
		return CommittedOffset{}, false
	}
	slot, ok := s.slotOf(k)
	if !ok {
		return CommittedOffset{}, false
	}
	return s.loadedOffset(slot), true
}

// Group returns a group, whether known by its metadata or only by its offsets.
func (p *PersistedOffsets) Group(group string) (Group, bool) {
	s := p.part(group)
	if s == nil {
		return Group{}, false
	}
	id, ok := s.groups.id(group)
	if !ok || !s.ginfo[id].present() {
		return Group{}, false
	}
	return s.group(id), true
}

// Groups returns all groups sorted by name.
func (p *PersistedOffsets) Groups() []Group { return slices.Collect(p.AllGroups()) }

// AllGroups yields every group sorted by name, one at a time (Groups without the slice).
func (p *PersistedOffsets) AllGroups() iter.Seq[Group] {
	return func(yield func(Group) bool) {
		for _, g := range p.sortedGroups() {
			if !yield(g.s.group(g.id)) {
				return
			}
		}
	}
}

type groupRef struct {
	s  *state
	id uint32
}

// sortedGroups returns every group of every part, sorted by name.
func (p *PersistedOffsets) sortedGroups() []groupRef {
	p.index()
	var out []groupRef
	for _, s := range p.parts {
		for _, id := range s.gnames {
			out = append(out, groupRef{s, id})
		}
	}
	if len(p.parts) > 1 {
		slices.SortFunc(out, func(a, b groupRef) int { return strings.Compare(a.s.groups.strs[a.id], b.s.groups.strs[b.id]) })
	}
	return out
}

// GroupOffsets returns the offsets of one group sorted by topic and partition.
func (p *PersistedOffsets) GroupOffsets(group string) []CommittedOffset {
	s, slots := p.slotsOf(group)
	out := make([]CommittedOffset, len(slots))
	for i, slot := range slots {
		out[i] = s.loadedOffset(slot)
	}
	return out
}

// slotsOf returns the state holding group and its loaded slots by topic and partition (none
// when no state holds it).
func (p *PersistedOffsets) slotsOf(group string) (*state, []uint32) {
	s := p.part(group)
	if s == nil {
		return nil, nil
	}
	p.index()
	id, ok := s.groups.id(group)
	if !ok {
		return nil, nil
	}
	return s, s.groupSlots(id)
}

// EachGroupOffset yields the offsets of one group sorted by topic and partition, one at a
// time (GroupOffsets without the slice).
func (p *PersistedOffsets) EachGroupOffset(group string) iter.Seq[CommittedOffset] {
	return func(yield func(CommittedOffset) bool) {
		s, slots := p.slotsOf(group)
		for _, slot := range slots {
			if !yield(s.loadedOffset(slot)) {
				return
			}
		}
	}
}

// GroupNames yields the names of the groups Groups returns, sorted, without building them.
func (p *PersistedOffsets) GroupNames() iter.Seq[string] {
	return func(yield func(string) bool) {
		for _, g := range p.sortedGroups() {
			if !yield(g.s.groups.strs[g.id]) {
				return
			}
		}
	}
}

// HasGroup reports whether Groups holds group (it has offsets or a group record).
func (p *PersistedOffsets) HasGroup(group string) bool {
	s := p.part(group)
	if s == nil {
		return false
	}
	id, ok := s.groups.id(group)
	return ok && s.ginfo[id].present()
}

// Offsets returns all offsets sorted by group, topic and partition.
func (p *PersistedOffsets) Offsets() []CommittedOffset {
	out := make([]CommittedOffset, 0, p.Len())
	for c := range p.AllOffsets() {
		out = append(out, c)
	}
	return out
}

// AllOffsets yields every offset sorted by group, topic and partition, one at a time
// (Offsets without the slice: a million keys cost no more than the index).
func (p *PersistedOffsets) AllOffsets() iter.Seq[CommittedOffset] {
	return func(yield func(CommittedOffset) bool) {
		for _, g := range p.sortedGroups() {
			for _, slot := range g.s.groupSlots(g.id) {
				if !yield(g.s.loadedOffset(slot)) {
					return
				}
			}
		}
	}
}

// Len returns the number of persisted offsets.
func (p *PersistedOffsets) Len() int {
	p.index()
	n := 0
	for _, s := range p.parts {
		n += len(s.order)
	}
	return n
}

// Pending returns transactional offsets whose transaction had neither a COMMIT nor an
// ABORT marker by the end of the replay (KoP keeps them pending, OffsetFetch ignores them).
func (p *PersistedOffsets) Pending() []CommittedOffset {
	p.index()
	return slices.Clone(p.pending)
}

// RemovedGroups returns the groups whose last group record is a tombstone and which still
// have offsets (a deleted group with nothing left is forgotten), sorted.
func (p *PersistedOffsets) RemovedGroups() []string {
	var out []string
	for _, s := range p.parts {
		for name, id := range s.groups.ids {
			if s.ginfo[id].removed {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Merge combines the results of different offsets partitions without copying them: the
// result views their states (a group lives in exactly one partition, so nothing overlaps
// unless the same partition is merged twice; then the later argument wins). The arguments
// must not be used to change anything afterwards (a PersistedOffsets never changes).
func Merge(parts ...*PersistedOffsets) *PersistedOffsets {
	out := &PersistedOffsets{}
	for _, p := range parts {
		if p == nil {
			continue
		}
		out.Partitions = append(out.Partitions, p.Partitions...)
		out.Counts.Add(p.Counts)
		out.Errors = append(out.Errors, p.Errors...)
		out.parts = append(out.parts, p.parts...)
		for part, f := range p.loadFailures {
			if out.loadFailures == nil {
				out.loadFailures = map[int32]LoadFailure{}
			}
			out.loadFailures[part] = f
		}
	}
	slices.Sort(out.Partitions)
	out.Partitions = slices.Compact(out.Partitions)
	// The later state of a partition wins.
	slices.SortStableFunc(out.parts, func(a, b *state) int { return cmp.Compare(a.partition, b.partition) })
	kept := out.parts[:0]
	for i, s := range out.parts {
		if i+1 < len(out.parts) && out.parts[i+1].partition == s.partition {
			continue
		}
		kept = append(kept, s)
	}
	out.parts = kept
	return out
}

func sortOffsets(s []CommittedOffset) {
	slices.SortFunc(s, func(a, b CommittedOffset) int {
		return cmp.Or(strings.Compare(a.Group, b.Group), strings.Compare(a.Topic, b.Topic),
			cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Producer(), b.Producer()))
	})
}
