package offsets

import (
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var decoderPool = sync.Pool{New: func() any { return new(decoder) }}

// Decode decodes one offsets-topic message: the Kafka key as the producer set it (may be
// nil: the same key is inside the batch, and the decoder does not need it) and the value,
// a magic-2 record batch (or several).
//
// It always returns the records it could decode, in order; a part that fails becomes an
// undecodable record in place, and err is the first such failure (nil when there is none).
// An empty value is KoP's placeholder (GroupMetadataManager: buffer.limit() == 0).
// A batch that holds no records (Kafka keeps such batches after compaction) yields none.
func Decode(key, value []byte) (recs []Record, err error) {
	_ = key
	if len(value) == 0 {
		return []Record{{Kind: KindPlaceholder}}, nil
	}
	d := decoderPool.Get().(*decoder)
	defer decoderPool.Put(d)
	d.reset(value)
	fail := func(rec Record, e error) {
		recs = append(recs, rec)
		if err == nil {
			err = e
		}
	}
	for {
		ok, berr := d.nextBatch()
		if berr != nil {
			fail(Undecodable(berr), berr)
			return recs, err
		}
		if !ok {
			return recs, err
		}
		for {
			ok, rerr := d.nextRecord()
			if rerr != nil {
				// The record framing is broken: the rest of the batch cannot be found.
				fail(Undecodable(rerr), rerr)
				break
			}
			if !ok {
				break
			}
			rec, rerr := d.record()
			if rerr != nil {
				fail(rec, rerr)
			} else {
				recs = append(recs, rec)
			}
			if d.isControl() {
				break // Kafka reads only the first record of a control batch
			}
		}
	}
}

// record classifies and copies out the current record. On failure it returns an
// undecodable record carrying what was decoded before the failure (group, topic, ...).
func (d *decoder) record() (Record, error) {
	var rec Record
	if d.isControl() || d.isTransactional() {
		rec.ProducerID = ptr(d.batch.ProducerID)
	}
	if d.isControl() {
		if err := d.decodeControl(d.rec.Key); err != nil {
			u := Undecodable(err)
			u.ProducerID = rec.ProducerID
			return u, err
		}
		rec.Kind = KindTxnAbort
		if d.ctlCommit {
			rec.Kind = KindTxnCommit
		}
		return rec, nil
	}
	rec.Transactional = d.isTransactional()
	if d.rec.Key == nil {
		// KoP skips such records (processOffsetMessage: "entry key should not be null").
		err := &DecodeError{Part: "record " + itoa(d.ridx-1), Field: "key", Err: ErrMalformed, Detail: "null key"}
		return d.undecodable(rec, err), err
	}
	kind, err := d.decodeKey(d.rec.Key)
	if err != nil {
		return d.undecodable(rec, err), err
	}
	switch kind {
	case keyOffset:
		k := &d.okey
		rec.Group = strings.Clone(k.Group)
		rec.Topic = strings.Clone(k.Topic)
		rec.Partition = ptr(k.Partition)
		rec.KeyVersion = ptr(k.Version)
		rec.pos = d.firstKey
		if d.rec.Value == nil {
			rec.Kind = KindOffsetTombstone
			return rec, nil
		}
		if err := d.decodeOffsetValue(d.rec.Value); err != nil {
			return d.undecodable(rec, err), err
		}
		fillOffset(&rec, &d.oval)
		rec.Kind = KindOffsetCommit
		return rec, nil
	default: // keyGroup
		rec.Group = strings.Clone(d.gkey.Group)
		rec.KeyVersion = ptr(d.gkey.Version)
		if d.rec.Value == nil {
			rec.Kind = KindGroupTombstone
			return rec, nil
		}
		if err := d.decodeGroupValue(d.rec.Value); err != nil {
			return d.undecodable(rec, err), err
		}
		fillGroup(&rec, &d.gval)
		rec.Kind = KindGroupMetadata
		return rec, nil
	}
}

func (d *decoder) undecodable(partial Record, err error) Record {
	u := Undecodable(err)
	u.Group, u.Topic, u.Partition, u.KeyVersion = partial.Group, partial.Topic, partial.Partition, partial.KeyVersion
	u.ProducerID, u.Transactional = partial.ProducerID, partial.Transactional
	return u
}

func fillOffset(rec *Record, o *kmsg.OffsetCommitValue) {
	rec.ValueVersion = ptr(o.Version)
	rec.Offset = ptr(o.Offset)
	if o.LeaderEpoch >= 0 {
		rec.LeaderEpoch = ptr(o.LeaderEpoch)
	}
	rec.Metadata = ptr(strings.Clone(o.Metadata))
	rec.CommitTimestamp = ptr(Millis(o.CommitTimestamp))
	if o.ExpireTimestamp >= 0 {
		rec.ExpireTimestamp = ptr(Millis(o.ExpireTimestamp))
	}
}

func fillGroup(rec *Record, g *kmsg.GroupMetadataValue) {
	rec.ValueVersion = ptr(g.Version)
	rec.Generation = ptr(g.Generation)
	rec.ProtocolType = ptr(strings.Clone(g.ProtocolType))
	if g.Protocol != nil {
		rec.Protocol = ptr(strings.Clone(*g.Protocol))
	}
	if g.Leader != nil {
		rec.Leader = ptr(strings.Clone(*g.Leader))
	}
	if g.CurrentStateTimestamp >= 0 {
		rec.CurrentStateTimestamp = ptr(Millis(g.CurrentStateTimestamp))
	}
	rec.Members = members(g)
}

// members copies the members out of a decoded group value; for the "consumer" protocol type
// it also decodes subscriptions and assignments (a failure is noted, not fatal).
func members(g *kmsg.GroupMetadataValue) []Member {
	if len(g.Members) == 0 {
		return nil
	}
	out := make([]Member, len(g.Members))
	for i := range g.Members {
		m := &g.Members[i]
		o := &out[i]
		o.MemberID = strings.Clone(m.MemberID)
		if m.InstanceID != nil {
			o.GroupInstanceID = ptr(strings.Clone(*m.InstanceID))
		}
		o.ClientID = strings.Clone(m.ClientID)
		o.ClientHost = strings.Clone(m.ClientHost)
		o.SessionTimeoutMs = m.SessionTimeoutMillis
		if g.Version >= 1 {
			o.RebalanceTimeoutMs = ptr(m.RebalanceTimeoutMillis)
		}
		o.RawSubscription = clone(m.Subscription)
		o.RawAssignment = clone(m.Assignment)
		if g.ProtocolType == "consumer" {
			decodeConsumerProtocol(o)
		}
	}
	return out
}

// decodeConsumerProtocol decodes the consumer protocol's subscription and assignment blobs
// with kmsg. They are client data, written by every client library in its own way, so a
// failure keeps the raw bytes and a note instead of failing the record. An empty blob is
// normal (e.g. a member that has not synced yet) and is left alone.
func decodeConsumerProtocol(m *Member) {
	var notes []string
	if len(m.RawSubscription) > 0 {
		var s kmsg.ConsumerMemberMetadata
		if err := s.ReadFrom(m.RawSubscription); err != nil || s.Version < 0 {
			notes = append(notes, "subscription: "+protocolErr(err, s.Version))
		} else {
			m.Subscription = s.Topics
		}
	}
	if len(m.RawAssignment) > 0 {
		var a kmsg.ConsumerMemberAssignment
		if err := a.ReadFrom(m.RawAssignment); err != nil || a.Version < 0 {
			notes = append(notes, "assignment: "+protocolErr(err, a.Version))
		} else {
			m.Assignment = make([]TopicPartitions, len(a.Topics))
			for i, t := range a.Topics {
				parts := t.Partitions
				if parts == nil {
					parts = []int32{}
				}
				m.Assignment[i] = TopicPartitions{Topic: t.Topic, Partitions: parts}
			}
		}
	}
	m.ProtocolError = strings.Join(notes, "; ")
}

func protocolErr(err error, version int16) string {
	if err != nil {
		return ErrTruncated.Error()
	}
	return ErrUnknownVersion.Error() + " " + itoa(int(version))
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}
