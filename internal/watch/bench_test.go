package watch

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// BenchmarkWatchSteadyState is what watch holds in its steady state per live key: one
// cluster whose offsets topic holds KOP_BENCH_KEYS keys (default 100,000; groups of 5
// partitions), all served by KoP, after the cycles that built every row from the replayed
// partitions and five cycles more that see commits arrive (each changed offsets partition's
// view is taken again) and one resync (every group asked again). The input is generated as
// it is read, not held, so the process's memory above its start is watch's:
//   - held-B/key: the heap after a GC minus the heap before the watcher started;
//   - rss-B/key, peak-rss-B/key: RSS at the end and its peak over the steady cycles (the
//     start's own peak given back first), minus RSS before the watcher started, with
//     GOGC as watch sets it (cmdutil.GCWatch);
//   - steady-cpu-s: the CPU time of those steady cycles (the resync's mostly);
//   - with KOP_BENCH_SCRAPE=1, scrape-peak-rss-B/key: the peak of one /metrics exposition,
//     and its time and size (uncompressed).
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
	defer debug.SetGCPercent(debug.SetGCPercent(cmdutil.GCWatch))
	for b.Loop() {
		now := time.Unix(1_800_000_000, 0)
		tail := genTail{n: n, now: now, live: newMemTail(8)}
		before := heapAlloc()
		debug.FreeOSMemory()
		rssBefore := procStatus(b, "VmRSS")
		var clock atomic.Int64 // the followers read it too
		clock.Store(now.UnixNano())
		w := New([]Cluster{{Name: "scus", KafkaNamespace: "public/default", Tailer: tail, Fetcher: genKoP{n}, Replication: survey.StaticReplication{}}},
			Options{Now: func() time.Time { return time.Unix(0, clock.Load()) }, Resync: time.Hour, Backoff: 10 * time.Millisecond, CallTimeout: time.Minute})
		ctx, cancel := context.WithCancel(context.Background())
		wait := w.Start(ctx)
		// Ready: every partition replayed, and the rows built from it (KoP's answers alone
		// give every group a row before that).
		for i := 0; !w.Ready() || w.retained().rowGroups < (n+4)/5; i++ {
			w.Cycle(ctx)
			if i > 100_000 {
				b.Fatalf("rows of %d groups after %d cycles (ready %v), want %d", w.retained().rowGroups, i, w.Ready(), (n+4)/5)
			}
			time.Sleep(time.Millisecond)
		}
		debug.FreeOSMemory()
		resetPeakRSS(b)
		cpu0 := cpuTime(b)
		for round := range 5 {
			if round == 4 {
				clock.Add(int64(time.Hour)) // a resync
			}
			for i := range 100 {
				k := (round*100 + i) * 997 % n
				tail.live.commit("", benchCommit(k, int64(n+k), now))
			}
			time.Sleep(20 * time.Millisecond)
			w.Cycle(ctx)
		}
		cpu := cpuTime(b) - cpu0
		rss, peak := procStatus(b, "VmRSS"), procStatus(b, "VmHWM")
		after := heapAlloc()
		if f := os.Getenv("KOP_BENCH_HEAPPROFILE"); f != "" {
			writeHeapProfile(b, f)
		}
		perKey := func(v, base uint64) float64 { return float64(v-min(v, base)) / float64(n) }
		b.ReportMetric(perKey(after, before), "held-B/key")
		b.ReportMetric(perKey(rss, rssBefore), "rss-B/key")
		b.ReportMetric(perKey(peak, rssBefore), "peak-rss-B/key")
		b.ReportMetric(cpu.Seconds(), "steady-cpu-s")
		if os.Getenv("KOP_BENCH_SCRAPE") != "" {
			// A scrape: the series of every row, streamed (what /metrics writes).
			resetPeakRSS(b)
			t0 := time.Now()
			var size countingWriter
			if err := w.Metrics().WriteText(&size); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(time.Since(t0).Seconds(), "scrape-s")
			b.ReportMetric(float64(size), "scrape-bytes")
			b.ReportMetric(perKey(procStatus(b, "VmHWM"), rssBefore), "scrape-peak-rss-B/key")
		}
		cancel()
		wait()
	}
}

// countingWriter counts what is written to it.
type countingWriter int

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

// benchCommit is key i of the benchmark: group i/5, topic i%100, partition i%5.
func benchCommit(i int, offset int64, at time.Time) kop.OffsetCommit {
	return kop.OffsetCommit{Group: fmt.Sprintf("group-%07d", i/5), Topic: fmt.Sprintf("persistent://public/default/topic-%02d", i%100),
		Partition: int32(i % 5), Offset: offset, CommitTime: at}
}

// genTail is a Tailer whose offsets topic starts with keys 0 to n-1 (offset i), generated as
// they are read; later commits arrive through live.
type genTail struct {
	n    int
	now  time.Time
	live *memTail
}

func (g genTail) Partitions(ctx context.Context) (int32, error) { return g.live.Partitions(ctx) }

func (g genTail) Tail(ctx context.Context, p int32, fn func(pulsarx.TailMessage) error, caughtUp func()) error {
	seq := 0
	for i := range g.n {
		c := benchCommit(i, int64(i), g.now)
		if loader.PartitionFor(c.Group, g.live.n) != p {
			continue
		}
		if err := fn(pulsarx.TailMessage{Message: kop.Message(p, seq, c)}); err != nil {
			return err
		}
		seq++
	}
	return g.live.Tail(ctx, p, fn, caughtUp)
}

// genKoP serves keys 0 to n-1 at the offsets genTail starts with, in maps of its own each
// time as kafkafetch does, a group at a time as kafkafetch's EachOffsets.
type genKoP struct{ n int }

func (k genKoP) ListGroups(context.Context) ([]survey.ListedGroup, error) {
	out := make([]survey.ListedGroup, 0, (k.n+4)/5)
	for g := range (k.n + 4) / 5 {
		out = append(out, survey.ListedGroup{Group: fmt.Sprintf("group-%07d", g)})
	}
	return out, nil
}

func (k genKoP) EachOffsets(_ context.Context, groups []string, fn func(string, verdict.GroupFetch)) {
	for _, g := range groups {
		f := verdict.GroupFetch{Offsets: map[string]map[int32]int64{}}
		if gi, err := strconv.Atoi(strings.TrimPrefix(g, "group-")); err == nil {
			for i := gi * 5; i < min(gi*5+5, k.n); i++ {
				f.Offsets[fmt.Sprintf("topic-%02d", i%100)] = map[int32]int64{int32(i % 5): int64(i)}
			}
		}
		fn(g, f)
	}
}

// EndOffsets: every topic has 3 partitions of 1000 messages.
func (genKoP) EndOffsets(ctx context.Context, topics []string) (map[string]map[int32]int64, error) {
	return (*history)(nil).EndOffsets(ctx, topics)
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

// procStatus is a field of /proc/self/status in bytes (VmRSS, VmHWM).
func procStatus(b *testing.B, field string) uint64 {
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(st)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb * 1024
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// resetPeakRSS makes VmHWM start again from the current RSS.
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Fatal(err)
	}
}
