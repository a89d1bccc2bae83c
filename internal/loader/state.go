package loader

import (
	"bytes"
	"cmp"
	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// The replayed state of one offsets partition, kept compact: a million live keys must fit in
// about a hundred bytes each. Group and topic names are interned to small ids (freed when
// nothing names them, so group-name churn does not grow a long-lived Replayer), an offset is
// a fixed-size, pointer-free entry in chunked slabs (the GC never scans them, growth never
// copies them), and the index from key to entry is a map of 16-byte slots. Rare fields
// (metadata, the producer of a committed transactional offset) live in side maps.

// names interns strings as dense ids; 0 is never used.
type names struct {
	ids  map[string]uint32
	strs []string // by id; "" when free
	free []uint32
	last uint32 // the last id looked up: consecutive records mostly name the same one
}

func newNames() names { return names{ids: map[string]uint32{}, strs: []string{""}} }

// lookup returns the id of s (which may view scratch memory) without adding it.
func (n *names) lookup(s string) (uint32, bool) {
	if n.last != 0 && n.strs[n.last] == s {
		return n.last, true
	}
	id, ok := n.ids[s]
	if ok {
		n.last = id
	}
	return id, ok
}

// id returns the id of s without touching the lookup cache: safe for concurrent readers of
// a state that no longer changes.
func (n *names) id(s string) (uint32, bool) {
	id, ok := n.ids[s]
	return id, ok
}

// add returns the id of s, interning an owned copy when it is new.
func (n *names) add(s string) uint32 {
	if id, ok := n.lookup(s); ok {
		return id
	}
	s = strings.Clone(s)
	var id uint32
	if k := len(n.free); k > 0 {
		id, n.free = n.free[k-1], n.free[:k-1]
		n.strs[id] = s
	} else {
		id = uint32(len(n.strs))
		n.strs = append(n.strs, s)
	}
	n.ids[s] = id
	n.last = id
	return id
}

func (n *names) remove(id uint32) {
	delete(n.ids, n.strs[id])
	n.strs[id] = ""
	n.free = append(n.free, id)
	if n.last == id {
		n.last = 0
	}
}

func (n *names) clone() names {
	return names{ids: maps.Clone(n.ids), strs: slices.Clone(n.strs), free: slices.Clone(n.free)}
}

// sorted returns the ids for which keep is true, sorted by name.
func (n *names) sorted(keep func(uint32) bool) []uint32 {
	out := make([]uint32, 0, len(n.ids))
	for _, id := range n.ids {
		if keep(id) {
			out = append(out, id)
		}
	}
	slices.SortFunc(out, func(a, b uint32) int { return strings.Compare(n.strs[a], n.strs[b]) })
	return out
}

type entryKey struct {
	group, topic uint32
	partition    int32
}

// entry is one offset: 48 bytes, no pointers.
type entry struct {
	offset, commitTS, expireTS int64
	key                        entryKey // key.group 0: a free slot
	leaderEpoch                int32
	// pos orders a committed transactional offset against a loaded one: KoP's in-batch
	// offset, or with OrderingLog the batch's sequence in the replay (saturated at 2^31-1).
	pos                      int32
	origin                   uint16 // index in state.origins
	keyVersion, valueVersion int8   // versions the decoder accepts are 0..4
}

func position(p int64) int32 { return int32(min(p, math.MaxInt32)) }

// pendingEntry is an offset of a transaction without a marker yet (few, so not compacted).
type pendingEntry struct {
	entry
	metadata string
	msg      uint32
}

const (
	chunkBits = 12
	chunkSize = 1 << chunkBits
)

// table holds the loaded offsets of a partition.
type table struct {
	index  map[entryKey]uint32 // slot by key
	chunks [][]entry           // slots; slot 0 is never used
	msgs   [][]uint32          // kept message by slot, when messages are kept
	used   uint32              // slots handed out
	free   []uint32
	meta   map[uint32]string // non-empty metadata by slot
	pid    map[uint32]int64  // producer of an offset that came from a transaction, by slot
}

func newTable() table {
	return table{index: map[entryKey]uint32{}, used: 1, meta: map[uint32]string{}, pid: map[uint32]int64{}}
}

func (t *table) at(slot uint32) *entry { return &t.chunks[slot>>chunkBits][slot&(chunkSize-1)] }

// alloc returns a free slot for k.
func (t *table) alloc(k entryKey, keepMsgs bool) uint32 {
	var slot uint32
	if n := len(t.free); n > 0 {
		slot, t.free = t.free[n-1], t.free[:n-1]
	} else {
		slot = t.used
		t.used++
		if int(slot>>chunkBits) == len(t.chunks) {
			t.chunks = append(t.chunks, make([]entry, chunkSize))
			if keepMsgs {
				t.msgs = append(t.msgs, make([]uint32, chunkSize))
			}
		}
	}
	t.index[k] = slot
	*t.at(slot) = entry{key: k}
	return slot
}

func (t *table) release(slot uint32) {
	e := t.at(slot)
	delete(t.index, e.key)
	*e = entry{}
	if len(t.meta) > 0 {
		delete(t.meta, slot)
	}
	if len(t.pid) > 0 {
		delete(t.pid, slot)
	}
	t.free = append(t.free, slot)
}

func (t *table) msg(slot uint32) uint32 {
	if t.msgs == nil {
		return 0
	}
	return t.msgs[slot>>chunkBits][slot&(chunkSize-1)]
}

func (t *table) setMetadata(slot uint32, md string) {
	if md == "" {
		if len(t.meta) > 0 {
			delete(t.meta, slot)
		}
		return
	}
	if t.meta[slot] != md {
		t.meta[slot] = strings.Clone(md)
	}
}

func (t *table) setPID(slot uint32, pid int64) {
	if pid >= 0 {
		t.pid[slot] = pid
	} else if len(t.pid) > 0 {
		delete(t.pid, slot)
	}
}

func (t *table) clone() table {
	c := *t
	c.index, c.meta, c.pid, c.free = maps.Clone(t.index), maps.Clone(t.meta), maps.Clone(t.pid), slices.Clone(t.free)
	c.chunks = make([][]entry, len(t.chunks))
	for i, ch := range t.chunks {
		c.chunks[i] = slices.Clone(ch)
	}
	if t.msgs != nil {
		c.msgs = make([][]uint32, len(t.msgs))
		for i, ch := range t.msgs {
			c.msgs[i] = slices.Clone(ch)
		}
	}
	return c
}

// groupInfo is what a partition knows of a group besides its offsets: 24 bytes.
type groupInfo struct {
	meta    *groupMeta // the last group record; nil: none, or a tombstone
	loaded  int32      // loaded offsets
	pending int32      // pending transactional offsets
	msg     uint32     // kept message of the group record
	removed bool       // the last group record is a tombstone
}

// groupMeta is a group record, never changed once stored (a snapshot may share it).
type groupMeta struct {
	raw []byte            // the group value as written (ApplyMessage)
	rec *offsetlog.Record // or the decoded record (Apply)
}

func (g *groupInfo) hasMetadata() bool { return g.meta != nil }

// present reports whether KoP would load the group: it has offsets or a group record.
func (g *groupInfo) present() bool { return g.loaded > 0 || g.hasMetadata() }

// keptMsg is a message that wrote a live key (Replayer.KeepMessages).
type keptMsg struct {
	id      string
	publish int64 // Unix nanoseconds; 0 for none
	refs    int32
}

// messages keeps the messages live keys were last written by, freed when none is.
type messages struct {
	payload bool
	list    []keptMsg   // index 0 unused
	kv      [][2][]byte // key and value by index, with payload
	free    []uint32
}

func (ms *messages) add(m Message) uint32 {
	k := keptMsg{id: m.MessageID}
	if !m.PublishTime.IsZero() {
		k.publish = m.PublishTime.UnixNano()
	}
	var kv [2][]byte
	if ms.payload {
		kv = [2][]byte{bytes.Clone(m.Key), bytes.Clone(m.Value)}
	}
	if n := len(ms.free); n > 0 {
		id := ms.free[n-1]
		ms.free = ms.free[:n-1]
		ms.list[id] = k
		if ms.payload {
			ms.kv[id] = kv
		}
		return id
	}
	ms.list = append(ms.list, k)
	if ms.payload {
		ms.kv = append(ms.kv, kv)
	}
	return uint32(len(ms.list) - 1)
}

func (ms *messages) ref(id uint32) {
	if id != 0 {
		ms.list[id].refs++
	}
}

func (ms *messages) unref(id uint32) {
	if id == 0 {
		return
	}
	m := &ms.list[id]
	if m.refs--; m.refs <= 0 {
		*m = keptMsg{}
		if ms.payload {
			ms.kv[id] = [2][]byte{}
		}
		ms.free = append(ms.free, id)
	}
}

func (ms *messages) message(id uint32, partition int32) Message {
	m := Message{Partition: partition}
	if id == 0 {
		return m
	}
	k := &ms.list[id]
	m.MessageID = k.id
	if ms.payload {
		m.Key, m.Value = ms.kv[id][0], ms.kv[id][1]
	}
	if k.publish != 0 {
		m.PublishTime = time.Unix(0, k.publish)
	}
	return m
}

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
			slot := s.loadedSlot(k)
			*s.loaded.at(slot) = pe.entry
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
	return s.committed(s.loaded.at(slot), s.loaded.meta[slot], pid)
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
