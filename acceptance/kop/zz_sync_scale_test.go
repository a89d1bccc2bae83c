//go:build kop

package kop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kop-offsets/kop-offsets/internal/commands/synccmd"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
)

// TestSyncScale is issue 31's measurement (docs/performance.md), one run, side by side: for
// each size in KOP_SYNC_SCALE (groups, e.g. 1000,10000), member-less groups commit on scus
// at KOP_SYNC_RATE commits a second (default 1,000) on aligned topics, first with the sync
// deployment (`sync setup`, `watch --sync`; with KOP_SYNC_BASELINE, that binary's
// `watch --sync --interval 1s` first), then with the replication model
// (`sync setup --undo`, `watch --repair --interval 5s`) under the same load. For a sample of
// groups, every commit's latency is measured from its acknowledgement on scus to wus serving
// it (or more), by asking wus's KoP; unloads come from the tool's own counter, CPU and memory
// from /proc of the tool's process. It asserts only what must hold whatever the machine:
// sync exact (wus never serves a value no commit made) with no unload. Opt-in: it takes
// minutes and leaves size groups in both offsets topics.
func TestSyncScale(t *testing.T) {
	sizes := os.Getenv("KOP_SYNC_SCALE")
	if sizes == "" {
		t.Skip("a measurement: set KOP_SYNC_SCALE=1000,10000 (groups) to run it (docs/performance.md)")
	}
	rate := 1000
	if v := os.Getenv("KOP_SYNC_RATE"); v != "" {
		var err error
		if rate, err = strconv.Atoi(v); err != nil || rate <= 0 {
			t.Fatalf("KOP_SYNC_RATE=%q: want commits a second", v)
		}
	}
	load := 60 * time.Second
	if v := os.Getenv("KOP_SYNC_LOAD"); v != "" {
		var err error
		if load, err = time.ParseDuration(v); err != nil {
			t.Fatal(err)
		}
	}
	var rows []string
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 200 {
			t.Fatalf("KOP_SYNC_SCALE: %q is not a number of groups (200 or more)", s)
		}
		rows = append(rows, syncScale(t, n, rate, load)...)
	}
	t.Logf("issue 31, %d commits/s for %s per mode:\n%s\n%s", rate, load, scaleHeader, strings.Join(rows, "\n"))
}

const scaleHeader = "| groups | mode | commits/s acknowledged | commits sampled | served on wus in the phase | p50 | p99 | max | unloads (per hour) | tool CPU (of one core) | CPU per group | tool peak RSS (per group) |"

// scaleTopics is how many aligned topics the groups share (one partition each).
const scaleTopics = 20

