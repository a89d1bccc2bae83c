package offsets

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The value versions KoP's loader reads (GroupMetadataConstants): anything newer fails the
// load of the whole partition.
const (
	maxKoPOffsetValueVersion = 1
	maxKoPGroupValueVersion  = 1
)

// How KoP's loader replays an offsets partition (GroupMetadataManager#scheduleLoadGroupAndOffsets
// and #processOffsetMessage in the archived streamnative/kop tree), which Replayer follows:
//   - it reads the partition with a compacted reader from the earliest message to the end;
//     messages with an empty value are skipped (CompactedPartitionedTopic, valueIsEmpty),
//     so are messages without a key (processOffsetMessage: "placeholders");
//   - every batch of the value is read, and its CRC is never checked; in a control batch only
//     the first record counts: COMMIT moves the producer's pending offsets into the loaded
//     ones, ABORT and any other control type drop them;
//   - in a data batch, records without a key are skipped; an offset record of a
//     transactional batch goes to the producer's pending offsets, otherwise to the loaded
//     ones: a value replaces, a tombstone deletes (from pending or loaded respectively);
//   - a group record with a value replaces the group; a tombstone removes the group only.
//     It does NOT remove the group's offsets: those are deleted by their own tombstones,
//     which KoP writes in the same batch when it expires or deletes a group
//     (cleanupGroupMetadata). A group whose offsets survive is loaded as an Empty group
//     without metadata, exactly like a group that only ever committed offsets;
//   - on COMMIT a pending offset replaces a loaded one only when the loaded one is older:
//     CommitRecordMetadataAndOffset#olderThan compares positions, which the loader sets to
//     (0, in-batch offset of the batch's first keyed record). KoP writes every batch at base
//     offset 0, so both positions are (0, 0) and a transactional commit does not replace an
//     offset that was already loaded for that partition (Kafka compares log offsets and the
//     later write wins). OrderingKoP reproduces KoP; OrderingLog gives Kafka's result.
//   - KoP only knows offset values v0/v1 and group values v0/v1 and fails the whole load on
//     anything else, as on any record it cannot parse (key version above 2, bad batch
//     framing, a truncated field): the partition stays owned and KoP caches no group of it.
//     Replayer records that as the partition's LoadFailure (what KoP would load: nothing)
//     and still replays the rest, applying v2/v3 offsets and v2..v4 groups as Kafka would,
//     so that what the topic holds stays visible beside the prediction.
//   - transaction markers: KoP writes COMMIT/ABORT into the offsets topic as Pulsar marker
//     entries, which the dispatcher hides from every reader and compaction drops, so the
//     loader (and our reader) normally never sees them: a transactional offset stays pending
//     after a load even though KoP's live path applied it. Pending() keeps them, so callers
//     can tell a cache that only the live path can reproduce.
//   - Group state after loading: Empty when the group has no members, else Stable
//     (GroupMetadataConstants#readGroupMessageValue).

// TxnOrdering decides whether a committed transactional offset replaces a loaded one.
type TxnOrdering int

const (
	// OrderingKoP reproduces KoP's loader: positions are in-batch offsets, normally all 0.
	OrderingKoP TxnOrdering = iota
	// OrderingLog uses log order, as Kafka's loader does with real log offsets.
	OrderingLog
)

// maxKeptErrors bounds the errors a replay keeps: counts stay exact, memory does not grow
// with a partition full of garbage.
const maxKeptErrors = 100

// GroupState is the state KoP gives a group it loads.
type GroupState string

// The group states a replay assigns.
const (
	GroupEmpty  GroupState = "Empty"
	GroupStable GroupState = "Stable"
)

