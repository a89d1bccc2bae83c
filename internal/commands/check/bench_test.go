package check

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/sources"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

// heapSampler records the largest heap (HeapAlloc) seen before the first row is written
// and after, every few milliseconds: what the replay needs, and what the rows and the
// output add to it.
type heapSampler struct {
	writes               atomic.Int64
	rowsStarted          atomic.Bool
	peakReplay, peakRows uint64
	stop                 chan struct{}
	wg                   sync.WaitGroup
}

func startSampler() *heapSampler {
	s := &heapSampler{stop: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if s.rowsStarted.Load() {
				s.peakRows = max(s.peakRows, ms.HeapAlloc)
			} else {
				s.peakReplay = max(s.peakReplay, ms.HeapAlloc)
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// Write marks the rows' start at the first write after the document's head.
func (s *heapSampler) Write(p []byte) (int, error) {
	if s.writes.Add(1) > 1 {
		s.rowsStarted.Store(true)
	}
	return len(p), nil
}

func (s *heapSampler) finish() { close(s.stop); s.wg.Wait() }

func benchKeys(b *testing.B) int {
	n := 100_000
	if v := os.Getenv("KOP_BENCH_KEYS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	return n
}

// persistedOnly is one cluster whose offsets topic holds n keys (groups of 10 partitions),
// one commit each.
func persistedOnly(n int) (func() ([]config.Cluster, error), sources.ConnectFunc) {
	reader := fakes.NewMemReader(50)
	commits := make([]kop.OffsetCommit, 0, n)
	for i := range n {
		commits = append(commits, kop.OffsetCommit{Group: fmt.Sprintf("group-%07d", i/10), Topic: "persistent://public/default/topic-1",
			Partition: int32(i % 10), Offset: int64(i), CommitTime: time.UnixMilli(1700000000000)})
	}
	reader.Commit(commits...)
	clusters := func() ([]config.Cluster, error) {
		return []config.Cluster{{Name: "scus", KafkaNamespace: "public/default"}}, nil
	}
	connect := func(cl config.Cluster, _ sources.SourceOptions) (survey.Cluster, func(), error) {
		return survey.Cluster{Name: cl.Name, KafkaNamespace: cl.KafkaNamespace, Reader: reader}, nil, nil
	}
	return clusters, connect
}

// BenchmarkCheckPersistedOnly is `check --persisted-only -o json` of one cluster holding
// KOP_BENCH_KEYS keys (default 100,000), output discarded. Per key: replay-B/key is the
// heap peak above the input while the offsets topic is replayed, rows-B/key the peak while
// the rows are built and written (the replay's result is still held then), alloc-B/key all
// bytes allocated, peak-B/key the larger peak. Streaming shows as rows-B/key not above
// replay-B/key plus the row keys.
func BenchmarkCheckPersistedOnly(b *testing.B) {
	n := benchKeys(b)
	clusters, connect := persistedOnly(n)
	for b.Loop() {
		ios, _, _, _ := iostreams.Test()
		opts := &Options{IO: ios, Format: output.JSON, Clusters: clusters, Connect: connect, PersistedOnly: true,
			CoordinatorWait: time.Second, Concurrency: 4, Now: func() time.Time { return time.UnixMilli(1700000000000) }}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		s := startSampler()
		ios.Out = s
		err := checkRun(context.Background(), opts)
		s.finish()
		runtime.ReadMemStats(&after)
		if code := cmdutil.ExitCode(err); code != 0 {
			b.Fatalf("exit %d: %v", code, err)
		}
		b.ReportMetric(float64(s.peakReplay-min(s.peakReplay, before.HeapAlloc))/float64(n), "replay-B/key")
		b.ReportMetric(float64(s.peakRows-min(s.peakRows, before.HeapAlloc))/float64(n), "rows-B/key")
		b.ReportMetric(float64(max(s.peakReplay, s.peakRows)-min(s.peakReplay, before.HeapAlloc))/float64(n), "peak-B/key")
		b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(n), "alloc-B/key")
	}
}

// BenchmarkRunHeldRows is the heap a Report of n rows holds (what Run's callers keep, such
// as repair), per row.
func BenchmarkRunHeldRows(b *testing.B) {
	n := benchKeys(b)
	clusters, connect := persistedOnly(n)
	cls, _ := clusters()
	for b.Loop() {
		c, _, _ := connect(cls[0], sources.SourceOptions{})
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		rep, err := survey.Run(context.Background(), []survey.Cluster{c}, survey.Options{Now: time.UnixMilli(1700000000000)})
		if err != nil || len(rep.Rows) != n {
			b.Fatalf("%v, %d rows", err, len(rep.Rows))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-min(after.HeapAlloc, before.HeapAlloc))/float64(n), "held-B/row")
		runtime.KeepAlive(rep)
	}
}
