package loader

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
	"iter"
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
func (c Counts) ByKind() map[offsetlog.Kind]int64 {
	return map[offsetlog.Kind]int64{
		offsetlog.KindOffsetCommit: c.OffsetCommits, offsetlog.KindOffsetTombstone: c.OffsetTombstones,
		offsetlog.KindGroupMetadata: c.GroupMetadata, offsetlog.KindGroupTombstone: c.GroupTombstones,
		offsetlog.KindTxnCommit: c.TxnCommits, offsetlog.KindTxnAbort: c.TxnAborts,
		offsetlog.KindPlaceholder: c.Placeholders, offsetlog.KindUndecodable: c.Undecodable,
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
	return "offsets partition " + strconv.Itoa(int(f.Partition)) + ": KoP cannot load it: message " + f.MessageID + ": " + f.Reason
}

// MessageError is an undecodable message (or record) met during a replay.
type MessageError struct {
	Partition int32
	MessageID string
	Err       error
}

func (e MessageError) Error() string {
	return "offsets partition " + strconv.Itoa(int(e.Partition)) + " message " + e.MessageID + ": " + e.Err.Error()
}

func (e MessageError) Unwrap() error { return e.Err }

// CommittedOffset is one persisted offset.
type CommittedOffset struct {
	Group            string            `json:"group"`
	Topic            string            `json:"topic"` // as stored: KoP full name
	Partition        int32             `json:"partition"`
	Offset           int64             `json:"offset"`
	LeaderEpoch      *int32            `json:"leaderEpoch,omitempty"`
	Metadata         string            `json:"metadata"`
	CommitTimestamp  offsetlog.Millis  `json:"commitTimestamp"`
	ExpireTimestamp  *offsetlog.Millis `json:"expireTimestamp,omitempty"`
	KeyVersion       int16             `json:"keyVersion"`
	ValueVersion     int16             `json:"valueVersion"`
	ProducerID       *int64            `json:"producerId,omitempty"` // set when it came from a transaction
	OffsetsPartition int32             `json:"offsetsPartition"`
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
	HasMetadata           bool               `json:"hasMetadata"`
	ValueVersion          *int16             `json:"valueVersion,omitempty"`
	Generation            *int32             `json:"generation,omitempty"`
	ProtocolType          *string            `json:"protocolType,omitempty"`
	Protocol              *string            `json:"protocol,omitempty"`
	Leader                *string            `json:"leader,omitempty"`
	CurrentStateTimestamp *offsetlog.Millis  `json:"currentStateTimestamp,omitempty"`
	Members               []offsetlog.Member `json:"members,omitzero"` // [] for a group record without members
	Offsets               int                `json:"offsets"`          // number of persisted offsets
}

// Replayer replays one offsets partition the way KoP's loader does. Feed it the
// partition's messages (ApplyMessage) or decoded records (Apply) in log order, then call
// Result (a snapshot) or Finish (no copy). Memory is proportional to the live keys and the
// names they use (a group, topic or producer nothing refers to any more is forgotten), about
// a hundred bytes per key; ApplyMessage allocates only for keys it has not seen and for
// group records. A Replayer is not safe for concurrent use.
type Replayer struct {
	partition int32
	ordering  TxnOrdering

	d        offsetlog.Stream
	st       *state
	counts   Counts
	seq      int64 // batches (ApplyMessage) or records (Apply) seen: the log position
	errs     []MessageError
	firstErr error
	loadFail *LoadFailure
	origin   uint16 // ReplicatedFrom of the message being applied (state.origins)
	msg      uint32 // the message being applied, when messages are kept
}

// NewReplayer returns a Replayer for one offsets partition.
func NewReplayer(partition int32, ordering TxnOrdering) *Replayer {
	return &Replayer{partition: partition, ordering: ordering, st: newState(partition)}
}

// KeepMessages makes the Replayer remember, for each live offset and group, the message that
// last wrote it (EachLive returns it): its id and publish time, and with payload its key and
// value too. Call it before the first message.
func (r *Replayer) KeepMessages(payload bool) {
	r.st.msgs = &messages{payload: payload, list: make([]keptMsg, 1)}
	if payload {
		r.st.msgs.kv = make([][2][]byte, 1)
	}
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
	r.kopFails(id, "group "+strconv.Quote(group)+": "+kind+" value v"+strconv.Itoa(int(v))+" (KoP reads v0 and v1 only)")
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
	r.origin = 0
	if m.ReplicatedFrom != "" {
		r.origin = r.st.origin(m.ReplicatedFrom)
	}
	if ms := r.st.msgs; ms != nil {
		r.msg = ms.add(m)
		ms.ref(r.msg) // held while the message is applied
		defer func() { ms.unref(r.msg); r.msg = 0 }()
	}
	d := &r.d
	d.Reset(m.Value, true)
	crcBefore := d.BadCRC()
	defer func() { r.counts.BadCRC += d.BadCRC() - crcBefore }()
	var first error
	fail := func(err error) {
		r.fail(m.MessageID, err)
		if first == nil {
			first = err
		}
	}
	for {
		ok, err := d.NextBatch()
		if err != nil {
			fail(err)
			return first
		}
		if !ok {
			return first
		}
		r.seq++
		txn := d.Transactional()
		for {
			ok, err := d.NextRecord()
			if err != nil {
				fail(err)
				break
			}
			if !ok {
				break
			}
			if d.Control() {
				commit, err := d.ControlCommit()
				switch {
				case errors.Is(err, offsetlog.ErrUnknownControlType):
					r.counts.UnknownControl++
					r.marker(d.ProducerID(), false)
				case err != nil:
					fail(err)
				default:
					r.marker(d.ProducerID(), commit)
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
	if d.Key() == nil {
		r.counts.KeylessRecords++ // KoP skips records without a key
		return nil
	}
	isGroup, err := d.DecodeKey()
	if err != nil {
		return err
	}
	pid := d.ProducerID()
	if isGroup {
		gkey := d.GroupKey()
		if d.Value() == nil {
			r.groupTombstone(gkey.Group)
			return nil
		}
		gval, err := d.DecodeGroupValue()
		if err != nil {
			return err
		}
		if v := gval.Version; v > maxKoPGroupValueVersion {
			r.kopFailsVersion(id, gkey.Group, "group", v)
		}
		r.counts.GroupMetadata++
		r.groupRecord(gkey.Group, bytes.Clone(d.Value()), nil)
		return nil
	}
	okey := d.OffsetKey()
	if d.Value() == nil {
		r.offsetTombstone(okey.Group, okey.Topic, okey.Partition, txn, pid)
		return nil
	}
	o, err := d.DecodeOffsetValue()
	if err != nil {
		return err
	}
	if v := o.Version; v > maxKoPOffsetValueVersion {
		r.kopFailsVersion(id, okey.Group, "offset", v)
	}
	pos := d.FirstKey()
	if r.ordering == OrderingLog {
		pos = r.seq
	}
	r.offsetCommit(okey.Group, okey.Topic, txn, pid, entry{key: entryKey{partition: okey.Partition},
		offset: o.Offset, commitTS: o.CommitTimestamp, expireTS: o.ExpireTimestamp, leaderEpoch: o.LeaderEpoch,
		keyVersion: int8(okey.Version), valueVersion: int8(o.Version), pos: position(pos)}, o.Metadata)
	return nil
}

// offsetCommit stores e (its key's partition set) for group and topic, which may view
// scratch memory: in the loaded offsets, or the producer's pending ones when txn.
func (r *Replayer) offsetCommit(group, topic string, txn bool, pid int64, e entry, metadata string) {
	r.counts.OffsetCommits++
	s := r.st
	e.key.group, e.key.topic, e.origin = s.addGroup(group), s.addTopic(topic), r.origin
	if txn {
		pe := s.pendingFor(pid, e.key)
		pe.entry = e
		if pe.metadata != metadata {
			pe.metadata = strings.Clone(metadata)
		}
		if s.msgs != nil {
			s.msgs.ref(r.msg)
			s.msgs.unref(pe.msg)
			pe.msg = r.msg
		}
		return
	}
	slot := s.loadedSlot(e.key)
	*s.loaded.at(slot) = e
	s.loaded.setMetadata(slot, metadata)
	s.loaded.setPID(slot, -1)
	s.setMsg(slot, r.msg)
}

func (r *Replayer) offsetTombstone(group, topic string, partition int32, txn bool, pid int64) {
	r.counts.OffsetTombstones++
	k, ok := r.st.key(group, topic, partition)
	if !ok {
		return
	}
	if txn {
		r.st.dropPending(pid, k)
		return
	}
	r.st.deleteLoaded(k)
}

// groupRecord applies a group value (raw, never changed afterwards, or the decoded rec).
func (r *Replayer) groupRecord(group string, raw []byte, rec *offsetlog.Record) {
	s := r.st
	id := s.addGroup(group)
	g := &s.ginfo[id]
	g.meta, g.removed = &groupMeta{raw: raw, rec: rec}, false
	if s.msgs != nil {
		s.msgs.ref(r.msg)
		s.msgs.unref(g.msg)
		g.msg = r.msg
	}
}

func (r *Replayer) groupTombstone(group string) {
	r.counts.GroupTombstones++
	s := r.st
	id, ok := s.groups.lookup(group)
	if !ok {
		return // nothing to forget
	}
	g := &s.ginfo[id]
	g.meta, g.removed = nil, true
	if s.msgs != nil {
		s.msgs.unref(g.msg)
		g.msg = 0
	}
	s.gcGroup(id)
}

// marker applies a COMMIT or ABORT marker of a producer.
func (r *Replayer) marker(pid int64, commit bool) {
	if commit {
		r.counts.TxnCommits++
	} else {
		r.counts.TxnAborts++
	}
	r.st.marker(pid, commit)
}

// Apply replays one decoded record (from Decode), in log order. Use it when the records
// are decoded anyway; ApplyMessage is the fast path. Apply does not count messages or bytes.
func (r *Replayer) Apply(rec offsetlog.Record) {
	r.seq++
	switch rec.Kind {
	case offsetlog.KindPlaceholder:
		r.counts.Placeholders++
	case offsetlog.KindUndecodable:
		err := rec.Err
		if err == nil {
			err = &offsetlog.DecodeError{Err: offsetlog.ErrMalformed, Detail: rec.Error}
		}
		var de *offsetlog.DecodeError
		switch {
		case errors.Is(err, offsetlog.ErrUnknownControlType) && rec.ProducerID != nil:
			r.counts.UnknownControl++ // KoP drops the pending offsets, as for ABORT
			r.marker(*rec.ProducerID, false)
		case errors.As(err, &de) && de.Field == "key" && de.Detail == "null key":
			r.counts.KeylessRecords++ // KoP skips records without a key
		case errors.Is(err, offsetlog.ErrBadCRC):
			// Decode rejects the batch, KoP would load it: counted, not a load failure.
			r.counts.BadCRC++
			r.counts.Undecodable++
			r.errs = append(r.errs, MessageError{Partition: r.partition, Err: err})
		default:
			r.fail("", err)
		}
	case offsetlog.KindTxnCommit, offsetlog.KindTxnAbort:
		if rec.ProducerID != nil {
			r.marker(*rec.ProducerID, rec.Kind == offsetlog.KindTxnCommit)
		}
	case offsetlog.KindGroupTombstone:
		r.groupTombstone(rec.Group)
	case offsetlog.KindGroupMetadata:
		if rec.ValueVersion != nil && *rec.ValueVersion > maxKoPGroupValueVersion {
			r.kopFailsVersion("", rec.Group, "group", *rec.ValueVersion)
		}
		r.counts.GroupMetadata++
		r.groupRecord(rec.Group, nil, &rec)
	case offsetlog.KindOffsetTombstone, offsetlog.KindOffsetCommit:
		r.applyOffset(&rec)
	}
}

// applyOffset applies a decoded offset commit or tombstone.
func (r *Replayer) applyOffset(rec *offsetlog.Record) {
	var part int32
	if rec.Partition != nil {
		part = *rec.Partition
	}
	pid := int64(-1)
	if rec.ProducerID != nil {
		pid = *rec.ProducerID
	}
	if rec.Kind == offsetlog.KindOffsetTombstone {
		r.offsetTombstone(rec.Group, rec.Topic, part, rec.Transactional, pid)
		return
	}
	if rec.ValueVersion != nil && *rec.ValueVersion > maxKoPOffsetValueVersion {
		r.kopFailsVersion("", rec.Group, "offset", *rec.ValueVersion)
	}
	e := entry{key: entryKey{partition: part}, leaderEpoch: -1, expireTS: -1, pos: position(rec.LoadPosition())}
	if r.ordering == OrderingLog {
		e.pos = position(r.seq)
	}
	if rec.Offset != nil {
		e.offset = *rec.Offset
	}
	if rec.LeaderEpoch != nil {
		e.leaderEpoch = *rec.LeaderEpoch
	}
	var metadata string
	if rec.Metadata != nil {
		metadata = *rec.Metadata
	}
	if rec.CommitTimestamp != nil {
		e.commitTS = int64(*rec.CommitTimestamp)
	}
	if rec.ExpireTimestamp != nil {
		e.expireTS = int64(*rec.ExpireTimestamp)
	}
	if rec.KeyVersion != nil {
		e.keyVersion = int8(*rec.KeyVersion)
	}
	if rec.ValueVersion != nil {
		e.valueVersion = int8(*rec.ValueVersion)
	}
	r.offsetCommit(rec.Group, rec.Topic, rec.Transactional, pid, e, metadata)
}

// Counts returns the counts so far.
func (r *Replayer) Counts() Counts { return r.counts }

// Err returns the first decode error met so far (all of them are non-fatal).
func (r *Replayer) Err() error { return r.firstErr }

// Result returns what KoP would load from the messages replayed so far: a snapshot (one
// copy of the compact state, no per-key allocation). The Replayer can be fed more afterwards.
func (r *Replayer) Result() *PersistedOffsets {
	return r.result(r.st.clone())
}

// View returns what KoP would load from the messages replayed so far, as Result does, but
// over the Replayer's own state instead of a copy: it is valid only until the Replayer is
// fed again, and must not be read concurrently with feeding it. For a caller that alternates
// feeding and reading (watch), it saves the second copy of every live key.
func (r *Replayer) View() *PersistedOffsets {
	st := r.st
	st.resetIndex(true)
	msgs := st.msgs
	p := r.result(st)
	st.msgs = msgs // still the Replayer's
	return p
}

// Finish returns what KoP would load, as Result does, without copying: the state moves into
// the result and the Replayer starts over, empty.
func (r *Replayer) Finish() *PersistedOffsets {
	r.st.resetIndex(false) // a View's index, if any, is of an earlier state
	p := r.result(r.st)
	*r = *NewReplayer(r.partition, r.ordering)
	return p
}

func (r *Replayer) result(st *state) *PersistedOffsets {
	st.msgs = nil // kept for EachLive only
	p := &PersistedOffsets{
		Partitions: []int32{r.partition},
		Counts:     r.counts,
		Errors:     slices.Clone(r.errs),
		parts:      []*state{st},
	}
	if r.loadFail != nil {
		p.loadFailures = map[int32]LoadFailure{r.partition: *r.loadFail}
	}
	return p
}

// EachLive calls fn for the live state in order: the groups by name, each with its group
// record first (g, when it has metadata) and then its loaded offsets by topic and partition
// (c); m is the message that last wrote the record (with KeepMessages; else only its
// Partition is set). Transactional offsets still pending are not live. It stops at fn's
// first error and returns it. The Replayer must not be fed during the call.
func (r *Replayer) EachLive(fn func(m Message, g *Group, c *CommittedOffset) error) error {
	s := r.st
	s.buildIndex()
	defer func() { s.order, s.gfirst, s.gnames = nil, nil, nil }()
	msg := func(id uint32) Message {
		if s.msgs == nil {
			return Message{Partition: s.partition}
		}
		return s.msgs.message(id, s.partition)
	}
	for _, id := range s.gnames {
		if gi := &s.ginfo[id]; gi.hasMetadata() {
			g := s.group(id)
			if err := fn(msg(gi.msg), &g, nil); err != nil {
				return err
			}
		}
		for _, slot := range s.groupSlots(id) {
			c := s.loadedOffset(slot)
			if err := fn(msg(s.loaded.msg(slot)), nil, &c); err != nil {
				return err
			}
		}
	}
	return nil
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
	return r.Finish(), nil
}

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
			cmp.Compare(a.Partition, b.Partition), cmp.Compare(ptrOr(a.ProducerID), ptrOr(b.ProducerID)))
	})
}

func ptrOr(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}