// Counts summarises a replay.
type Counts struct {
	Messages         int64 `json:"messages"`
	Bytes            int64 `json:"bytes"` // key + value bytes
	OffsetCommits    int64 `json:"offsetCommits"`
	OffsetTombstones int64 `json:"offsetTombstones"`
	GroupMetadata    int64 `json:"groupMetadata"`
	GroupTombstones  int64 `json:"groupTombstones"`
	TxnCommits       int64 `json:"txnCommits"`
	TxnAborts        int64 `json:"txnAborts"`
	Placeholders     int64 `json:"placeholders"` // messages KoP skips: empty value or no key
	Keyless          int64 `json:"keyless"`      // of those, messages with a value but no key
	Undecodable      int64 `json:"undecodable"`  // records (or whole messages) that failed
	// BadCRC counts batches whose CRC did not match: read anyway, as KoP's loader does.
	BadCRC int64 `json:"badCrc,omitempty"`
	// UnknownControl counts control records of another type than COMMIT/ABORT: KoP drops
	// the producer's pending offsets for them, as for ABORT.
	UnknownControl int64 `json:"unknownControl,omitempty"`
	// KeylessRecords counts data records without a key: KoP skips them.
	KeylessRecords int64 `json:"keylessRecords,omitempty"`
}

// ByKind returns the record counts keyed by kind.
func (c Counts) ByKind() map[Kind]int64 {
	return map[Kind]int64{
		KindOffsetCommit: c.OffsetCommits, KindOffsetTombstone: c.OffsetTombstones,
		KindGroupMetadata: c.GroupMetadata, KindGroupTombstone: c.GroupTombstones,
		KindTxnCommit: c.TxnCommits, KindTxnAbort: c.TxnAborts,
		KindPlaceholder: c.Placeholders, KindUndecodable: c.Undecodable,
	}
}

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	c.Messages += o.Messages
	c.Bytes += o.Bytes
	c.OffsetCommits += o.OffsetCommits
	c.OffsetTombstones += o.OffsetTombstones
	c.GroupMetadata += o.GroupMetadata
	c.GroupTombstones += o.GroupTombstones
	c.TxnCommits += o.TxnCommits
	c.TxnAborts += o.TxnAborts
	c.Placeholders += o.Placeholders
	c.Keyless += o.Keyless
	c.Undecodable += o.Undecodable
	c.BadCRC += o.BadCRC
	c.UnknownControl += o.UnknownControl
	c.KeylessRecords += o.KeylessRecords
}

// LoadFailure is the first record of an offsets partition that KoP's loader cannot parse.
// KoP's load of the partition then fails: the partition stays owned and KoP caches no group
// of it (OffsetFetch answers no offset and no error) until the record is gone.
type LoadFailure struct {
	Partition int32  `json:"offsetsPartition"`
	MessageID string `json:"messageId"`
	Reason    string `json:"reason"`
}

func (f LoadFailure) String() string {
	return "offsets partition " + itoa(int(f.Partition)) + ": KoP cannot load it: message " + f.MessageID + ": " + f.Reason
}

// MessageError is an undecodable message (or record) met during a replay.
type MessageError struct {
	Partition int32
	MessageID string
	Err       error
}

func (e MessageError) Error() string {
	return "offsets partition " + itoa(int(e.Partition)) + " message " + e.MessageID + ": " + e.Err.Error()
}

func (e MessageError) Unwrap() error { return e.Err }

// CommittedOffset is one persisted offset.
type CommittedOffset struct {
	Group            string  `json:"group"`
	Topic            string  `json:"topic"` // as stored: KoP full name
	Partition        int32   `json:"partition"`
	Offset           int64   `json:"offset"`
	LeaderEpoch      *int32  `json:"leaderEpoch,omitempty"`
	Metadata         string  `json:"metadata"`
	CommitTimestamp  Millis  `json:"commitTimestamp"`
	ExpireTimestamp  *Millis `json:"expireTimestamp,omitempty"`
	KeyVersion       int16   `json:"keyVersion"`
	ValueVersion     int16   `json:"valueVersion"`
	ProducerID       *int64  `json:"producerId,omitempty"` // set when it came from a transaction
	OffsetsPartition int32   `json:"offsetsPartition"`
	// Origin is the cluster the commit was replicated from ("" when it was written on the
	// cluster read): the offset counts in Origin's numbering of the topic, which is this
	// cluster's only while both copies hold the same messages in the same order.
	Origin string `json:"origin,omitempty"`
}

