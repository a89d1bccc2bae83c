package offsets

import (
	"bytes"
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// benchCorpus is a KoP-like partition: offset commits of 200 groups, each message one
// batch with the 4 partitions of a commit request (KoP writes a request as one batch), and
// one group metadata message in 20.
func benchCorpus(b *testing.B, codec int16) (msgs []Message, size int64) {
	b.Helper()
	for i := 0; i < 4000; i++ {
		g := "consumer-group-" + itoa(i%200)
		var v []byte
		if i%20 == 19 {
			v = buildBatch(b, batchOpts{codec: codec}, kv{groupKeyBytes(g), groupValueBytes(1, 3)})
		} else {
			var recs []kv
			for p := int32(0); p < 4; p++ {
				recs = append(recs, kv{offsetKeyBytes(1, g, "persistent://public/default/orders-"+itoa(i%7), p),
					offsetValueBytes(1, int64(i)*100+int64(p), -1, "", 1700000000000+int64(i), -1)})
			}
			v = buildBatch(b, batchOpts{codec: codec}, recs...)
		}
		m := Message{Key: offsetKeyBytes(1, g, "", -1), Value: v}
		msgs = append(msgs, m)
		size += int64(len(m.Key) + len(m.Value))
	}
	return msgs, size
}

var benchCodecs = []struct {
	name  string
	codec int16
}{{"none", codecNone}, {"gzip", codecGzip}, {"snappy", codecSnappy}, {"lz4", codecLZ4}, {"zstd", codecZstd}}

func report(b *testing.B, msgs int, size int64) {
	b.SetBytes(size / int64(msgs))
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// copySpeed is the MB/s of plainly copying the uncompressed corpus (BenchmarkCopy's loop),
// measured right after each decode or replay benchmark so that both see the same machine
// load: the median of 5 windows of 20ms. testing.Benchmark cannot be nested in a benchmark.
func copySpeed(msgs []Message) float64 {
	dst := make([]byte, 1<<16)
	var speeds []float64
	for range 5 {
		var n int64
		start := time.Now()
		for time.Since(start) < 20*time.Millisecond {
			for _, m := range msgs {
				copy(dst, m.Key)
				copy(dst, m.Value)
				n += int64(len(m.Key) + len(m.Value))
			}
		}
		speeds = append(speeds, float64(n)/time.Since(start).Seconds()/1e6)
	}
	slices.Sort(speeds)
	return speeds[len(speeds)/2]
}

var copyCorpus []Message

// reportVsCopy reports how many times slower than a copy of the same bytes the benchmark
// was (copy-x-slower; the goal is at most 20).
func reportVsCopy(b *testing.B, size int64, msgs int) {
	if copyCorpus == nil {
		copyCorpus, _ = benchCorpus(b, codecNone)
	}
	mbps := float64(size/int64(msgs)) * float64(b.N) / b.Elapsed().Seconds() / 1e6
	if c := copySpeed(copyCorpus); c > 0 && b.Elapsed() > 10*time.Millisecond {
		b.ReportMetric(c/mbps, "copy-x-slower")
	}
}

func benchCopy(b *testing.B, codec int16) {
	msgs, size := benchCorpus(b, codec)
	dst := make([]byte, 1<<16)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m := msgs[i%len(msgs)]
		copy(dst, m.Key)
		copy(dst, m.Value)
	}
	report(b, len(msgs), size)
}

func BenchmarkCopy(b *testing.B) { benchCopy(b, codecNone) }

func BenchmarkDecode(b *testing.B) {
	for _, c := range benchCodecs {
		b.Run(c.name, func(b *testing.B) {
			msgs, size := benchCorpus(b, c.codec)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m := msgs[i%len(msgs)]
				if _, err := Decode(m.Key, m.Value); err != nil {
					b.Fatal(err)
				}
			}
			report(b, len(msgs), size)
			b.StopTimer()
			reportVsCopy(b, size, len(msgs))
		})
	}
}

func BenchmarkReplay(b *testing.B) {
	for _, c := range benchCodecs {
		b.Run(c.name, func(b *testing.B) {
			msgs, size := benchCorpus(b, c.codec)
			r := NewReplayer(0, OrderingKoP)
			for _, m := range msgs { // warm up: every key is known, maps have grown
				_ = r.ApplyMessage(m)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := r.ApplyMessage(msgs[i%len(msgs)]); err != nil {
					b.Fatal(err)
				}
			}
			report(b, len(msgs), size)
			b.StopTimer()
			reportVsCopy(b, size, len(msgs))
			if r.Result().Len() != 200*7*4 && r.Result().Len() == 0 {
				b.Fatal("nothing replayed")
			}
		})
	}
}

