package loader

import (
	"cmp"
	"slices"
	"strings"
	"sync"

	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
)

// The replayed state of one offsets partition, kept compact: a million live keys must fit in
// about a hundred bytes each. Group and topic names are interned to small ids (freed when
// nothing names them, so group-name churn does not grow a long-lived Replayer), an offset is
// a fixed-size, pointer-free entry in chunked slabs (the GC never scans them, growth never
// copies them), and the index from key to entry is a map of 16-byte slots. Rare fields
// (metadata, the producer of a committed transactional offset) live in side maps.

// state is the replayed state of one offsets partition.
type state struct {
	partition int32
	groups    names
	ginfo     []groupInfo // by group id
	topics    names
	trefs     []int32  // by topic id: the entries naming it
	origins   []string // interned ReplicatedFrom values; 0 is ""
	loaded    table
	pending   map[int64]map[entryKey]*pendingEntry
	msgs      *messages // nil unless messages are kept

	// Indexes built on first read, once the state is in a PersistedOffsets (read-only, maybe
	// shared by several after Merge).
	once *sync.Once
	// viewed: the state is a Replayer's, read through View until it is fed again; its
	// indexes are built without dropping the key map the replay goes on using.
	viewed bool
	order  []uint32 // loaded slots by group name, topic name, partition
	gfirst []uint32 // by group id: its first position in order
	gnames []uint32 // groups with metadata or offsets, by name
	trank  []uint32 // by topic id: its place in name order
}

func newState(partition int32) *state {
	return &state{partition: partition, groups: newNames(), ginfo: make([]groupInfo, 1), topics: newNames(),
		trefs: make([]int32, 1), origins: []string{""}, loaded: newTable(), pending: map[int64]map[entryKey]*pendingEntry{},
		once: new(sync.Once)}
}

func (s *state) addGroup(name string) uint32 {
	id := s.groups.add(name)
	if int(id) >= len(s.ginfo) {
		s.ginfo = append(s.ginfo, groupInfo{})
	}
	return id
}

// gcGroup forgets a group nothing refers to any more.
func (s *state) gcGroup(id uint32) {
	g := &s.ginfo[id]
	if g.loaded == 0 && g.pending == 0 && !g.hasMetadata() {
		*g = groupInfo{}
		s.groups.remove(id)
	}
}

func (s *state) addTopic(name string) uint32 {
	id := s.topics.add(name)
	if int(id) >= len(s.trefs) {
		s.trefs = append(s.trefs, 0)
	}
	return id
}

func (s *state) unrefTopic(id uint32) {
	if s.trefs[id]--; s.trefs[id] <= 0 {
		s.trefs[id] = 0
		s.topics.remove(id)
	}
}

func (s *state) origin(name string) uint16 {
	if i := slices.Index(s.origins, name); i >= 0 {
		return uint16(i)
	}
	s.origins = append(s.origins, strings.Clone(name))
	return uint16(len(s.origins) - 1)
}

// key returns the key of group, topic and partition if both names are known (read-only).
func (s *state) key(group, topic string, partition int32) (entryKey, bool) {
	g, ok := s.groups.id(group)
	if !ok {
		return entryKey{}, false
	}
	t, ok := s.topics.id(topic)
	return entryKey{g, t, partition}, ok
}

// loadedSlot returns the slot of a new or existing loaded offset for k.
func (s *state) loadedSlot(k entryKey) uint32 {
	if slot, ok := s.loaded.index[k]; ok {
		return slot
	}
	s.ginfo[k.group].loaded++
	s.trefs[k.topic]++
	return s.loaded.alloc(k, s.msgs != nil)
}

// put stores e as its key's loaded offset (kept: its kept translation, nil for none) and
// returns the slot.
func (s *state) put(e entry, kept *keptEntry) uint32 {
	_, existed := s.loaded.index[e.key]
	slot := s.loadedSlot(e.key)
	s.loaded.setOwn(slot, existed, e, kept != nil)
	s.loaded.setNewer(slot, existed, e, kept != nil)
	*s.loaded.at(slot) = e
	s.loaded.setKept(slot, kept)
	return slot
}

// setMsg makes msg the message of a loaded slot.
func (s *state) setMsg(slot, msg uint32) {
	if s.msgs == nil {
		return
	}
	p := &s.loaded.msgs[slot>>chunkBits][slot&(chunkSize-1)]
	s.msgs.ref(msg)
	s.msgs.unref(*p)
	*p = msg
}

