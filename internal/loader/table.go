package loader

import (
	"bytes"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
)

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
	kept   map[uint32]keptEntry
	// own is the key's last commit written on this cluster by a client (not replicated, not
	// a kept translation), by slot, while a replicated commit or kept translation replaced
	// it: the group's own position here (CommittedOffset.Own).
	own map[uint32]int64
	// newer is, by slot, the newest commit (by commit time) a kept translation landed over:
	// KoP loads the kept translation, older than the commit it hid (CommittedOffset.Newer).
	newer map[uint32]newerEntry
}

// newerEntry is a commit a later kept translation hid: offset in origin's numbering
// (origin 0: the group's own commit on this cluster).
type newerEntry struct {
	offset, commitTS int64
	origin           uint16
}

func newTable() table {
	return table{index: map[entryKey]uint32{}, used: 1, meta: map[uint32]string{}, pid: map[uint32]int64{}, kept: map[uint32]keptEntry{}, own: map[uint32]int64{}, newer: map[uint32]newerEntry{}}
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
	if len(t.kept) > 0 {
		delete(t.kept, slot)
	}
	if len(t.own) > 0 {
		delete(t.own, slot)
	}
	if len(t.newer) > 0 {
		delete(t.newer, slot)
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

// setKept records a kept translation for slot (k nil: an ordinary commit, which makes an
// earlier kept translation no longer current).
func (t *table) setKept(slot uint32, k *keptEntry) {
	switch {
	case k != nil:
		t.kept[slot] = *k
	case len(t.kept) > 0:
		if e, ok := t.kept[slot]; ok && e.current {
			e.current = false
			t.kept[slot] = e
		}
	}
}

// setNewer records, before next replaces slot's entry, whether next (a kept translation when
// nextKept) lands over a newer commit: the entry there, or the translation there of one, or
// the commit an earlier kept translation already hid. The writer of a kept translation
// decided on what it had read, and a commit can land in between (Pulsar appends, it cannot
// compare and set); this is how that race is seen afterwards, so that the key is kept again.
// Any other entry ends it: the newest word on the key is the last one again.
func (t *table) setNewer(slot uint32, existed bool, next entry, nextKept bool) {
	if !nextKept || !existed {
		if len(t.newer) > 0 {
			delete(t.newer, slot)
		}
		return
	}
	cand, ok := t.newer[slot]
	if !ok {
		prev := t.at(slot)
		cand = newerEntry{offset: prev.offset, commitTS: prev.commitTS, origin: prev.origin}
		if k, isKept := t.kept[slot]; isKept && k.current {
			cand.offset, cand.origin = k.source, k.from // the commit it translated
		}
	}
	if cand.commitTS > next.commitTS {
		t.newer[slot] = cand
	} else if ok {
		delete(t.newer, slot)
	}
}

// setOwn keeps slot's own commit (table.own) before next replaces the entry there (existed:
// slot held an entry); nextKept: next is a kept translation.
func (t *table) setOwn(slot uint32, existed bool, next entry, nextKept bool) {
	if next.origin == 0 && !nextKept {
		if len(t.own) > 0 {
			delete(t.own, slot)
		}
		return
	}
	if !existed {
		return
	}
	prev := t.at(slot)
	if k, ok := t.kept[slot]; prev.origin == 0 && (!ok || !k.current) {
		t.own[slot] = prev.offset
	}
}

func (t *table) clone() table {
	c := *t
	c.index, c.meta, c.pid, c.kept, c.free = maps.Clone(t.index), maps.Clone(t.meta), maps.Clone(t.pid), maps.Clone(t.kept), slices.Clone(t.free)
	c.own, c.newer = maps.Clone(t.own), maps.Clone(t.newer)
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
