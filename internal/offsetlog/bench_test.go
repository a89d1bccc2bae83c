package offsetlog

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kop-offsets/kop-offsets/internal/offsetlog/offsetlogtest"
)

func benchCopy(b *testing.B, codec int16) {
	msgs, size := offsetlogtest.BenchCorpus(b, codec)
	dst := make([]byte, 1<<16)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m := msgs[i%len(msgs)]
		copy(dst, m[0])
		copy(dst, m[1])
	}
	offsetlogtest.Report(b, len(msgs), size)
}

func BenchmarkCopy(b *testing.B) { benchCopy(b, codecNone) }

func BenchmarkDecode(b *testing.B) {
	for _, c := range offsetlogtest.BenchCodecs {
		b.Run(c.Name, func(b *testing.B) {
			msgs, size := offsetlogtest.BenchCorpus(b, c.Codec)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m := msgs[i%len(msgs)]
				if _, err := Decode(m[0], m[1]); err != nil {
					b.Fatal(err)
				}
			}
			offsetlogtest.Report(b, len(msgs), size)
			b.StopTimer()
			offsetlogtest.ReportVsCopy(b, size, len(msgs))
		})
	}
}

// FuzzFastPath checks the fast paths (cursor reads, fixed-offset batch headers, shared
// record stores, gzip through Read) against the reader-based slow paths and against
// refDecode, the decoder as it was before them: same values, same errors, same JSON.
func FuzzFastPath(f *testing.F) {
	offsetlogtest.Fuzz(f, func(t *testing.T, key, value []byte) {
		got, gerr := Decode(key, value)
		want, werr := refDecode(key, value)
		if g, w := zstdDetail(fmt.Sprint(gerr)), zstdDetail(fmt.Sprint(werr)); g != w {
			t.Fatalf("error: got %v, want %v", gerr, werr)
		}
		if g, w := zstdDetail(mustJSON(t, got)), zstdDetail(mustJSON(t, want)); g != w {
			t.Fatalf("records:\ngot  %s\nwant %s", g, w)
		}
		for i := range got {
			if got[i].pos != want[i].pos || zstdDetail(fmt.Sprint(got[i].Err)) != zstdDetail(fmt.Sprint(want[i].Err)) ||
				memberExtras(got[i].Members) != memberExtras(want[i].Members) {
				t.Fatalf("record %d: got %+v, want %+v", i, got[i], want[i])
			}
		}

		var a, b decoder
		ka, ea := a.decodeKey(key)
		kb, eb := b.decodeKeySlow(key)
		if ka != kb || fmt.Sprint(ea) != fmt.Sprint(eb) || (ea == nil && (a.okey != b.okey || a.gkey != b.gkey)) {
			t.Fatalf("key: fast %v %v %+v %+v, slow %v %v %+v %+v", ka, ea, a.okey, a.gkey, kb, eb, b.okey, b.gkey)
		}
		for _, v := range [][]byte{key, value} {
			ea, eb = a.decodeOffsetValue(v), b.decodeOffsetValueSlow(v)
			if fmt.Sprint(ea) != fmt.Sprint(eb) || (ea == nil && fmt.Sprint(a.oval) != fmt.Sprint(b.oval)) {
				t.Fatalf("offset value: fast %v %+v, slow %v %+v", ea, a.oval, eb, b.oval)
			}
		}

		// Records framed directly in the input, as if it were a batch's records.
		a.recs, b.recs, a.nrec, b.nrec = value, value, 1<<20, 1<<20
		a.rpos, b.rpos, a.ridx, b.ridx, a.firstKey, b.firstKey = 0, 0, 0, 0, -1, -1
		for {
			oka, ea := a.nextRecord()
			okb, eb := b.nextRecordSlow()
			if oka != okb || fmt.Sprint(ea) != fmt.Sprint(eb) {
				t.Fatalf("record: fast %v %v, slow %v %v", oka, ea, okb, eb)
			}
			if !oka {
				break
			}
			if fmt.Sprintf("%+v", a.rec) != fmt.Sprintf("%+v", b.rec) || a.rpos != b.rpos || a.ridx != b.ridx ||
				a.firstKey != b.firstKey || (a.rec.Key == nil) != (b.rec.Key == nil) || (a.rec.Value == nil) != (b.rec.Value == nil) {
				t.Fatalf("record: fast %+v, slow %+v", a.rec, b.rec)
			}
		}

		a.reset(value)
		b.reset(value)
		for {
			oka, ea := a.nextBatch()
			okb, eb := b.nextBatchSlow()
			if oka != okb || fmt.Sprint(ea) != fmt.Sprint(eb) {
				t.Fatalf("batch: fast %v %v, slow %v %v", oka, ea, okb, eb)
			}
			if !oka {
				break
			}
			if fmt.Sprintf("%+v", a.batch) != fmt.Sprintf("%+v", b.batch) || !bytes.Equal(a.recs, b.recs) ||
				a.next != b.next || a.start != b.start || a.nrec != b.nrec {
				t.Fatalf("batch: fast %+v, slow %+v", a.batch, b.batch)
			}
		}

		// gzip: the Read loop against io.Copy (which uses the gzip reader's WriteTo).
		if len(value) > 0 {
			var ga, gb decoder
			ra, ea := ga.decompress(value, codecGzip)
			var rb []byte
			zr, eb := gzip.NewReader(bytes.NewReader(value))
			if eb != nil {
				eb = &codecError{"gzip", eb}
			} else {
				rb, eb = gb.readAll("gzip", zr)
			}
			if fmt.Sprint(ea) != fmt.Sprint(eb) || !bytes.Equal(ra, rb) {
				t.Fatalf("gzip: Read %v (%d bytes), WriteTo %v (%d bytes)", ea, len(ra), eb, len(rb))
			}
		}
	})
}

