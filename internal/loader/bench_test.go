package loader

import (
	"runtime"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/offsetlog/offsetlogtest"
)

// benchCorpus is offsetlogtest.BenchCorpus as messages of the partition.
func benchCorpus(b *testing.B, codec int16) (msgs []Message, size int64) {
	kvs, size := offsetlogtest.BenchCorpus(b, codec)
	for _, r := range kvs {
		msgs = append(msgs, Message{Key: r[0], Value: r[1]})
	}
	return msgs, size
}

func BenchmarkReplay(b *testing.B) {
	for _, c := range offsetlogtest.BenchCodecs {
		b.Run(c.Name, func(b *testing.B) {
			msgs, size := benchCorpus(b, c.Codec)
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
			offsetlogtest.Report(b, len(msgs), size)
			b.StopTimer()
			offsetlogtest.ReportVsCopy(b, size, len(msgs))
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
	msgs := [][]byte{offsetlogtest.CommitMsg(t, "G", t1, 0, 1), offsetlogtest.CommitMsg(t, "G", t1, 1, 2),
		offsetlogtest.BuildBatch(t, offsetlogtest.BatchOpts{}, offsetlogtest.KV{offsetlogtest.GroupKey("G"), offsetlogtest.GroupValue(1, 2)})}
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

// BenchmarkGroupOffsetsAllGroups asks every group's offsets once, as check, reload and dump
// do: the cost per group must not grow with the number of keys (it walked every key once
// per group before the index: quadratic over a check).
func BenchmarkGroupOffsetsAllGroups(b *testing.B) {
	for _, groups := range []int{2000, 10000} {
		b.Run("groups="+itoa(groups)+"/keys="+itoa(groups*5), func(b *testing.B) {
			r := NewReplayer(0, OrderingKoP)
			for g := 0; g < groups; g++ {
				for tp := int32(0); tp < 5; tp++ {
					_ = r.ApplyMessage(Message{Key: []byte("k"), Value: offsetlogtest.BuildBatch(b, offsetlogtest.BatchOpts{}, offsetlogtest.OffsetRec("g-"+itoa(g), tp, int64(g)))})
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
				recs := make([]offsetlogtest.KV, 5)
				for p := range recs {
					recs[p] = offsetlogtest.KV{offsetlogtest.OffsetKey(1, name, "persistent://public/default/load-t-"+itoa(g%100), int32(p)),
						offsetlogtest.OffsetValue(1, 1000+int64(p), -1, "", 1700000000000, -1)}
				}
				msgs = append(msgs, Message{Key: []byte(name), Value: offsetlogtest.BuildBatch(b, offsetlogtest.BatchOpts{}, recs...)})
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
