package offsetlog

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
	d.reset(value)
	recs, err = d.decodeAll()
	// Keep no views into value in the pool, and share no stores between calls: a kept
	// record pins only memory of its own message.
	d.rec, d.batch.Records, d.recs, d.msg, d.stores = kmsg.Record{}, nil, nil, nil, nil
	decoderPool.Put(d)
	return recs, err
}

func (d *decoder) decodeAll() (recs []Record, err error) {
	for {
		ok, berr := d.nextBatch()
		if berr != nil {
			if err == nil {
				err = berr
			}
			return append(recs, Undecodable(berr)), err
		}
		if !ok {
			return recs, err
		}
		if recs == nil && d.nrec > 0 {
			// One allocation for the records of a message of one batch; a corrupt count
			// cannot make it large (a record takes at least 7 bytes).
			n := min(d.nrec, len(d.recs)/7+1, 64)
			if d.isControl() {
				n = 1
			}
			recs = make([]Record, 0, n)
		}
		for {
			ok, rerr := d.nextRecord()
			if rerr != nil {
				// The record framing is broken: the rest of the batch cannot be found.
				if err == nil {
					err = rerr
				}
				recs = append(recs, Undecodable(rerr))
				break
			}
			if !ok {
				break
			}
			if len(recs) < cap(recs) {
				recs = recs[:len(recs)+1] // already zero: no need to clear it again
			} else {
				recs = append(recs, Record{})
			}
			if rerr := d.record(&recs[len(recs)-1]); rerr != nil && err == nil {
				err = rerr
			}
			if d.isControl() {
				break // Kafka reads only the first record of a control batch
			}
		}
	}
}

// recStore holds what the pointer fields of one decoded offset (or control) record point
// to, so that such a record costs no allocation of its own: the stores of a batch are
// allocated together. Group records have a groupStore each.
type recStore struct {
	metadata                 string
	offset, producerID       int64
	commitTS, expireTS       Millis
	partition, leaderEpoch   int32
	keyVersion, valueVersion int16
}

type groupStore struct {
	protocolType, protocol, leader string
	producerID                     int64
	stateTS                        Millis
	generation                     int32
	keyVersion, valueVersion       int16
}

// store returns a fresh recStore, from a chunk sized for the rest of the current batch.
func (d *decoder) store() *recStore {
	if len(d.stores) == 0 {
		n := 1
		if !d.isControl() {
			n = min(max(d.nrec-d.ridx+1, 1), (len(d.recs)-d.rpos)/7+1, 64)
		}
		d.stores = make([]recStore, n)
	}
	st := &d.stores[0]
	d.stores = d.stores[1:]
	return st
}

// own returns copies of strings that view scratch memory, in one allocation. A string
// equal to the group or topic of the previous record is shared instead of copied (strings
// are immutable; KoP writes a commit request as one batch of one group).
func (d *decoder) own(group, topic, metadata string) (string, string, string) {
	n := len(metadata)
	newGroup, newTopic := group != d.lastGroup, topic != d.lastTopic
	if newGroup {
		n += len(group)
	}
	if newTopic {
		n += len(topic)
	}
	if n == 0 {
		return d.lastGroup, d.lastTopic, ""
	}
	buf := make([]byte, 0, n)
	take := func(s string) string {
		i := len(buf)
		buf = append(buf, s...)
		return view(buf[i:])
	}
	if newGroup {
		d.lastGroup = take(group)
	}
	if newTopic {
		d.lastTopic = take(topic)
	}
	return d.lastGroup, d.lastTopic, take(metadata)
}

// record classifies and copies out the current record into rec, a zero Record. On failure
// rec is an undecodable record carrying what was decoded before the failure (group,
// topic, ...).
func (d *decoder) record(rec *Record) error {
	if d.isControl() {
		st := d.store()
		d.producer(rec, &st.producerID)
		if err := d.decodeControl(d.rec.Key); err != nil {
			d.undecodable(rec, err)
			return err
		}
		rec.Kind = KindTxnAbort
		if d.ctlCommit {
			rec.Kind = KindTxnCommit
		}
		return nil
	}
	rec.Transactional = d.isTransactional()
	var kind keyKind
	err := error(nil)
	if d.rec.Key == nil {
		// KoP skips such records (processOffsetMessage: "entry key should not be null").
		err = &DecodeError{Part: "record " + itoa(d.ridx-1), Field: "key", Err: ErrMalformed, Detail: "null key"}
	} else {
		kind, err = d.decodeKey(d.rec.Key)
	}
	if err != nil {
		d.producer(rec, &d.store().producerID)
		d.undecodable(rec, err)
		return err
	}
	if kind == keyGroup {
		return d.groupRecord(rec)
	}
	st := d.store()
	d.producer(rec, &st.producerID)
	k := &d.okey
	st.partition, st.keyVersion = k.Partition, k.Version
	rec.Partition, rec.KeyVersion = &st.partition, &st.keyVersion
	rec.pos = d.firstKey
	if d.rec.Value == nil {
		rec.Group, rec.Topic, _ = d.own(k.Group, k.Topic, "")
		rec.Kind = KindOffsetTombstone
		return nil
	}
	if err := d.decodeOffsetValue(d.rec.Value); err != nil {
		rec.Group, rec.Topic, _ = d.own(k.Group, k.Topic, "")
		d.undecodable(rec, err)
		return err
	}
	rec.Group, rec.Topic, st.metadata = d.own(k.Group, k.Topic, d.oval.Metadata)
	fillOffset(rec, st, &d.oval)
	rec.Kind = KindOffsetCommit
	return nil
}

