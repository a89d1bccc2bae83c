package loader

import (
	"context"
	"errors"
	"slices"
	"strconv"

	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
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
	// kept: the kept-translation mark of the message being applied; keptN its records seen.
	kept  *KeptMark
	keptN int
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
