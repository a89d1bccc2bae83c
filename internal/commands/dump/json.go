package dump

import (
	"encoding/base64"

	"github.com/kop-offsets/kop-offsets/internal/commands/recordio"
	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
	"github.com/kop-offsets/kop-offsets/internal/output"
)

// AppendJSON writes r as encoding/json does (recordio's JSON and NDJSON), byte for byte, for
// the records a large dump is made of: offset commits and tombstones whose strings need no
// escaping. ok is false for anything else, which encoding/json writes. At a million records
// encoding/json's reflection and its second, indenting pass were most of dump's CPU.
func (r *Record) AppendJSON(b []byte, indent bool) (_ []byte, ok bool) {
	rec := &r.Record
	if (rec.Kind != offsetlog.KindOffsetCommit && rec.Kind != offsetlog.KindOffsetTombstone) ||
		rec.Generation != nil || rec.ProtocolType != nil || rec.Protocol != nil || rec.Leader != nil ||
		rec.CurrentStateTimestamp != nil || rec.Members != nil || rec.Error != "" ||
		!plain(r.Tenant) || !plain(r.Cluster) || !plain(r.MessageID) || !plain(rec.Group) || !plain(rec.Topic) ||
		(rec.Metadata != nil && !plain(*rec.Metadata)) {
		return b, false
	}
	w := output.JSONWriter{B: b, Times: r.times}
	if indent {
		w.Prefix, w.Indent = recordio.ElementPrefix, "  "
	}
	w.Open()
	if r.Tenant != "" {
		w.String("tenant", r.Tenant)
	}
	w.String("cluster", r.Cluster)
	w.Int("offsetsPartition", int64(r.OffsetsPartition))
	if r.MessageID != "" {
		w.String("messageId", r.MessageID)
	}
	if r.PublishTime != nil {
		w.Time("publishTime", r.PublishTime.Time)
	}
	w.String("kind", string(rec.Kind))
	if rec.Group != "" {
		w.String("group", rec.Group)
	}
	if rec.Topic != "" {
		w.String("topic", rec.Topic)
	}
	if rec.Partition != nil {
		w.Int("partition", int64(*rec.Partition))
	}
	if rec.Offset != nil {
		w.Int("offset", *rec.Offset)
	}
	if rec.LeaderEpoch != nil {
		w.Int("leaderEpoch", int64(*rec.LeaderEpoch))
	}
	if rec.Metadata != nil {
		w.String("metadata", *rec.Metadata)
	}
	if rec.CommitTimestamp != nil {
		w.Time("commitTimestamp", rec.CommitTimestamp.Time()) // offsetlog.Millis writes the same layout
	}
	if rec.ExpireTimestamp != nil {
		w.Time("expireTimestamp", rec.ExpireTimestamp.Time())
	}
	if rec.KeyVersion != nil {
		w.Int("keyVersion", int64(*rec.KeyVersion))
	}
	if rec.ValueVersion != nil {
		w.Int("valueVersion", int64(*rec.ValueVersion))
	}
	if rec.ProducerID != nil {
		w.Int("producerId", *rec.ProducerID)
	}
	if rec.Transactional {
		w.Bool("transactional", true)
	}
	if len(r.Key) > 0 {
		w.String("key", base64.StdEncoding.EncodeToString(r.Key))
	}
	if len(r.Value) > 0 {
		w.String("value", base64.StdEncoding.EncodeToString(r.Value))
	}
	w.Close()
	return w.B, true
}

// plain reports whether encoding/json writes s as is between quotes.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