// Group is one group as KoP would load it.
type Group struct {
	Group            string     `json:"group"`
	OffsetsPartition int32      `json:"offsetsPartition"`
	State            GroupState `json:"state"`
	// HasMetadata is false for groups known only through their offsets.
	HasMetadata           bool     `json:"hasMetadata"`
	ValueVersion          *int16   `json:"valueVersion,omitempty"`
	Generation            *int32   `json:"generation,omitempty"`
	ProtocolType          *string  `json:"protocolType,omitempty"`
	Protocol              *string  `json:"protocol,omitempty"`
	Leader                *string  `json:"leader,omitempty"`
	CurrentStateTimestamp *Millis  `json:"currentStateTimestamp,omitempty"`
	Members               []Member `json:"members,omitzero"` // [] for a group record without members
	Offsets               int      `json:"offsets"`          // number of persisted offsets
}

type offsetKey struct {
	group, topic string
	partition    int32
}

type offsetEntry struct {
	offset, commitTS, expireTS int64
	leaderEpoch                int32
	metadata                   string
	keyVersion, valueVersion   int16
	producerID                 int64 // -1 unless it came from a transaction
	pos                        int64
	origin                     string // interned ReplicatedFrom of the message; "" written here
}

// offsetTable maps group, topic and partition to offset entries: a map by group and topic
// of maps by partition, with the last group and topic looked up cached. KoP writes a commit
// request as one batch of one group, so consecutive records mostly share both, and a lookup
// is then two string comparisons and a small int32-keyed map access instead of hashing
// both strings.
type offsetTable struct {
	topics map[groupTopic]*topicOffsets
	last   *topicOffsets // cache; nil when empty
	n      int
}

type groupTopic struct{ group, topic string }

type topicOffsets struct {
	group, topic string // owned
	parts        map[int32]*offsetEntry
}

func newOffsetTable() *offsetTable {
	return &offsetTable{topics: make(map[groupTopic]*topicOffsets)}
}

// find returns the partitions of group and topic (which may view scratch memory), or nil.
func (t *offsetTable) find(group, topic string) *topicOffsets {
	if l := t.last; l != nil && l.group == group && l.topic == topic {
		return l
	}
	to := t.topics[groupTopic{group, topic}]
	if to != nil {
		t.last = to
	}
	return to
}

func (t *offsetTable) get(k offsetKey) *offsetEntry {
	if to := t.find(k.group, k.topic); to != nil {
		return to.parts[k.partition]
	}
	return nil
}

// set stores e under k; intern makes owned copies of k's strings when the group and topic
// are new.
func (t *offsetTable) set(k offsetKey, e *offsetEntry, intern func(string) string) {
	to := t.find(k.group, k.topic)
	if to == nil {
		to = &topicOffsets{group: intern(k.group), topic: intern(k.topic), parts: make(map[int32]*offsetEntry, 1)}
		t.topics[groupTopic{to.group, to.topic}] = to
		t.last = to
	}
	if _, ok := to.parts[k.partition]; !ok {
		t.n++
	}
	to.parts[k.partition] = e
}

func (t *offsetTable) del(k offsetKey) {
	to := t.find(k.group, k.topic)
	if to == nil {
		return
	}
	if _, ok := to.parts[k.partition]; !ok {
		return
	}
	t.n--
	delete(to.parts, k.partition)
	if len(to.parts) == 0 { // memory stays proportional to the live keys
		delete(t.topics, groupTopic{to.group, to.topic})
		if t.last == to {
			t.last = nil
		}
	}
}

func (t *offsetTable) len() int { return t.n }

// all yields every entry with its key (owned strings).
func (t *offsetTable) all(yield func(offsetKey, *offsetEntry) bool) {
	for _, to := range t.topics {
		for p, e := range to.parts {
			if !yield(offsetKey{group: to.group, topic: to.topic, partition: p}, e) {
				return
			}
		}
	}
}

type groupEntry struct {
	raw []byte  // the last group value as written (ApplyMessage)
	rec *Record // or the decoded record (Apply)
}

