package offsets

import (
	"sync"
	"testing"
	"time"
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
// timed once per run for 200ms, so the decode and replay benchmarks can report how many
// times slower than a copy they are. testing.Benchmark cannot be nested in a benchmark.
var copySpeed = sync.OnceValue(func() float64 {
	msgs := copyCorpus
	dst := make([]byte, 1<<16)
	var n int64
	start := time.Now()
	for time.Since(start) < 200*time.Millisecond {
		for _, m := range msgs {
			copy(dst, m.Key)
			copy(dst, m.Value)
			n += int64(len(m.Key) + len(m.Value))
		}
	}
	return float64(n) / time.Since(start).Seconds() / 1e6
})

var copyCorpus []Message

func reportVsCopy(b *testing.B, size int64, msgs int) {
	if copyCorpus == nil {
		copyCorpus, _ = benchCorpus(b, codecNone)
	}
	mbps := float64(size/int64(msgs)) * float64(b.N) / b.Elapsed().Seconds() / 1e6
	if c := copySpeed(); c > 0 && b.Elapsed() > 10*time.Millisecond {
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
				r.ApplyMessage(m)
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
		r.ApplyMessage(Message{Key: []byte("k"), Value: v})
	}
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		r.ApplyMessage(Message{Key: []byte("k"), Value: msgs[i%len(msgs)]})
		i++
	})
	if allocs > 1 {
		t.Errorf("%.1f allocs per message, want <= 1", allocs)
	}
}
