package watch

import (
	"context"
	"fmt"
	"maps"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/check"
	"github.com/kop-offsets/kop-offsets/internal/kopcommit"
)

// BenchmarkWatchSteadyState is the heap watch holds in its steady state per live key: one
// cluster whose offsets topic holds KOP_BENCH_KEYS keys (default 100,000; groups of 5
// partitions), all served by KoP, after the cycles that built every row from the replayed
// partitions. held-B/key is the
// heap after a GC minus the heap before the watcher started (the input is held by both).
func BenchmarkWatchSteadyState(b *testing.B) {
	n := 100_000
	if v := os.Getenv("KOP_BENCH_KEYS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	if os.Getenv("KOP_BENCH_HEAPPROFILE") != "" {
		runtime.MemProfileRate = 4096
	}
	for b.Loop() {
		tail, kop := newMemTail(8), newHistory(8)
		now := time.Unix(1_800_000_000, 0)
		for i := range n {
			c := kopcommit.OffsetCommit{Group: fmt.Sprintf("group-%07d", i/5), Topic: fmt.Sprintf("persistent://public/default/topic-%02d", i%100),
				Partition: int32(i % 5), Offset: int64(i), CommitTime: now}
			tail.commit("", c)
			kop.serveTopic(c.Group, fmt.Sprintf("topic-%02d", i%100), c.Partition, c.Offset)
		}
		before := heapAlloc()
		w := New([]Cluster{{Name: "scus", KafkaNamespace: "public/default", Tailer: tail, Fetcher: freshKoP{kop}, Replication: check.StaticReplication{}}},
			Options{Now: func() time.Time { return now }, Resync: time.Hour, Backoff: 10 * time.Millisecond, CallTimeout: time.Minute})
		ctx, cancel := context.WithCancel(context.Background())
		wait := w.Start(ctx)
		// Ready: every partition replayed, and the rows built from it (KoP's answers alone
		// give every group a row before that).
		for i := 0; !w.Ready() || w.retained().rowGroups < n/5; i++ {
			w.Cycle(ctx)
			if i > 10_000 {
				b.Fatalf("rows of %d groups after %d cycles (ready %v), want %d", w.retained().rowGroups, i, w.Ready(), n/5)
			}
			time.Sleep(time.Millisecond)
		}
		after := heapAlloc()
		if f := os.Getenv("KOP_BENCH_HEAPPROFILE"); f != "" {
			writeHeapProfile(b, f)
		}

		b.ReportMetric(float64(after-min(after, before))/float64(n), "held-B/key")
		cancel()
		wait()
	}
}

// writeHeapProfile writes the heap held now (pprof), to see what holds a steady state.
func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// freshKoP answers in maps of its own each time, as kafkafetch does (history shares its
// maps, which the heap before the watcher already counts).
type freshKoP struct{ *history }

func (k freshKoP) FetchOffsets(ctx context.Context, groups []string) map[string]check.GroupFetch {
	out := k.history.FetchOffsets(ctx, groups)
	for g, f := range out {
		offs := make(map[string]map[int32]int64, len(f.Offsets))
		for t, ps := range f.Offsets {
			offs[strings.Clone(t)] = maps.Clone(ps)
		}
		f.Offsets = offs
		out[g] = f
	}
	return out
}