// TestReplayAllocs pins the fast path: replaying known keys allocates nothing per message.
func TestReplayAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip()
	}
	msgs := [][]byte{commitMsg(t, "G", t1, 0, 1), commitMsg(t, "G", t1, 1, 2),
		buildBatch(t, batchOpts{}, kv{groupKeyBytes("G"), groupValueBytes(1, 2)})}
	r := NewReplayer(0, OrderingKoP)
	for _, v := range msgs {
		_ = r.ApplyMessage(Message{Key: []byte("k"), Value: v})
	}
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		_ = r.ApplyMessage(Message{Key: []byte("k"), Value: msgs[i%len(msgs)]})
		i++
	})
	if allocs > 1 {
		t.Errorf("%.1f allocs per message, want <= 1", allocs)
	}
}

// FuzzFastPath checks the fast paths (cursor reads, fixed-offset batch headers, shared
// record stores, gzip through Read) against the reader-based slow paths and against
// refDecode, the decoder as it was before them: same values, same errors, same JSON.
func FuzzFastPath(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s.key, s.value, s.fix)
	}
	f.Fuzz(func(t *testing.T, key, value []byte, fix bool) {
		if fix {
			value = append([]byte(nil), value...)
			fixCRC(value)
		}
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

// BenchmarkGroupOffsetsAllGroups asks every group's offsets once, as check, reload and dump
// do: the cost per group must not grow with the number of keys (it walked every key once
// per group before the index: quadratic over a check).
func BenchmarkGroupOffsetsAllGroups(b *testing.B) {
	for _, groups := range []int{2000, 10000} {
		b.Run("groups="+itoa(groups)+"/keys="+itoa(groups*5), func(b *testing.B) {
			r := NewReplayer(0, OrderingKoP)
			for g := 0; g < groups; g++ {
				for tp := int32(0); tp < 5; tp++ {
					_ = r.ApplyMessage(Message{Key: []byte("k"), Value: buildBatch(b, batchOpts{}, offsetRec("g-"+itoa(g), tp, int64(g)))})
				}
			}
			names := make([]string, groups)
			for g := range names {
				names[g] = "g-" + itoa(g)
			}
			b.ResetTimer()
			for range b.N {
				po := r.Result()
				for _, g := range names {
					if len(po.GroupOffsets(g)) != 5 {
						b.Fatal("lost offsets")
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(groups), "ns/group")
		})
	}
}

// BenchmarkReplayKeys replays one partition of distinct keys, one commit per key, 5 keys per
// message (a commit request of 5 partitions, as `kop-lab load --rounds 1` writes), and
// reports the CPU per message and per key and the live heap the finished state holds per key
// (the replay part of the 250 B per key goal at a million keys).
func BenchmarkReplayKeys(b *testing.B) {
	for _, keys := range []int{100_000, 1_000_000} {
		b.Run("keys="+itoa(keys), func(b *testing.B) {
			msgs := make([]Message, 0, keys/5)
			for g := range keys / 5 {
				name := "load-g-" + itoa(g)
				recs := make([]kv, 5)
				for p := range recs {
					recs[p] = kv{offsetKeyBytes(1, name, "persistent://public/default/load-t-"+itoa(g%100), int32(p)),
						offsetValueBytes(1, 1000+int64(p), -1, "", 1700000000000, -1)}
				}
				msgs = append(msgs, Message{Key: []byte(name), Value: buildBatch(b, batchOpts{}, recs...)})
			}
			var perKey float64
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				before := liveHeap()
				b.StartTimer()
				r := NewReplayer(0, OrderingKoP)
				for _, m := range msgs {
					_ = r.ApplyMessage(m)
				}
				p := r.Finish()
				b.StopTimer()
				perKey = float64(liveHeap()-before) / float64(keys)
				if p.Len() != keys {
					b.Fatalf("%d keys replayed, want %d", p.Len(), keys)
				}
				b.StartTimer()
			}
			b.ReportMetric(perKey, "heap-B/key")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(keys), "ns/key")
		})
	}
}

func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