func syncScale(t *testing.T, n, rate int, load time.Duration) []string {
	prefix := labtest.Name(fmt.Sprintf("ss%d", n)) + "-"
	rounds := int(load.Seconds()) * rate / n // commits per group and phase
	msgs := 3*rounds + 10                    // every phase commits below the topics' end
	topics := scaleTopicsOf(t, prefix, msgs)
	group := func(i int) string { return fmt.Sprintf("%sg%06d", prefix, i) }
	topicOf := func(i int) string { return topics[i%scaleTopics] }
	every := n / 200 // the sampled groups: every every-th
	gen := &committer{cl: labtest.Kafka(t, theLab.Cluster("scus")), n: n, group: group, topic: topicOf, every: every, log: map[int]*commitLog{}}
	for i := 0; i < n; i += every {
		gen.log[i] = &commitLog{}
	}
	// Every group has a first commit before sync starts (the seed).
	ctx := context.Background()
	seedStart := time.Now()
	gen.run(ctx, t, rate*2, n, 1)
	t.Logf("%d groups: seed commits on scus in %s", n, time.Since(seedStart).Round(time.Millisecond))

	bin := labtest.Binary(t)
	cfg := labtest.ConfigCopy(t, theLab, fmt.Sprintf("sync-scale-%d", n))
	scope := prefix + "*"
	var out []string

	// The sync deployment: setup seeds wus with every group.
	undone := false
	undo := func() {
		if undone {
			return
		}
		undone = true
		if code, o := cli.Run(t, "sync", "setup", "--undo", "--yes", "--audit-file", ""); code != 0 {
			t.Errorf("sync setup --undo: exit %d: %s", code, o)
		}
	}
	t.Cleanup(undo)
	seedAt := time.Now()
	code, o := cli.Run(t, "sync", "setup", "--yes", "--audit-file", "", "-o", "json", "--group", prefix+"*")
	var res synccmd.Result
	if err := json.Unmarshal([]byte(o), &res); err != nil || code != 0 || res.Seed == nil || res.Seed.Synced != n {
		t.Fatalf("sync setup: exit %d (%v), want every one of %d groups seeded: %s", code, err, n, o)
	}
	t.Logf("%d groups: sync setup seeded wus with every group in %s (the seed %.1f s, %d offsets)", n, time.Since(seedAt).Round(time.Millisecond), res.Seed.Seconds, res.Seed.Offsets)
	round := 2
	if base := os.Getenv("KOP_SYNC_BASELINE"); base != "" {
		// The release before, whose watch --sync synced once per cycle: the same load.
		listen := labtest.FreeListen(t)
		p := startProcess(t, base, "sync-baseline", cfg, "--timeout", "10s", "watch", "--sync", "--interval", "1s", "--listen", listen, "--group", scope)
		labtest.WaitReady(t, "http://"+listen+"/readyz", func() error { return nil })
		waitActive(t, listen, 1)
		row, _ := phase(t, gen, p, listen, "sync, once per cycle (KOP_SYNC_BASELINE)", n, rate, load, round)
		out = append(out, row)
		stopProcess(t, p)
	}
	round += rounds
	listen := labtest.FreeListen(t)
	started := time.Now()
	// Streaming sync waits for no cycle: the exporter's cycle keeps its default (30 s), so
	// that its OffsetFetches of every changed group do not compete with sync every second.
	p := startProcess(t, bin, "sync", cfg, append(verbose(), "--timeout", "10s", "watch", "--sync", "--listen", listen, "--group", scope)...)
	labtest.WaitReady(t, "http://"+listen+"/readyz", func() error { return nil })
	waitActive(t, listen, 1)
	t.Logf("%d groups: watch --sync ready and active in %s; its first sweep committed %v offsets on wus (the seed left nothing)", n,
		time.Since(started).Round(time.Millisecond), metric(t, listen, "kop_offsets_sync_commits_total", `cluster="wus"`))
	sentBefore := metric(t, listen, "kop_offsets_sync_commits_total", `cluster="wus"`)
	row, served := phase(t, gen, p, listen, "sync, streaming", n, rate, load, round)
	sent := metric(t, listen, "kop_offsets_sync_commits_total", `cluster="wus"`) - sentBefore
	t.Logf("%d groups: streaming sync committed %v offsets on wus for %d commits on scus (never more than received)", n, sent, rounds*n)
	if sent > float64(rounds*n) {
		t.Errorf("streaming sync committed %v offsets on wus for %d commits received", sent, rounds*n)
	}
	out = append(out, row)
	// Exact: every value wus served is one a commit of the group made (aligned: the same number).
	for i, s := range served {
		made := map[int64]bool{}
		gen.log[i].mu.Lock()
		for _, o := range gen.log[i].off {
			made[o] = true
		}
		gen.log[i].mu.Unlock()
		for _, v := range s.values() {
			if !made[v] {
				t.Errorf("sync: wus served %d for %s: no commit of the group made it", v, group(i))
				break
			}
		}
	}
	if u := metric(t, listen, "kop_offsets_watch_reloads_total"); u != 0 {
		t.Errorf("sync: %v unloads", u)
	}
	stopProcess(t, p)

	// The replication model, the same load.
	undo()
	listen = labtest.FreeListen(t)
	p = startProcess(t, bin, "repair", cfg, "--timeout", "10s", "watch", "--repair", "--interval", "5s", "--listen", listen, "--group", scope)
	labtest.WaitReady(t, "http://"+listen+"/readyz", func() error { return nil })
	row, _ = phase(t, gen, p, listen, "replication + watch --repair", n, rate, load, round+rounds)
	out = append(out, row)
	stopProcess(t, p)
	return out
}

// scaleTopicsOf makes the scaleTopics aligned topics of a measurement, msgs messages each
// written on scus and replicated to wus.
func scaleTopicsOf(t *testing.T, prefix string, msgs int) []string {
	var topics []string
	for i := range scaleTopics {
		topics = append(topics, labtest.NewTopic(t, theLab, fmt.Sprintf("%st%02d", prefix, i)))
	}
	for _, tp := range topics {
		produceKeys(t, "scus", tp, "m", msgs)
	}
	for _, tp := range topics {
		labtest.WaitEndOffset(t, theLab.Cluster("wus"), tp, int64(msgs))
	}
	return topics
}

