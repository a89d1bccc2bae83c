//go:build kop

package kop

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
)

// TestKeepScale is issue 47's keeping at fleet scale (docs/performance.md), one run, side by
// side: KOP_KEEP_SCALE member-less groups (e.g. 10000) commit on scus at KOP_KEEP_RATE
// commits a second (default 3000) for KOP_KEEP_LOAD (default 60s) on aligned topics, the
// offsets topic replicating to wus, with `watch --keep-translations --cluster wus --interval
// 5s` running (with KOP_KEEP_BASELINE, that binary first, then this build, each its own load).
// It measures the kept translations written a second, how long after the load ended the
// keeper stopped writing (caught up), and then replays wus's offsets topic: every group's
// newest commit must be kept there, exactly (aligned: the same number), which it asserts for
// this build. Opt-in: it takes minutes and leaves the groups in both offsets topics.
func TestKeepScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("KOP_KEEP_SCALE"))
	if n == 0 {
		t.Skip("a measurement: set KOP_KEEP_SCALE=10000 (groups) to run it (docs/performance.md)")
	}
	rate, load := 3000, 60*time.Second
	if v := os.Getenv("KOP_KEEP_RATE"); v != "" {
		rate, _ = strconv.Atoi(v)
	}
	if v := os.Getenv("KOP_KEEP_LOAD"); v != "" {
		var err error
		if load, err = time.ParseDuration(v); err != nil {
			t.Fatal(err)
		}
	}
	prefix := labtest.Name(fmt.Sprintf("ks%d", n)) + "-"
	rounds := int(load.Seconds()) * rate / n
	msgs := 3*rounds + 10
	topics := scaleTopicsOf(t, prefix, msgs)
	group := func(i int) string { return fmt.Sprintf("%sg%06d", prefix, i) }
	gen := &committer{cl: labtest.Kafka(t, theLab.Cluster("scus")), n: n, group: group, topic: func(i int) string { return topics[i%scaleTopics] }, log: map[int]*commitLog{}}
	gen.run(context.Background(), t, rate, n, 1) // every group's first commit
	cfg := labtest.ConfigCopy(t, theLab, fmt.Sprintf("keep-scale-%d", n))
	var rows []string
	round := 2
	if base := os.Getenv("KOP_KEEP_BASELINE"); base != "" {
		rows = append(rows, keepPhase(t, gen, base, cfg, "the release before (KOP_KEEP_BASELINE)", prefix, rate, rounds, round, false))
		round += rounds
	}
	rows = append(rows, keepPhase(t, gen, labtest.Binary(t), cfg, "this build", prefix, rate, rounds, round, true))
	t.Logf("issue 47, %d groups, %d commits/s on scus for %s per phase:\n%s\n%s", n, rate, load, keepHeader, strings.Join(rows, "\n"))
}

const keepHeader = "| mode | commits/s acknowledged | kept written a second (load to caught up) | caught up after the load ended | groups whose newest commit is kept | tool CPU (of one core) | peak RSS |"

// keepPhase runs bin's keeper on wus during one load and returns its row.
func keepPhase(t *testing.T, gen *committer, bin, cfg, mode, prefix string, rate, rounds, round int, strict bool) string {
	listen := labtest.FreeListen(t)
	p := startProcess(t, bin, "keep", cfg, "--timeout", "10s", "watch", "--keep-translations", "--cluster", "wus", "--interval", "5s", "--listen", listen, "--group", prefix+"*")
	defer stopProcess(t, p)
	labtest.WaitReady(t, "http://"+listen+"/readyz", func() error { return nil })
	kept := func() float64 {
		return metric(t, listen, "kop_offsets_watch_kept_translations_total", `cluster="wus"`, `result="written"`)
	}
	settled := func(quiet time.Duration) (float64, time.Time) {
		last, at := kept(), time.Now()
		for time.Since(at) < quiet {
			time.Sleep(500 * time.Millisecond)
			if k := kept(); k != last {
				last, at = k, time.Now()
			}
		}
		return last, at
	}
	k0, _ := settled(12 * time.Second) // what the start kept (the groups' first commits)
	cpu0, _ := procCPU(p.pid())
	start := time.Now()
	sent := gen.run(context.Background(), t, rate, gen.n*rounds, round)
	loadEnd := time.Now()
	k1, lastWrite := settled(15 * time.Second)
	cpu := func() time.Duration { c, _ := procCPU(p.pid()); return c - cpu0 }()
	busy := lastWrite.Sub(start)
	caughtUp := max(lastWrite.Sub(loadEnd), 0)
	newest := int64(round + rounds - 1)
	keptNewest, wrong := keptOnWus(t, gen, newest)
	if strict && keptNewest != gen.n {
		t.Errorf("%s: %d of %d groups have their newest commit (%d) kept on wus; first others: %s", mode, keptNewest, gen.n, newest, strings.Join(wrong, "; "))
	}
	row := fmt.Sprintf("| %s | %.0f | %.0f | %s | %d of %d | %s (%.0f %%) | %.0f MiB |", mode, float64(sent)/loadEnd.Sub(start).Seconds(),
		(k1-k0)/busy.Seconds(), caughtUp.Round(100*time.Millisecond), keptNewest, gen.n, cpu.Round(10*time.Millisecond),
		100*cpu.Seconds()/time.Since(start).Seconds(), float64(procHWM(p.pid()))/(1<<20))
	t.Logf("%s", row)
	return row
}

// keptOnWus replays wus's offsets topic and counts the groups whose offset is the kept
// translation of their commit newest (aligned topics: the same number), naming a few others.
func keptOnWus(t *testing.T, gen *committer, newest int64) (int, []string) {
	wus := theLab.Cluster("wus")
	r := pulsarx.NewReader(wus.Name, labtest.Pulsar(t, wus), labtest.PulsarxAdmin(t, wus), "public", "__kafka", pulsarx.ReaderOptions{})
	parts := map[int32]*loader.PersistedOffsets{}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for p := range int32(lab.OffsetsTopicPartitions) {
		po, err := loader.ReplayPartition(ctx, r, p, loader.OrderingKoP)
		if err != nil {
			t.Fatalf("replay wus's offsets partition %d: %v", p, err)
		}
		parts[p] = po
	}
	ok := 0
	var wrong []string
	for i := range gen.n {
		g := gen.group(i)
		c, found := parts[loader.PartitionFor(g, lab.OffsetsTopicPartitions)].Lookup(g, "persistent://public/default/"+gen.topic(i), 0)
		if found && c.Offset == newest && c.Kept != nil && c.Kept.Current && c.Kept.Source == newest && c.Newer == nil {
			ok++
		} else if len(wrong) < 5 {
			wrong = append(wrong, fmt.Sprintf("%s: %d (kept %+v, origin %q)", g, c.Offset, c.Kept, c.Origin))
		}
	}
	return ok, wrong
}
