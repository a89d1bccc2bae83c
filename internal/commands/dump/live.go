package dump

import (
	"slices"

	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
)

// liveState replays the partitions read by --compacted with loader.Replayer, the way KoP's
// loader does; each Replayer also keeps, for each live key, the message that last wrote it
// (loader.Replayer.KeepMessages). Nothing else is kept: memory is the replayers' compact
// state, proportional to the live keys.
type liveState struct {
	replayers map[int32]*loader.Replayer
	raw       bool
}

func newLiveState(raw bool) *liveState {
	return &liveState{replayers: map[int32]*loader.Replayer{}, raw: raw}
}

// apply replays m and returns its undecodable records, which --compacted prints as they are
// met. Only a message the replay found something wrong with (or one KoP skips for its
// missing key) is decoded a second time to find them.
func (s *liveState) apply(m loader.Message) []offsetlog.Record {
	r := s.replayers[m.Partition]
	if r == nil {
		r = loader.NewReplayer(m.Partition, loader.OrderingKoP)
		r.KeepMessages(s.raw)
		s.replayers[m.Partition] = r
	}
	before := r.Counts()
	err := r.ApplyMessage(m)
	after := r.Counts()
	if len(m.Value) == 0 || len(m.Key) > 0 && err == nil && after.Undecodable == before.Undecodable &&
		after.BadCRC == before.BadCRC && after.KeylessRecords == before.KeylessRecords &&
		after.UnknownControl == before.UnknownControl {
		return nil
	}
	recs, _ := offsetlog.Decode(m.Key, m.Value)
	return slices.DeleteFunc(recs, func(r offsetlog.Record) bool { return r.Kind != offsetlog.KindUndecodable })
}

// emit calls fn for the live state, partition by partition, group by group: the group's
// metadata record first, then its offsets by topic and partition. Each partition's state is
// dropped once written.
func (s *liveState) emit(fn func(loader.Message, *offsetlog.Record) error) error {
	parts := make([]int32, 0, len(s.replayers))
	for p := range s.replayers {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	var rec offsetlog.Record // reused: fn is done with a record before the next
	for _, p := range parts {
		err := s.replayers[p].EachLive(func(m loader.Message, g *loader.Group, c *loader.CommittedOffset) error {
			if g != nil {
				return fn(m, groupRecord(g))
			}
			offsetRecord(&rec, c)
			return fn(m, &rec)
		})
		delete(s.replayers, p)
		if err != nil {
			return err
		}
	}
	return nil
}

func groupRecord(g *loader.Group) *offsetlog.Record {
	kv := int16(2)
	return &offsetlog.Record{Kind: offsetlog.KindGroupMetadata, Group: g.Group, KeyVersion: &kv,
		ValueVersion: g.ValueVersion, Generation: g.Generation, ProtocolType: g.ProtocolType,
		Protocol: g.Protocol, Leader: g.Leader, CurrentStateTimestamp: g.CurrentStateTimestamp, Members: g.Members}
}

// offsetRecord makes r the record of c (r points into c).
func offsetRecord(r *offsetlog.Record, c *loader.CommittedOffset) {
	*r = offsetlog.Record{Kind: offsetlog.KindOffsetCommit, Group: c.Group, Topic: c.Topic,
		Partition: &c.Partition, Offset: &c.Offset, LeaderEpoch: c.LeaderEpoch, Metadata: &c.Metadata,
		CommitTimestamp: &c.CommitTimestamp, ExpireTimestamp: c.ExpireTimestamp, KeyVersion: &c.KeyVersion,
		ValueVersion: &c.ValueVersion, ProducerID: c.ProducerID, Transactional: c.ProducerID != nil}
}