// phase runs the load for d (round from) and returns its table row and the wus samples.
func phase(t *testing.T, gen *committer, p *process, listen, mode string, n, rate int, d time.Duration, round int) (string, map[int]*served) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	onWus := map[int]*served{}
	wus := labtest.Kafka(t, theLab.Cluster("wus"))
	var idx []int
	for i := range gen.log {
		onWus[i] = &served{}
		idx = append(idx, i)
	}
	// The sampled groups are asked every 50 ms in OffsetFetch requests of 50 groups (v8), as
	// watch asks: light enough that the measurement does not load wus's KoP (one request per
	// group, eight at a time without pause, added seconds to the latency it measured).
	f := &kop.Fetcher{Admin: kadm.NewClient(wus), Client: wus}
	names := make([]string, len(idx))
	for k, i := range idx {
		names[k] = gen.group(i)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			fctx, fcancel := context.WithTimeout(ctx, 5*time.Second)
			got := f.FetchOffsets(fctx, names)
			fcancel()
			for k, i := range idx {
				gf := got[names[k]]
				if gf.Err != nil {
					continue
				}
				for topic, parts := range gf.Offsets {
					if o, ok := parts[0]; ok && strings.HasSuffix(topic, gen.topic(i)) {
						onWus[i].add(o)
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	})
	cpu0, _ := procCPU(p.pid())
	unloads0 := metric(t, listen, "kop_offsets_watch_reloads_total")
	steps0 := cycleSteps(t, listen)
	start := time.Now()
	rounds := int(d.Seconds()) * rate / n
	sent := gen.run(ctx, t, rate, n*rounds, round)
	elapsed := time.Since(start)
	time.Sleep(10 * time.Second) // the last commits' chance to be served
	cancel()
	wg.Wait()
	cpu1, _ := procCPU(p.pid())
	hwm := procHWM(p.pid())
	unloads := metric(t, listen, "kop_offsets_watch_reloads_total") - unloads0
	t.Logf("%d groups, %s: where a cycle's time went (means over the phase): %s", n, mode, cycleSteps(t, listen).since(steps0))
	if len(verbose()) > 0 {
		var last []string
		for l := range strings.Lines(p.stderr()) {
			if strings.Contains(l, "sync step") && !strings.Contains(l, `"groups":0,`) {
				last = append(last, strings.TrimSpace(l))
			}
		}
		var some []string
		for i := 0; i < len(last); i += max(1, len(last)/12) {
			some = append(some, last[i])
		}
		t.Logf("%d groups, %s: sync steps that asked groups (KOP_SYNC_VERBOSE, %d of %d):\n%s", n, mode, len(some), len(last), strings.Join(some, "\n"))
	}

	var lat []time.Duration
	total := 0
	for i, c := range gen.log {
		c.mu.Lock()
		for k, o := range c.off {
			if c.at[k].Before(start) {
				continue
			}
			total++
			if at, ok := onWus[i].firstAtLeast(o, c.at[k]); ok {
				lat = append(lat, at.Sub(c.at[k]))
			}
		}
		c.mu.Unlock()
	}
	perHour := unloads / (elapsed + 10*time.Second).Hours()
	cpu := cpu1 - cpu0
	row := fmt.Sprintf("| %d | %s | %.0f | %d | %d (%.0f %%) | %s | %s | %s | %.0f (%.0f) | %s (%.0f %%) | %s/s | %.0f MiB (%.1f KiB) |",
		n, mode, float64(sent)/elapsed.Seconds(), total, len(lat), 100*float64(len(lat))/float64(max(total, 1)),
		percentile(lat, .5).Round(time.Millisecond), percentile(lat, .99).Round(time.Millisecond), percentile(lat, 1).Round(time.Millisecond),
		unloads, perHour, cpu.Round(10*time.Millisecond), 100*cpu.Seconds()/(elapsed+10*time.Second).Seconds(),
		(cpu / time.Duration(n) * time.Second / (elapsed + 10*time.Second)).Round(time.Microsecond), float64(hwm)/(1<<20), float64(hwm)/1024/float64(n))
	t.Logf("%s", row)
	return row, onWus
}

// committer sends member-less OffsetCommits of n groups on scus, one partition each.
type committer struct {
	cl    *kgo.Client
	n     int
	group func(int) string
	topic func(int) string
	// keys, when set, are the topics each commit of group i covers (partition 0 of each),
	// in place of topic(i): a group of several keys.
	keys  func(int) []string
	every int
	log   map[int]*commitLog // the sampled groups' acknowledged commits
}

// run sends total commits at rate a second, group after group, the k-th round of a group
// committing offset round+k; it returns how many were acknowledged.
func (c *committer) run(ctx context.Context, t *testing.T, rate, total, round int) int {
	t.Helper()
	var next, acked atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	for range 32 {
		wg.Go(func() {
			for ctx.Err() == nil {
				k := int(next.Add(1) - 1)
				if k >= total {
					return
				}
				if wait := time.Until(start.Add(time.Duration(k) * time.Second / time.Duration(rate))); wait > 0 {
					time.Sleep(wait)
				}
				i, r := k%c.n, k/c.n
				off := int64(round + r)
				req := kmsg.NewPtrOffsetCommitRequest()
				req.Group, req.Generation = c.group(i), -1
				for _, tn := range c.topicsOf(i) {
					tp := kmsg.NewOffsetCommitRequestTopic()
					tp.Topic = tn
					pp := kmsg.NewOffsetCommitRequestTopicPartition()
					pp.Partition, pp.Offset, pp.LeaderEpoch = 0, off, -1
					tp.Partitions = append(tp.Partitions, pp)
					req.Topics = append(req.Topics, tp)
				}
				rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				resp, err := req.RequestWith(rctx, c.cl)
				cancel()
				if err = commitError(resp, err); err != nil {
					select {
					case errs <- fmt.Errorf("commit %s %d: %w", req.Group, off, err):
					default:
					}
					continue
				}
				acked.Add(1)
				if l := c.log[i]; l != nil {
					l.add(off)
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		t.Logf("a commit failed (the first; %d of %d acknowledged): %v", acked.Load(), total, err)
	default:
	}
	return int(acked.Load())
}

// topicsOf are the topics a commit of group i covers.
func (c *committer) topicsOf(i int) []string {
	if c.keys != nil {
		return c.keys(i)
	}
	return []string{c.topic(i)}
}

// procCPU is the user+system CPU time of pid so far.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond, nil // USER_HZ 100
}

// procHWM is pid's peak resident set size in bytes.
func procHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// stopProcess stops a kop-offsets process (SIGINT) and waits for it.
func stopProcess(t *testing.T, p *process) {
	t.Helper()
	_ = p.cmd.Process.Signal(os.Interrupt)
	p.wait(t, time.Minute)
}

// stepSeries are the tool's duration histograms of a cycle and its steps, in report order.
var stepSeries = []struct{ name, series, label string }{
	{"cycle", "kop_offsets_watch_cycle_duration_seconds", ""},
	{"sync step", "kop_offsets_sync_duration_seconds", ""},
	{"scus fetch", "kop_offsets_watch_fetch_duration_seconds", `cluster="scus"`},
	{"wus fetch", "kop_offsets_watch_fetch_duration_seconds", `cluster="wus"`},
}

// steps are the sums and counts of stepSeries.
type steps [][2]float64

// cycleSteps reads stepSeries from listen.
func cycleSteps(t *testing.T, listen string) steps {
	t.Helper()
	out := make(steps, len(stepSeries))
	for i, st := range stepSeries {
		var ls []string
		if st.label != "" {
			ls = append(ls, st.label)
		}
		out[i] = [2]float64{metric(t, listen, st.series+"_sum", ls...), metric(t, listen, st.series+"_count", ls...)}
	}
	return out
}

// since is the mean of each step between s0 and s, with how many there were.
func (s steps) since(s0 steps) string {
	var parts []string
	for i, st := range stepSeries {
		sum, count := s[i][0]-s0[i][0], s[i][1]-s0[i][1]
		if count <= 0 {
			parts = append(parts, st.name+" none")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s (%.0f)", st.name, time.Duration(sum/count*float64(time.Second)).Round(time.Millisecond), count))
	}
	return strings.Join(parts, ", ")
}

// verbose is the tool's --verbose when KOP_SYNC_VERBOSE is set: its debug log says what each
// sync step spent its time on.
func verbose() []string {
	if os.Getenv("KOP_SYNC_VERBOSE") == "" {
		return nil
	}
	return []string{"--verbose"}
}
