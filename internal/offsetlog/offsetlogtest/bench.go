package offsetlogtest

import (
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchCorpus is a KoP-like partition: offset commits of 200 groups, each message one
// batch with the 4 partitions of a commit request (KoP writes a request as one batch), and
// one group metadata message in 20.
func BenchCorpus(b *testing.B, codec int16) (msgs []KV, size int64) {
	b.Helper()
	for i := 0; i < 4000; i++ {
		g := "consumer-group-" + strconv.Itoa(i%200)
		var v []byte
		if i%20 == 19 {
			v = BuildBatch(b, BatchOpts{Codec: codec}, KV{GroupKey(g), GroupValue(1, 3)})
		} else {
			var recs []KV
			for p := int32(0); p < 4; p++ {
				recs = append(recs, KV{OffsetKey(1, g, "persistent://public/default/orders-"+strconv.Itoa(i%7), p),
					OffsetValue(1, int64(i)*100+int64(p), -1, "", 1700000000000+int64(i), -1)})
			}
			v = BuildBatch(b, BatchOpts{Codec: codec}, recs...)
		}
		m := KV{OffsetKey(1, g, "", -1), v}
		msgs = append(msgs, m)
		size += int64(len(m[0]) + len(m[1]))
	}
	return msgs, size
}

// BenchCodecs are the codecs the benchmarks run with.
var BenchCodecs = []struct {
	Name  string
	Codec int16
}{{"none", CodecNone}, {"gzip", CodecGzip}, {"snappy", CodecSnappy}, {"lz4", CodecLZ4}, {"zstd", CodecZstd}}

// Report reports the bytes per message and messages per second of a benchmark.
func Report(b *testing.B, msgs int, size int64) {
	b.SetBytes(size / int64(msgs))
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// copySpeed is the MB/s of plainly copying the uncompressed corpus (BenchmarkCopy's loop),
// measured right after each decode or replay benchmark so that both see the same machine
// load: the median of 5 windows of 20ms. testing.Benchmark cannot be nested in a benchmark.
func copySpeed(msgs []KV) float64 {
	dst := make([]byte, 1<<16)
	var speeds []float64
	for range 5 {
		var n int64
		start := time.Now()
		for time.Since(start) < 20*time.Millisecond {
			for _, m := range msgs {
				copy(dst, m[0])
				copy(dst, m[1])
				n += int64(len(m[0]) + len(m[1]))
			}
		}
		speeds = append(speeds, float64(n)/time.Since(start).Seconds()/1e6)
	}
	slices.Sort(speeds)
	return speeds[len(speeds)/2]
}

var copyCorpus []KV

// ReportVsCopy reports how many times slower than a copy of the same bytes the benchmark
// was (copy-x-slower; the goal is at most 20).
func ReportVsCopy(b *testing.B, size int64, msgs int) {
	if copyCorpus == nil {
		copyCorpus, _ = BenchCorpus(b, CodecNone)
	}
	mbps := float64(size/int64(msgs)) * float64(b.N) / b.Elapsed().Seconds() / 1e6
	if c := copySpeed(copyCorpus); c > 0 && b.Elapsed() > 10*time.Millisecond {
		b.ReportMetric(c/mbps, "copy-x-slower")
	}
}