func (d *decoder) groupRecord(rec *Record) error {
	st := new(groupStore)
	d.producer(rec, &st.producerID)
	rec.Group, _, _ = d.own(d.gkey.Group, d.lastTopic, "")
	st.keyVersion = d.gkey.Version
	rec.KeyVersion = &st.keyVersion
	if d.rec.Value == nil {
		rec.Kind = KindGroupTombstone
		return nil
	}
	// Decode a copy of the value: every string and byte slice of the group views it,
	// so the record costs a few allocations whatever its number of members.
	if err := d.decodeGroupValue(clone(d.rec.Value)); err != nil {
		d.undecodable(rec, err)
		return err
	}
	fillGroupInto(rec, st, &d.gval)
	rec.Kind = KindGroupMetadata
	return nil
}

// producer sets the producer id of a record of a transactional or control batch; p is
// where it is stored.
func (d *decoder) producer(rec *Record, p *int64) {
	if d.isControl() || d.isTransactional() {
		*p = d.batch.ProducerID
		rec.ProducerID = p
	}
}

// undecodable turns the partial record rec into an undecodable one that keeps the group,
// topic, partition, key version, producer id and transactional flag decoded so far.
func (d *decoder) undecodable(rec *Record, err error) {
	u := Undecodable(err)
	u.Group, u.Topic, u.Partition, u.KeyVersion = rec.Group, rec.Topic, rec.Partition, rec.KeyVersion
	u.ProducerID, u.Transactional = rec.ProducerID, rec.Transactional
	*rec = u
}

// fillOffset fills the value fields of an offset commit; o's strings must be owned.
func fillOffset(rec *Record, st *recStore, o *kmsg.OffsetCommitValue) {
	st.valueVersion, st.offset = o.Version, o.Offset
	rec.ValueVersion, rec.Offset = &st.valueVersion, &st.offset
	if o.LeaderEpoch >= 0 {
		st.leaderEpoch = o.LeaderEpoch
		rec.LeaderEpoch = &st.leaderEpoch
	}
	rec.Metadata = &st.metadata
	st.commitTS = Millis(o.CommitTimestamp)
	rec.CommitTimestamp = &st.commitTS
	if o.ExpireTimestamp >= 0 {
		st.expireTS = Millis(o.ExpireTimestamp)
		rec.ExpireTimestamp = &st.expireTS
	}
}

// fillGroup fills the value fields of a group metadata record. g's strings and byte slices
// must view memory that nothing will change: they are kept, not copied.
func fillGroup(rec *Record, g *kmsg.GroupMetadataValue) { fillGroupInto(rec, new(groupStore), g) }

// fillGroupInto is fillGroup with the record's store.
func fillGroupInto(rec *Record, st *groupStore, g *kmsg.GroupMetadataValue) {
	st.valueVersion, st.generation, st.protocolType = g.Version, g.Generation, g.ProtocolType
	rec.ValueVersion, rec.Generation, rec.ProtocolType = &st.valueVersion, &st.generation, &st.protocolType
	if g.Protocol != nil {
		st.protocol = *g.Protocol
		rec.Protocol = &st.protocol
	}
	if g.Leader != nil {
		st.leader = *g.Leader
		rec.Leader = &st.leader
	}
	if g.CurrentStateTimestamp >= 0 {
		st.stateTS = Millis(g.CurrentStateTimestamp)
		rec.CurrentStateTimestamp = &st.stateTS
	}
	rec.Members = members(g)
}

// members copies the members out of a decoded group value whose strings and byte slices
// view stable memory (they are kept, not copied); for the "consumer" protocol type it also
// decodes subscriptions and assignments (a failure is noted, not fatal).
func members(g *kmsg.GroupMetadataValue) []Member {
	if len(g.Members) == 0 {
		return []Member{} // a group record without members says so: "members": []
	}
	out := make([]Member, len(g.Members))
	// what GroupInstanceID and RebalanceTimeoutMs point to, one allocation for all members
	type memberStore struct {
		instanceID       string
		rebalanceTimeout int32
	}
	st := make([]memberStore, len(g.Members))
	for i := range g.Members {
		m := &g.Members[i]
		o := &out[i]
		o.MemberID = m.MemberID
		if m.InstanceID != nil {
			st[i].instanceID = *m.InstanceID
			o.GroupInstanceID = &st[i].instanceID
		}
		o.ClientID = m.ClientID
		o.ClientHost = m.ClientHost
		o.SessionTimeoutMs = m.SessionTimeoutMillis
		if g.Version >= 1 {
			st[i].rebalanceTimeout = m.RebalanceTimeoutMillis
			o.RebalanceTimeoutMs = &st[i].rebalanceTimeout
		}
		o.RawSubscription = m.Subscription
		o.RawAssignment = m.Assignment
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
