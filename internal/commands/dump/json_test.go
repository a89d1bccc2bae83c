package dump

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/commands/recordio"
	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
	"github.com/kop-offsets/kop-offsets/internal/output"
)

// AppendJSON writes exactly what encoding/json writes with recordio's settings, or declines.
func TestAppendJSONIsEncodingJSON(t *testing.T) {
	p, o, e, kv, vv, pid := int32(3), int64(42), int32(7), int16(1), int16(3), int64(9)
	md, odd := "m-1", "a\"b\n\u2028é<&>"
	ms, ms2 := offsetlog.Millis(1741064767000), offsetlog.Millis(-5)
	base := offsetlog.Record{Kind: offsetlog.KindOffsetCommit, Group: "G", Topic: "persistent://public/default/t1",
		Partition: &p, Offset: &o, Metadata: &md, CommitTimestamp: &ms, KeyVersion: &kv, ValueVersion: &vv}
	recs := []Record{
		{Cluster: "scus", OffsetsPartition: 7, MessageID: "1:2:7:-1", PublishTime: output.NewTime(ts), Record: base},
		{Cluster: "wus", Record: base},
		{Cluster: "wus", Record: offsetlog.Record{Kind: offsetlog.KindOffsetTombstone, Group: "G", Topic: "t", Partition: &p, KeyVersion: &kv}},
		{Cluster: "c", Key: []byte{0, 1, 2, 250}, Value: []byte("value"), Record: base},
	}
	full := base
	full.LeaderEpoch, full.ExpireTimestamp, full.ProducerID, full.Transactional = &e, &ms2, &pid, true
	recs = append(recs, Record{Cluster: "c", OffsetsPartition: -1, Record: full})
	declined := []Record{
		{Cluster: "c", Record: offsetlog.Record{Kind: offsetlog.KindGroupMetadata, Group: "G"}},
		{Cluster: "c", Record: offsetlog.Record{Kind: offsetlog.KindOffsetCommit, Group: odd}},
		{Cluster: "c", Record: offsetlog.Record{Kind: offsetlog.KindOffsetCommit, Group: "G", Metadata: &odd}},
		{Cluster: "c", Record: offsetlog.Record{Kind: offsetlog.KindOffsetCommit, Error: "x"}},
	}
	cache := new(output.TimeCache)
	for i := range recs {
		for _, indent := range []string{"", recordio.ElementPrefix} {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if indent != "" {
				enc.SetIndent(indent, "  ")
			}
			if err := enc.Encode(&recs[i]); err != nil {
				t.Fatal(err)
			}
			want := bytes.TrimRight(buf.Bytes(), "\n")
			for _, tc := range []*output.TimeCache{nil, cache, cache} { // none, then shared: a miss and a hit
				r := recs[i]
				r.times = tc
				got, ok := r.AppendJSON(nil, indent != "")
				if !ok || !bytes.Equal(got, want) {
					t.Errorf("record %d indent %q cache %v (ok %v):\n got %s\nwant %s", i, indent, tc != nil, ok, got, want)
				}
			}
		}
	}
	for i := range declined {
		if _, ok := declined[i].AppendJSON(nil, false); ok {
			t.Errorf("declined %d was written", i)
		}
	}
}
