package dump

import (
	"encoding/base64"
	"strconv"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/offsets"
	"github.com/kop-offsets/kop-offsets/internal/output"
)

// AppendJSON writes r as encoding/json does (recordio's JSON and NDJSON), byte for byte, for
// the records a large dump is made of: offset commits and tombstones whose strings need no
// escaping. ok is false for anything else, which encoding/json writes. At a million records
// encoding/json's reflection and its second, indenting pass were most of dump's CPU.
func (r *Record) AppendJSON(b []byte, indent bool) (_ []byte, ok bool) {
	rec := &r.Record
	if (rec.Kind != offsets.KindOffsetCommit && rec.Kind != offsets.KindOffsetTombstone) ||
		rec.Generation != nil || rec.ProtocolType != nil || rec.Protocol != nil || rec.Leader != nil ||
		rec.CurrentStateTimestamp != nil || rec.Members != nil || rec.Error != "" ||
		!plain(r.Cluster) || !plain(r.MessageID) || !plain(rec.Group) || !plain(rec.Topic) ||
		(rec.Metadata != nil && !plain(*rec.Metadata)) {
		return b, false
	}
	w := jsonWriter{b: b, indent: indent, times: r.times}
	w.str("cluster", r.Cluster)
	w.int("offsetsPartition", int64(r.OffsetsPartition))
	if r.MessageID != "" {
		w.str("messageId", r.MessageID)
	}
	if r.PublishTime != nil {
		w.time("publishTime", r.PublishTime.UTC())
	}
	w.str("kind", string(rec.Kind))
	if rec.Group != "" {
		w.str("group", rec.Group)
	}
	if rec.Topic != "" {
		w.str("topic", rec.Topic)
	}
	if rec.Partition != nil {
		w.int("partition", int64(*rec.Partition))
	}
	if rec.Offset != nil {
		w.int("offset", *rec.Offset)
	}
	if rec.LeaderEpoch != nil {
		w.int("leaderEpoch", int64(*rec.LeaderEpoch))
	}
	if rec.Metadata != nil {
		w.str("metadata", *rec.Metadata)
	}
	if rec.CommitTimestamp != nil {
		w.time("commitTimestamp", rec.CommitTimestamp.Time()) // offsets.Millis writes the same layout
	}
	if rec.ExpireTimestamp != nil {
		w.time("expireTimestamp", rec.ExpireTimestamp.Time())
	}
	if rec.KeyVersion != nil {
		w.int("keyVersion", int64(*rec.KeyVersion))
	}
	if rec.ValueVersion != nil {
		w.int("valueVersion", int64(*rec.ValueVersion))
	}
	if rec.ProducerID != nil {
		w.int("producerId", *rec.ProducerID)
	}
	if rec.Transactional {
		w.key("transactional")
		w.b = append(w.b, "true"...)
	}
	if len(r.Key) > 0 {
		w.str("key", base64.StdEncoding.EncodeToString(r.Key))
	}
	if len(r.Value) > 0 {
		w.str("value", base64.StdEncoding.EncodeToString(r.Value))
	}
	if indent {
		w.b = append(w.b, "\n  }"...) // recordio indents with prefix "  " and indent "  "
	} else {
		w.b = append(w.b, '}')
	}
	return w.b, true
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

type jsonWriter struct {
	b      []byte
	indent bool
	n      int
	times  *timeCache // nil: none
}

// timeCache keeps the last timestamps written: the records of one commit request share their
// commit, expiry and publish times.
type timeCache struct {
	keys [4]int64 // Unix milliseconds
	vals [4][24]byte
	used [4]bool
	next int
}

// append appends t (UTC) in output.TimeLayout.
func (c *timeCache) append(b []byte, t time.Time) []byte {
	if c == nil || t.Location() != time.UTC {
		return appendTime(b, t, output.TimeLayout)
	}
	k := t.UnixMilli() // all the layout shows
	for i := range c.keys {
		if c.used[i] && c.keys[i] == k {
			return append(b, c.vals[i][:]...)
		}
	}
	start := len(b)
	b = appendTime(b, t, output.TimeLayout)
	if len(b)-start == len(c.vals[0]) {
		i := c.next
		c.keys[i], c.used[i], c.next = k, true, (i+1)%len(c.keys)
		copy(c.vals[i][:], b[start:])
	}
	return b
}

func (w *jsonWriter) key(k string) {
	switch {
	case w.n == 0 && w.indent:
		w.b = append(w.b, "{\n    \""...)
	case w.n == 0:
		w.b = append(w.b, "{\""...)
	case w.indent:
		w.b = append(w.b, ",\n    \""...)
	default:
		w.b = append(w.b, ",\""...)
	}
	w.n++
	w.b = append(w.b, k...)
	if w.indent {
		w.b = append(w.b, "\": "...)
	} else {
		w.b = append(w.b, "\":"...)
	}
}

func (w *jsonWriter) str(k, v string) {
	w.key(k)
	w.b = append(w.b, '"')
	w.b = append(w.b, v...)
	w.b = append(w.b, '"')
}

func (w *jsonWriter) time(k string, t time.Time) {
	w.key(k)
	w.b = append(w.b, '"')
	w.b = w.times.append(w.b, t)
	w.b = append(w.b, '"')
}

// appendTime appends t (UTC) in output.TimeLayout, as t.AppendFormat does, several times
// faster: two or three timestamps per record.
func appendTime(b []byte, t time.Time, layout string) []byte {
	y, mo, d := t.Date()
	if layout != output.TimeLayout || t.Location() != time.UTC || y < 0 || y > 9999 {
		return t.AppendFormat(b, layout)
	}
	h, mi, s := t.Clock()
	b = appendDigits(b, y, 4)
	b = appendDigits(append(b, '-'), int(mo), 2)
	b = appendDigits(append(b, '-'), d, 2)
	b = appendDigits(append(b, 'T'), h, 2)
	b = appendDigits(append(b, ':'), mi, 2)
	b = appendDigits(append(b, ':'), s, 2)
	b = appendDigits(append(b, '.'), t.Nanosecond()/1e6, 3)
	return append(b, 'Z')
}

func appendDigits(b []byte, v, n int) []byte {
	for i := n - 1; i >= 0; i-- {
		b = append(b, 0)
	}
	for i := len(b) - 1; i >= len(b)-n; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return b
}

func (w *jsonWriter) int(k string, v int64) {
	w.key(k)
	w.b = strconv.AppendInt(w.b, v, 10)
}