// Replayer replays one offsets partition the way KoP's loader does. Feed it the
// partition's messages (ApplyMessage) or decoded records (Apply) in log order, then call
// Result. Memory is proportional to the live keys; ApplyMessage allocates only for keys it
// has not seen. A Replayer is not safe for concurrent use.
type Replayer struct {
	partition int32
	ordering  TxnOrdering

	d        decoder
	offsets  *offsetTable
	pending  map[int64]*offsetTable
	groups   map[string]*groupEntry
	removed  map[string]struct{}
	strs     map[string]string
	counts   Counts
	seq      int64 // batches (ApplyMessage) or records (Apply) seen: the log position
	errs     []MessageError
	firstErr error
	loadFail *LoadFailure
	origin   string // ReplicatedFrom of the message being applied (interned)
}

// NewReplayer returns a Replayer for one offsets partition.
func NewReplayer(partition int32, ordering TxnOrdering) *Replayer {
	return &Replayer{
		partition: partition,
		ordering:  ordering,
		offsets:   newOffsetTable(),
		pending:   make(map[int64]*offsetTable),
		groups:    make(map[string]*groupEntry),
		removed:   make(map[string]struct{}),
		strs:      make(map[string]string),
	}
}

// intern returns a stable copy of s (which may view a scratch buffer), shared by all keys.
func (r *Replayer) intern(s string) string {
	if v, ok := r.strs[s]; ok {
		return v
	}
	v := strings.Clone(s)
	r.strs[v] = v
	return v
}

// kopFails records that KoP's loader cannot parse the message id (only the first counts:
// KoP's load stops there).
func (r *Replayer) kopFails(id string, reason string) {
	if r.loadFail == nil {
		r.loadFail = &LoadFailure{Partition: r.partition, MessageID: id, Reason: reason}
	}
}

// kopFailsVersion records a value version KoP's loader does not read (kind: offset, group).
func (r *Replayer) kopFailsVersion(id, group, kind string, v int16) {
	r.kopFails(id, "group "+strconv.Quote(group)+": "+kind+" value v"+itoa(int(v))+" (KoP reads v0 and v1 only)")
}

func (r *Replayer) fail(id string, err error) {
	r.kopFails(id, err.Error())
	r.counts.Undecodable++
	if r.firstErr == nil {
		r.firstErr = err
	}
	if len(r.errs) < maxKeptErrors {
		r.errs = append(r.errs, MessageError{Partition: r.partition, MessageID: id, Err: err})
	}
}

// ApplyMessage replays one message. Undecodable parts are counted and skipped, as KoP
// skips what it cannot use; the first such error is returned for logging, never fatal.
func (r *Replayer) ApplyMessage(m Message) error {
	r.counts.Messages++
	r.counts.Bytes += int64(len(m.Key) + len(m.Value))
	if len(m.Value) == 0 {
		r.counts.Placeholders++
		return nil
	}
	if len(m.Key) == 0 {
		r.counts.Placeholders++
		r.counts.Keyless++
		return nil
	}
	r.origin = ""
	if m.ReplicatedFrom != "" {
		r.origin = r.intern(m.ReplicatedFrom)
	}
	d := &r.d
	d.lenientCRC = true
	d.reset(m.Value)
	crcBefore := d.badCRC
	defer func() { r.counts.BadCRC += d.badCRC - crcBefore }()
	var first error
	fail := func(err error) {
		r.fail(m.MessageID, err)
		if first == nil {
			first = err
		}
	}
	for {
		ok, err := d.nextBatch()
		if err != nil {
			fail(err)
			return first
		}
		if !ok {
			return first
		}
		r.seq++
		txn := d.isTransactional()
		for {
			ok, err := d.nextRecord()
			if err != nil {
				fail(err)
				break
			}
			if !ok {
				break
			}
			if d.isControl() {
				switch err := d.decodeControl(d.rec.Key); {
				case errors.Is(err, ErrUnknownControlType):
					r.counts.UnknownControl++
					r.marker(d.batch.ProducerID, false)
				case err != nil:
					fail(err)
				default:
					r.marker(d.batch.ProducerID, d.ctlCommit)
				}
				break
			}
			if err := r.applyRecord(txn, m.MessageID); err != nil {
				fail(err)
			}
		}
	}
}