func (s *state) deleteLoaded(k entryKey) {
	slot, ok := s.loaded.index[k]
	if !ok {
		return
	}
	s.setMsg(slot, 0)
	s.loaded.release(slot)
	s.ginfo[k.group].loaded--
	s.unrefTopic(k.topic)
	s.gcGroup(k.group)
}

// pendingEntry returns the pending offset of producer pid for k, new or existing.
func (s *state) pendingFor(pid int64, k entryKey) *pendingEntry {
	t := s.pending[pid]
	if t == nil {
		t = map[entryKey]*pendingEntry{}
		s.pending[pid] = t
	}
	if e := t[k]; e != nil {
		return e
	}
	s.ginfo[k.group].pending++
	s.trefs[k.topic]++
	e := &pendingEntry{entry: entry{key: k}}
	t[k] = e
	return e
}

func (s *state) dropPending(pid int64, k entryKey) {
	e := s.pending[pid][k]
	if e == nil {
		return
	}
	delete(s.pending[pid], k)
	s.releasePending(e)
}

func (s *state) releasePending(e *pendingEntry) {
	if s.msgs != nil {
		s.msgs.unref(e.msg)
	}
	s.ginfo[e.key.group].pending--
	s.unrefTopic(e.key.topic)
	s.gcGroup(e.key.group)
}

// marker applies a COMMIT (commit) or ABORT of producer pid's pending offsets.
func (s *state) marker(pid int64, commit bool) {
	t := s.pending[pid]
	if t == nil {
		return
	}
	delete(s.pending, pid)
	if commit {
		for k, pe := range t {
			if slot, ok := s.loaded.index[k]; ok && s.loaded.at(slot).pos >= pe.pos {
				continue
			}
			slot := s.put(pe.entry, nil)
			s.loaded.setMetadata(slot, pe.metadata)
			s.loaded.setPID(slot, pid)
			s.setMsg(slot, pe.msg)
		}
	}
	for _, pe := range t {
		s.releasePending(pe)
	}
}

func (s *state) clone() *state {
	c := *s
	c.groups, c.topics, c.loaded = s.groups.clone(), s.topics.clone(), s.loaded.clone()
	c.ginfo, c.trefs, c.origins = slices.Clone(s.ginfo), slices.Clone(s.trefs), slices.Clone(s.origins)
	c.pending = make(map[int64]map[entryKey]*pendingEntry, len(s.pending))
	for pid, t := range s.pending {
		ct := make(map[entryKey]*pendingEntry, len(t))
		for k, e := range t {
			ce := *e
			ct[k] = &ce
		}
		c.pending[pid] = ct
	}
	if s.msgs != nil {
		c.msgs = &messages{payload: s.msgs.payload, list: slices.Clone(s.msgs.list), kv: slices.Clone(s.msgs.kv), free: slices.Clone(s.msgs.free)}
	}
	c.resetIndex(false)
	return &c
}

// resetIndex drops the indexes, to be built again on the next read (viewed: see the field).
func (s *state) resetIndex(viewed bool) {
	s.order, s.gfirst, s.gnames, s.trank = nil, nil, nil, nil
	s.once, s.viewed = new(sync.Once), viewed
}

// committed returns the offset of a loaded slot or pending entry (metadata, pid: its own).
func (s *state) committed(e *entry, metadata string, pid int64) CommittedOffset {
	c := CommittedOffset{
		Group: s.groups.strs[e.key.group], Topic: s.topics.strs[e.key.topic], Partition: e.key.partition,
		Offset: e.offset, Metadata: metadata, CommitTimestamp: offsetlog.Millis(e.commitTS),
		KeyVersion: int16(e.keyVersion), ValueVersion: int16(e.valueVersion), OffsetsPartition: s.partition,
		Origin: s.origins[e.origin],
	}
	if e.leaderEpoch >= 0 {
		c.LeaderEpoch = new(e.leaderEpoch)
	}
	if e.expireTS >= 0 {
		c.ExpireTimestamp = new(offsetlog.Millis(e.expireTS))
	}
	if pid >= 0 {
		c.ProducerID = new(pid)
	}
	return c
}