// zstdDetail drops the zstd decoder's own description of corrupt input: it depends on the
// capacity of the output buffer, which pooled decoders reuse (so it varied before the fast
// paths too).
func zstdDetail(s string) string {
	return zstdDetailRE.ReplaceAllString(s, "zstd: decompression failed: ... at byte")
}

var zstdDetailRE = regexp.MustCompile(`zstd: decompression failed: .*? at byte`)

// memberExtras renders what the JSON of members leaves out.
func memberExtras(ms []Member) string {
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "%q %v %v %v %v %q;", m.Subscription, m.RawSubscription, m.RawSubscription == nil,
			m.RawAssignment, m.RawAssignment == nil, m.ProtocolError)
	}
	return b.String()
}

// refDecode is Decode as it was before the fast paths (one allocation per field), on the
// slow paths; FuzzFastPath compares the two.
func refDecode(key, value []byte) (recs []Record, err error) {
	_ = key
	if len(value) == 0 {
		return []Record{{Kind: KindPlaceholder}}, nil
	}
	d := new(decoder)
	d.reset(value)
	fail := func(rec Record, e error) {
		recs = append(recs, rec)
		if err == nil {
			err = e
		}
	}
	for {
		ok, berr := d.nextBatchSlow()
		if berr != nil {
			fail(Undecodable(berr), berr)
			return recs, err
		}
		if !ok {
			return recs, err
		}
		for {
			ok, rerr := d.nextRecordSlow()
			if rerr != nil {
				// The record framing is broken: the rest of the batch cannot be found.
				fail(Undecodable(rerr), rerr)
				break
			}
			if !ok {
				break
			}
			rec, rerr := d.refRecord()
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

// refRecord classifies and copies out the current record. On failure it returns an
// undecodable record carrying what was decoded before the failure (group, topic, ...).
func (d *decoder) refRecord() (Record, error) {
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
		return refUndecodable(rec, err), err
	}
	kind, err := d.decodeKeySlow(d.rec.Key)
	if err != nil {
		return refUndecodable(rec, err), err
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
		if err := d.decodeOffsetValueSlow(d.rec.Value); err != nil {
			return refUndecodable(rec, err), err
		}
		refFillOffset(&rec, &d.oval)
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
			return refUndecodable(rec, err), err
		}
		refFillGroup(&rec, &d.gval)
		rec.Kind = KindGroupMetadata
		return rec, nil
	}
}

func refUndecodable(partial Record, err error) Record {
	u := Undecodable(err)
	u.Group, u.Topic, u.Partition, u.KeyVersion = partial.Group, partial.Topic, partial.Partition, partial.KeyVersion
	u.ProducerID, u.Transactional = partial.ProducerID, partial.Transactional
	return u
}

func refFillOffset(rec *Record, o *kmsg.OffsetCommitValue) {
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

func refFillGroup(rec *Record, g *kmsg.GroupMetadataValue) {
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
	rec.Members = refMembers(g)
}

// refMembers copies the members out of a decoded group value; for the "consumer" protocol type
// it also decodes subscriptions and assignments (a failure is noted, not fatal).
func refMembers(g *kmsg.GroupMetadataValue) []Member {
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