// applyRecord applies d.rec, a record of a data batch.
func (r *Replayer) applyRecord(txn bool, id string) error {
	d := &r.d
	if d.rec.Key == nil {
		r.counts.KeylessRecords++ // KoP skips records without a key
		return nil
	}
	kind, err := d.decodeKey(d.rec.Key)
	if err != nil {
		return err
	}
	pid := d.batch.ProducerID
	if kind == keyGroup {
		if d.rec.Value == nil {
			r.groupTombstone(d.gkey.Group)
			return nil
		}
		if err := d.decodeGroupValue(d.rec.Value); err != nil {
			return err
		}
		if v := d.gval.Version; v > maxKoPGroupValueVersion {
			r.kopFailsVersion(id, d.gkey.Group, "group", v)
		}
		r.counts.GroupMetadata++
		e := r.groupFor(d.gkey.Group)
		e.raw = append(e.raw[:0], d.rec.Value...)
		e.rec = nil
		return nil
	}
	k := offsetKey{group: d.okey.Group, topic: d.okey.Topic, partition: d.okey.Partition}
	if d.rec.Value == nil {
		r.offsetTombstone(k, txn, pid)
		return nil
	}
	if err := d.decodeOffsetValue(d.rec.Value); err != nil {
		return err
	}
	if v := d.oval.Version; v > maxKoPOffsetValueVersion {
		r.kopFailsVersion(id, d.okey.Group, "offset", v)
	}
	pos := d.firstKey
	if r.ordering == OrderingLog {
		pos = r.seq
	}
	o := &d.oval
	e := r.offsetFor(k, txn, pid)
	e.offset, e.commitTS, e.expireTS, e.leaderEpoch = o.Offset, o.CommitTimestamp, o.ExpireTimestamp, o.LeaderEpoch
	if e.metadata != o.Metadata {
		e.metadata = strings.Clone(o.Metadata)
	}
	e.keyVersion, e.valueVersion, e.pos, e.origin = d.okey.Version, o.Version, pos, r.origin
	e.producerID = -1
	if txn {
		e.producerID = pid
	}
	r.counts.OffsetCommits++
	return nil
}

// offsetFor returns the entry for k in the loaded or the producer's pending offsets,
// creating it (with interned strings) when it is new. k may view scratch memory: the
// table keeps its own copies of the strings.
func (r *Replayer) offsetFor(k offsetKey, txn bool, pid int64) *offsetEntry {
	t := r.offsets
	if txn {
		t = r.pendingFor(pid)
	}
	if e := t.get(k); e != nil {
		return e
	}
	e := &offsetEntry{}
	t.set(k, e, r.intern)
	return e
}

func (r *Replayer) pendingFor(pid int64) *offsetTable {
	t := r.pending[pid]
	if t == nil {
		t = newOffsetTable()
		r.pending[pid] = t
	}
	return t
}

func (r *Replayer) offsetTombstone(k offsetKey, txn bool, pid int64) {
	r.counts.OffsetTombstones++
	if txn {
		r.pendingFor(pid).del(k)
		return
	}
	r.offsets.del(k)
}

func (r *Replayer) groupFor(group string) *groupEntry {
	delete(r.removed, group)
	if e, ok := r.groups[group]; ok {
		return e
	}
	e := &groupEntry{}
	r.groups[r.intern(group)] = e
	return e
}

func (r *Replayer) groupTombstone(group string) {
	r.counts.GroupTombstones++
	delete(r.groups, group)
	if _, ok := r.removed[group]; !ok {
		r.removed[r.intern(group)] = struct{}{}
	}
}

// marker applies a COMMIT or ABORT marker of a producer.
func (r *Replayer) marker(pid int64, commit bool) {
	if commit {
		r.counts.TxnCommits++
		if pt := r.pending[pid]; pt != nil {
			for k, pe := range pt.all {
				if le := r.offsets.get(k); le == nil || le.pos < pe.pos {
					r.offsets.set(k, pe, r.intern)
				}
			}
		}
	} else {
		r.counts.TxnAborts++
	}
	delete(r.pending, pid)
}