func (s *state) loadedOffset(slot uint32) CommittedOffset {
	pid, ok := s.loaded.pid[slot]
	if !ok {
		pid = -1
	}
	c := s.committed(s.loaded.at(slot), s.loaded.meta[slot], pid)
	if k, ok := s.loaded.kept[slot]; ok {
		c.Kept = &Kept{From: s.origins[k.from], Source: k.source, Offset: k.offset, At: offsetlog.Millis(k.at), Current: k.current}
	}
	if v, ok := s.loaded.own[slot]; ok {
		c.Own = &v
	}
	if n, ok := s.loaded.newer[slot]; ok {
		c.Newer = &Newer{Origin: s.origins[n.origin], Offset: n.offset, CommitTimestamp: offsetlog.Millis(n.commitTS)}
	}
	return c
}

// group returns group id as KoP would load it.
func (s *state) group(id uint32) Group {
	gi := &s.ginfo[id]
	g := Group{Group: s.groups.strs[id], OffsetsPartition: s.partition, Offsets: int(gi.loaded), HasMetadata: gi.hasMetadata()}
	var rec *offsetlog.Record
	if m := gi.meta; m != nil && m.rec != nil {
		rec = m.rec
	} else if m != nil {
		// Validated when it was applied, so this cannot fail; raw is never changed, so the
		// group may view it.
		rec, _ = offsetlog.GroupRecord(m.raw)
	}
	if rec != nil {
		g.ValueVersion, g.Generation, g.ProtocolType = rec.ValueVersion, rec.Generation, rec.ProtocolType
		g.Protocol, g.Leader, g.CurrentStateTimestamp = rec.Protocol, rec.Leader, rec.CurrentStateTimestamp
		g.Members = rec.Members
	}
	g.State = GroupStable
	if len(g.Members) == 0 {
		g.State = GroupEmpty
	}
	return g
}

// buildIndex sorts the loaded offsets by group name, topic name and partition, once.
func (s *state) buildIndex() {
	present := func(id uint32) bool { return s.ginfo[id].present() }
	s.gnames = s.groups.sorted(present)
	grank := make([]uint32, len(s.groups.strs))
	for i, id := range s.gnames {
		grank[id] = uint32(i)
	}
	trank := make([]uint32, len(s.topics.strs))
	for i, id := range s.topics.sorted(func(uint32) bool { return true }) {
		trank[id] = uint32(i)
	}
	s.trank = trank
	s.order = make([]uint32, 0, len(s.loaded.index))
	for _, slot := range s.loaded.index {
		s.order = append(s.order, slot)
	}
	slices.SortFunc(s.order, func(a, b uint32) int {
		ka, kb := s.loaded.at(a).key, s.loaded.at(b).key
		switch {
		case ka.group != kb.group:
			return cmp.Compare(grank[ka.group], grank[kb.group])
		case ka.topic != kb.topic:
			return cmp.Compare(trank[ka.topic], trank[kb.topic])
		}
		return cmp.Compare(ka.partition, kb.partition)
	})
	s.gfirst = make([]uint32, len(s.groups.strs))
	for i := len(s.order) - 1; i >= 0; i-- {
		s.gfirst[s.loaded.at(s.order[i]).key.group] = uint32(i)
	}
}

// freeze builds the indexes of a state that is read only from now on (in a PersistedOffsets)
// and drops the key map the replay needed: lookups search the group's sorted slots instead,
// and a million keys keep 4 bytes each in order rather than a map slot of about 30.
func (s *state) freeze() {
	s.buildIndex()
	s.loaded.index, s.loaded.free = nil, nil
}

// slotOf returns the loaded slot of k in a frozen state.
func (s *state) slotOf(k entryKey) (uint32, bool) {
	slots := s.groupSlots(k.group)
	i, ok := slices.BinarySearchFunc(slots, k, func(slot uint32, k entryKey) int {
		e := s.loaded.at(slot).key
		return cmp.Or(cmp.Compare(s.trank[e.topic], s.trank[k.topic]), cmp.Compare(e.partition, k.partition))
	})
	if !ok {
		return 0, false
	}
	return slots[i], true
}

// groupSlots returns the loaded slots of group id, by topic and partition.
func (s *state) groupSlots(id uint32) []uint32 {
	n := s.ginfo[id].loaded
	if n == 0 {
		return nil
	}
	f := s.gfirst[id]
	return s.order[f : f+uint32(n)]
}
