package dump

import (
	"context"
	"io"
	"runtime"
	"runtime/metrics"
	"strconv"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// loadReader serves what `kop-lab load --rounds 1` writes: per group one commit request of
// 5 partitions, groups spread over 8 offsets partitions. Messages are made as they are read,
// so only dump's own memory grows; peak follows the GC's heap goal, sampled as it reads.
type loadReader struct {
	groups int
	peak   uint64
	sample []metrics.Sample
	n      int
}

func (l *loadReader) Partitions(context.Context) (int32, error) { return 8, nil }

func (l *loadReader) ReadPartition(_ context.Context, p int32, fn func(loader.Message) error) error {
	cs := make([]kop.OffsetCommit, 5)
	for g := int(p); g < l.groups; g += 8 {
		name := "load-g-" + strconv.Itoa(g)
		for i := range cs {
			cs[i] = kop.OffsetCommit{Group: name, Topic: "persistent://public/default/load-t-" + strconv.Itoa(g%100),
				Partition: int32(i), Offset: 1000 + int64(i), CommitTime: ts}
		}
		key, value, err := kop.EncodeRequest(cs, ts)
		if err != nil {
			return err
		}
		if err := fn(loader.Message{Partition: p, MessageID: "1:" + strconv.Itoa(g) + ":" + strconv.Itoa(int(p)) + ":-1",
			PublishTime: ts, Key: key, Value: value}); err != nil {
			return err
		}
		if l.n++; l.n%1000 == 0 {
			l.observe()
		}
	}
	return nil
}

func (l *loadReader) observe() {
	metrics.Read(l.sample)
	l.peak = max(l.peak, l.sample[0].Value.Uint64())
}

// BenchmarkDumpCompacted runs `dump --compacted -o json` to a discarding writer and reports
// the time and the peak heap goal per live key (the heap part of the 250 B per key goal).
func BenchmarkDumpCompacted(b *testing.B) {
	for _, keys := range []int{100_000, 1_000_000} {
		b.Run("keys="+strconv.Itoa(keys), func(b *testing.B) {
			var perKey float64
			for range b.N {
				runtime.GC()
				l := &loadReader{groups: keys / 5, sample: []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}}
				ios, _, _, _ := iostreams.Test()
				ios.Out, ios.ErrOut = io.Discard, io.Discard
				opts := &Options{IO: ios, Format: output.JSON, Compacted: true, Concurrency: 4,
					Clusters: func() ([]config.Cluster, error) { return []config.Cluster{{Name: "scus"}}, nil },
					NewReader: func(config.Cluster, pulsarx.ReaderOptions) (loader.OffsetTopicReader, func(), error) {
						return l, nil, nil
					}}
				if err := dumpRun(context.Background(), opts); err != nil {
					b.Fatal(err)
				}
				l.observe()
				perKey = float64(l.peak) / float64(keys)
			}
			b.ReportMetric(perKey, "peak-heap-goal-B/key")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(keys), "ns/key")
		})
	}
}