// Apply replays one decoded record (from Decode), in log order. Use it when the records
// are decoded anyway; ApplyMessage is the fast path. Apply does not count messages or bytes.
func (r *Replayer) Apply(rec Record) {
	r.seq++
	switch rec.Kind {
	case KindPlaceholder:
		r.counts.Placeholders++
	case KindUndecodable:
		err := rec.Err
		if err == nil {
			err = &DecodeError{Err: ErrMalformed, Detail: rec.Error}
		}
		var de *DecodeError
		switch {
		case errors.Is(err, ErrUnknownControlType) && rec.ProducerID != nil:
			r.counts.UnknownControl++ // KoP drops the pending offsets, as for ABORT
			r.marker(*rec.ProducerID, false)
		case errors.As(err, &de) && de.Field == "key" && de.Detail == "null key":
			r.counts.KeylessRecords++ // KoP skips records without a key
		case errors.Is(err, ErrBadCRC):
			// Decode rejects the batch, KoP would load it: counted, not a load failure.
			r.counts.BadCRC++
			r.counts.Undecodable++
			r.errs = append(r.errs, MessageError{Partition: r.partition, Err: err})
		default:
			r.fail("", err)
		}
	case KindTxnCommit, KindTxnAbort:
		if rec.ProducerID != nil {
			r.marker(*rec.ProducerID, rec.Kind == KindTxnCommit)
		}
	case KindGroupTombstone:
		r.groupTombstone(rec.Group)
	case KindGroupMetadata:
		if rec.ValueVersion != nil && *rec.ValueVersion > maxKoPGroupValueVersion {
			r.kopFailsVersion("", rec.Group, "group", *rec.ValueVersion)
		}
		r.counts.GroupMetadata++
		e := r.groupFor(rec.Group)
		e.raw, e.rec = nil, &rec
	case KindOffsetTombstone, KindOffsetCommit:
		var part int32
		if rec.Partition != nil {
			part = *rec.Partition
		}
		k := offsetKey{group: rec.Group, topic: rec.Topic, partition: part}
		pid := int64(-1)
		if rec.ProducerID != nil {
			pid = *rec.ProducerID
		}
		if rec.Kind == KindOffsetTombstone {
			r.offsetTombstone(k, rec.Transactional, pid)
			return
		}
		if rec.ValueVersion != nil && *rec.ValueVersion > maxKoPOffsetValueVersion {
			r.kopFailsVersion("", rec.Group, "offset", *rec.ValueVersion)
		}
		r.counts.OffsetCommits++
		e := r.offsetFor(k, rec.Transactional, pid)
		*e = offsetEntry{leaderEpoch: -1, expireTS: -1, producerID: -1, pos: rec.pos}
		if r.ordering == OrderingLog {
			e.pos = r.seq
		}
		if rec.Offset != nil {
			e.offset = *rec.Offset
		}
		if rec.LeaderEpoch != nil {
			e.leaderEpoch = *rec.LeaderEpoch
		}
		if rec.Metadata != nil {
			e.metadata = *rec.Metadata
		}
		if rec.CommitTimestamp != nil {
			e.commitTS = int64(*rec.CommitTimestamp)
		}
		if rec.ExpireTimestamp != nil {
			e.expireTS = int64(*rec.ExpireTimestamp)
		}
		if rec.KeyVersion != nil {
			e.keyVersion = *rec.KeyVersion
		}
		if rec.ValueVersion != nil {
			e.valueVersion = *rec.ValueVersion
		}
		if rec.Transactional {
			e.producerID = pid
		}
	}
}

// Counts returns the counts so far.
func (r *Replayer) Counts() Counts { return r.counts }

// Err returns the first decode error met so far (all of them are non-fatal).
func (r *Replayer) Err() error { return r.firstErr }

