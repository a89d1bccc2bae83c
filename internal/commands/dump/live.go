package dump

import (
	"slices"
	"strconv"

	"github.com/kop-offsets/kop-offsets/internal/offsets"
)

// liveState replays the partitions read by --compacted with offsets.Replayer, the way KoP's
// loader does, and remembers for each live key the message that last wrote it. Memory is
// proportional to the live keys.
type liveState struct {
	replayers map[int32]*offsets.Replayer
	offsetMsg map[string]offsets.Message // offsetKey -> message of the last commit
	groupMsg  map[string]offsets.Message // group -> message of the last group record
	raw       bool
}

func newLiveState(raw bool) *liveState {
	return &liveState{replayers: map[int32]*offsets.Replayer{}, offsetMsg: map[string]offsets.Message{},
		groupMsg: map[string]offsets.Message{}, raw: raw}
}

func offsetKey(p int32, group, topic string, partition int32) string {
	return strconv.Itoa(int(p)) + "\x00" + group + "\x00" + topic + "\x00" + strconv.Itoa(int(partition))
}

func groupKey(p int32, group string) string { return strconv.Itoa(int(p)) + "\x00" + group }

// apply replays one decoded record of m. Messages KoP skips (empty value, no key) are skipped.
func (s *liveState) apply(m offsets.Message, rec *offsets.Record) {
	if len(m.Value) == 0 || len(m.Key) == 0 {
		return
	}
	r := s.replayers[m.Partition]
	if r == nil {
		r = offsets.NewReplayer(m.Partition, offsets.OrderingKoP)
		s.replayers[m.Partition] = r
	}
	r.Apply(*rec)
	if !s.raw {
		m.Key, m.Value = nil, nil
	}
	var part int32
	if rec.Partition != nil {
		part = *rec.Partition
	}
	switch rec.Kind {
	case offsets.KindOffsetCommit:
		s.offsetMsg[offsetKey(m.Partition, rec.Group, rec.Topic, part)] = m
	case offsets.KindGroupMetadata:
		s.groupMsg[groupKey(m.Partition, rec.Group)] = m
	case offsets.KindGroupTombstone:
		delete(s.groupMsg, groupKey(m.Partition, rec.Group))
	}
	// Offset tombstones keep the entry: a pending transactional value may still refer to
	// it, and the live state decides what is printed.
}

// emit calls fn for the live state, partition by partition, group by group: the group's
// metadata record first, then its offsets by topic and partition.
func (s *liveState) emit(fn func(offsets.Message, *offsets.Record) error) error {
	parts := make([]int32, 0, len(s.replayers))
	for p := range s.replayers {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	for _, p := range parts {
		res := s.replayers[p].Result()
		for _, g := range res.Groups() {
			if g.HasMetadata {
				m := s.groupMsg[groupKey(p, g.Group)]
				m.Partition = p
				if err := fn(m, groupRecord(g)); err != nil {
					return err
				}
			}
			for _, c := range res.GroupOffsets(g.Group) {
				m := s.offsetMsg[offsetKey(p, c.Group, c.Topic, c.Partition)]
				m.Partition = p
				if err := fn(m, offsetRecord(c)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func groupRecord(g offsets.Group) *offsets.Record {
	kv := int16(2)
	return &offsets.Record{Kind: offsets.KindGroupMetadata, Group: g.Group, KeyVersion: &kv,
		ValueVersion: g.ValueVersion, Generation: g.Generation, ProtocolType: g.ProtocolType,
		Protocol: g.Protocol, Leader: g.Leader, CurrentStateTimestamp: g.CurrentStateTimestamp, Members: g.Members}
}

func offsetRecord(c offsets.CommittedOffset) *offsets.Record {
	ts := c.CommitTimestamp
	r := &offsets.Record{Kind: offsets.KindOffsetCommit, Group: c.Group, Topic: c.Topic,
		Partition: &c.Partition, Offset: &c.Offset, LeaderEpoch: c.LeaderEpoch, Metadata: &c.Metadata,
		CommitTimestamp: &ts, ExpireTimestamp: c.ExpireTimestamp, KeyVersion: &c.KeyVersion,
		ValueVersion: &c.ValueVersion, ProducerID: c.ProducerID, Transactional: c.ProducerID != nil}
	return r
}