// Result returns what KoP would load from the messages replayed so far. The Replayer can
// be fed more afterwards.
func (r *Replayer) Result() *PersistedOffsets {
	p := &PersistedOffsets{
		Partitions: []int32{r.partition},
		Counts:     r.counts,
		Errors:     slices.Clone(r.errs),
		offsets:    make(map[offsetKey]CommittedOffset, r.offsets.len()),
		groups:     make(map[string]*Group, len(r.groups)),
	}
	if r.loadFail != nil {
		p.loadFailures = map[int32]LoadFailure{r.partition: *r.loadFail}
	}
	for k, e := range r.offsets.all {
		p.offsets[k] = r.committed(k, e)
	}
	for _, pt := range r.pending {
		for k, e := range pt.all {
			p.pending = append(p.pending, r.committed(k, e))
		}
	}
	sortOffsets(p.pending)
	var d decoder
	for name, e := range r.groups {
		g := &Group{Group: name, OffsetsPartition: r.partition, HasMetadata: true}
		rec := e.rec
		if rec == nil {
			// Validated when it was applied, so this cannot fail.
			// Decoded from a copy: the group keeps views into it, and e.raw is reused.
			if err := d.decodeGroupValue(clone(e.raw)); err == nil {
				var tmp Record
				fillGroup(&tmp, &d.gval)
				rec = &tmp
			}
		}
		if rec != nil {
			g.ValueVersion, g.Generation, g.ProtocolType = rec.ValueVersion, rec.Generation, rec.ProtocolType
			g.Protocol, g.Leader, g.CurrentStateTimestamp = rec.Protocol, rec.Leader, rec.CurrentStateTimestamp
			g.Members = rec.Members
		}
		p.groups[name] = g
	}
	for k := range p.offsets {
		g := p.groups[k.group]
		if g == nil {
			g = &Group{Group: k.group, OffsetsPartition: r.partition}
			p.groups[k.group] = g
		}
		g.Offsets++
	}
	for _, g := range p.groups {
		g.State = GroupStable
		if len(g.Members) == 0 {
			g.State = GroupEmpty
		}
	}
	for name := range r.removed {
		p.removed = append(p.removed, name)
	}
	slices.Sort(p.removed)
	return p
}

func (r *Replayer) committed(k offsetKey, e *offsetEntry) CommittedOffset {
	c := CommittedOffset{
		Group: k.group, Topic: k.topic, Partition: k.partition,
		Offset: e.offset, Metadata: e.metadata, CommitTimestamp: Millis(e.commitTS),
		KeyVersion: e.keyVersion, ValueVersion: e.valueVersion, OffsetsPartition: r.partition,
		Origin: e.origin,
	}
	if e.leaderEpoch >= 0 {
		c.LeaderEpoch = ptr(e.leaderEpoch)
	}
	if e.expireTS >= 0 {
		c.ExpireTimestamp = ptr(Millis(e.expireTS))
	}
	if e.producerID >= 0 {
		c.ProducerID = ptr(e.producerID)
	}
	return c
}

// ReplayPartition reads one offsets partition through reader and replays it.
// Decode errors are counted in the result; only read errors are returned.
func ReplayPartition(ctx context.Context, reader OffsetTopicReader, partition int32, ordering TxnOrdering) (*PersistedOffsets, error) {
	r := NewReplayer(partition, ordering)
	err := reader.ReadPartition(ctx, partition, func(m Message) error {
		_ = r.ApplyMessage(m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r.Result(), nil
}

// PersistedOffsets is what an offsets topic holds after replaying it as KoP's loader does:
// offsets by group/topic/partition and groups, with counts of what was read.
type PersistedOffsets struct {
	Partitions []int32        // offsets partitions replayed, sorted
	Counts     Counts         // summed over Partitions
	Errors     []MessageError // the first undecodable messages (at most 100 per partition)

	offsets      map[offsetKey]CommittedOffset
	groups       map[string]*Group
	pending      []CommittedOffset
	removed      []string
	loadFailures map[int32]LoadFailure

	// Indexes built on first use (a PersistedOffsets is read-only once built, and may be
	// read by several goroutines).
	indexOnce sync.Once
	byGroup   map[string][]offsetKey
	pendingBy map[offsetKey]CommittedOffset
}

func (p *PersistedOffsets) index() {
	p.indexOnce.Do(func() {
		p.byGroup = make(map[string][]offsetKey, len(p.groups))
		for k := range p.offsets {
			p.byGroup[k.group] = append(p.byGroup[k.group], k)
		}
		p.pendingBy = make(map[offsetKey]CommittedOffset, len(p.pending))
		for _, c := range p.pending {
			k := offsetKey{group: c.Group, topic: c.Topic, partition: c.Partition}
			// Of several open transactions on one key, the one KoP applied last is not
			// known; the highest offset is the one a regression check must protect.
			if o, ok := p.pendingBy[k]; !ok || c.Offset > o.Offset {
				p.pendingBy[k] = c
			}
		}
	})
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
	c, ok := p.offsets[offsetKey{group: group, topic: topic, partition: partition}]
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
	c, ok := p.pendingBy[offsetKey{group: group, topic: topic, partition: partition}]
	return c, ok
}

// Lookup returns the persisted offset of a group for a topic partition. topic is compared
// as stored (KoP full name): pass NormalizeTopic(name, kafkaNamespace).
func (p *PersistedOffsets) Lookup(group, topic string, partition int32) (CommittedOffset, bool) {
	c, ok := p.offsets[offsetKey{group: group, topic: topic, partition: partition}]
	return c, ok
}

// Group returns a group, whether known by its metadata or only by its offsets.
func (p *PersistedOffsets) Group(group string) (Group, bool) {
	g, ok := p.groups[group]
	if !ok {
		return Group{}, false
	}
	return *g, true
}

// Groups returns all groups sorted by name.
func (p *PersistedOffsets) Groups() []Group {
	out := make([]Group, 0, len(p.groups))
	for _, g := range p.groups {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b Group) int { return strings.Compare(a.Group, b.Group) })
	return out
}

// GroupOffsets returns the offsets of one group sorted by topic and partition.
func (p *PersistedOffsets) GroupOffsets(group string) []CommittedOffset {
	p.index()
	keys := p.byGroup[group]
	out := make([]CommittedOffset, 0, len(keys))
	for _, k := range keys {
		out = append(out, p.offsets[k])
	}
	sortOffsets(out)
	return out
}

// Offsets returns all offsets sorted by group, topic and partition.
func (p *PersistedOffsets) Offsets() []CommittedOffset {
	out := make([]CommittedOffset, 0, len(p.offsets))
	for _, c := range p.offsets {
		out = append(out, c)
	}
	sortOffsets(out)
	return out
}

// Len returns the number of persisted offsets.
func (p *PersistedOffsets) Len() int { return len(p.offsets) }

// Pending returns transactional offsets whose transaction had neither a COMMIT nor an
// ABORT marker by the end of the replay (KoP keeps them pending, OffsetFetch ignores them).
func (p *PersistedOffsets) Pending() []CommittedOffset { return slices.Clone(p.pending) }

// RemovedGroups returns groups whose last group record is a tombstone.
func (p *PersistedOffsets) RemovedGroups() []string { return slices.Clone(p.removed) }

// Merge combines the results of different offsets partitions (a group lives in exactly
// one partition, so nothing overlaps unless the same partition is merged twice; then the
// later argument wins).
func Merge(parts ...*PersistedOffsets) *PersistedOffsets {
	out := &PersistedOffsets{offsets: map[offsetKey]CommittedOffset{}, groups: map[string]*Group{}}
	for _, p := range parts {
		if p == nil {
			continue
		}
		out.Partitions = append(out.Partitions, p.Partitions...)
		out.Counts.Add(p.Counts)
		out.Errors = append(out.Errors, p.Errors...)
		for k, c := range p.offsets {
			out.offsets[k] = c
		}
		for k, g := range p.groups {
			out.groups[k] = g
		}
		out.pending = append(out.pending, p.pending...)
		out.removed = append(out.removed, p.removed...)
		for part, f := range p.loadFailures {
			if out.loadFailures == nil {
				out.loadFailures = map[int32]LoadFailure{}
			}
			out.loadFailures[part] = f
		}
	}
	slices.Sort(out.Partitions)
	out.Partitions = slices.Compact(out.Partitions)
	sortOffsets(out.pending)
	slices.Sort(out.removed)
	out.removed = slices.Compact(out.removed)
	return out
}

func sortOffsets(s []CommittedOffset) {
	slices.SortFunc(s, func(a, b CommittedOffset) int {
		return cmp.Or(strings.Compare(a.Group, b.Group), strings.Compare(a.Topic, b.Topic),
			cmp.Compare(a.Partition, b.Partition), cmp.Compare(ptrOr(a.ProducerID), ptrOr(b.ProducerID)))
	})
}

func ptrOr(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}
