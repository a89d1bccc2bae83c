//go:build kop

package kop

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/commands/synccmd"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
)

// TestSyncScale is issues 31's and 46's measurement (docs/performance.md), one run, side by
// side: for each size in KOP_SYNC_SCALE (groups, e.g. 1000,10000), member-less groups
// commit on scus, half on aligned topics, half on misaligned ones (scaleShift messages on
// scus alone), each mode in turn under the same load: the sync deployment (`sync setup`)
// with the release before's `watch --sync --interval 1s` (KOP_SYNC_BASELINE=<its binary>;
// it synced once per cycle), then this build's streaming `watch --sync`, then the
// replication model (`sync setup --undo`, `watch --repair --interval 5s`). KOP_SYNC_MODES
// (cycle,stream,repair) picks some. The load is KOP_SYNC_RATE commits a second (default
// 1,000) for KOP_SYNC_LOAD (default 60s) per mode, issue 46's (b); or, with
// KOP_SYNC_SUSTAIN=5m, as fast as scus acknowledges (KOP_SYNC_INFLIGHT commits in flight,
// default 64; never above KOP_SYNC_RATE, default 8,000, which sizes the topics) for that
// long per mode, issue 46's (c), its lag printed every KOP_SYNC_WINDOW (default 30s) to show
// whether it grows.
//
// For 200 sampled groups, every commit's latency is measured from its acknowledgement on
// scus to wus serving its exact translation (or a later commit's), asking wus's KoP every
// 50 ms; OffsetCommits sent and commits received and unloads come from the tool's own
// counters, CPU and peak RSS from /proc of the tool's process. It asserts only what must hold
// whatever the machine, for streaming sync: exact (wus never serves a value no commit makes,
// translated), no unload, never more OffsetCommits sent than commits received. Opt-in: it
// takes minutes and leaves its groups in both offsets topics. KOP_SYNC_VERBOSE adds the
// sync steps' debug log (not with KOP_SYNC_SUSTAIN: the log of every commit is kept in memory).
func TestSyncScale(t *testing.T) {
	sizes := os.Getenv("KOP_SYNC_SCALE")
	if sizes == "" {
		t.Skip("a measurement: set KOP_SYNC_SCALE=1000,10000 (groups) to run it (docs/performance.md)")
	}
	c := scaleConfigOf(t)
	var rows, windows []string
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 200 {
			t.Fatalf("KOP_SYNC_SCALE: %q is not a number of groups (200 or more)", s)
		}
		r, w := syncScale(t, c, n)
		rows, windows = append(rows, r...), append(windows, w...)
	}
	what := fmt.Sprintf("%d commits/s", c.rate)
	if c.sustain {
		what = fmt.Sprintf("as fast as scus acknowledges (at most %d commits/s)", c.rate)
	}
	t.Logf("issue 46, %s for %s per mode, KoP %s:\n%s\n%s\n%s\n\nthe lag over the load, by window of %s (commits by when scus acknowledged them):\n%s\n%s\n%s",
		what, c.load, theLab.KoP.Version, scaleHeader, scaleRule(scaleHeader), strings.Join(rows, "\n"),
		c.window, windowHeader, scaleRule(windowHeader), strings.Join(windows, "\n"))
}

// scaleConfig is a measurement's load, from the environment.
type scaleConfig struct {
	rate    int           // commits a second (sustained: the most)
	load    time.Duration // per mode
	sustain bool          // as fast as scus acknowledges
	window  time.Duration // of the lag table
	modes   []string      // of scaleModes, in their order
	flight  int           // commits in flight at most (KOP_SYNC_INFLIGHT; 32, sustained 64)
}

func scaleConfigOf(t *testing.T) scaleConfig {
	c := scaleConfig{rate: 1000, load: 60 * time.Second, window: 30 * time.Second}
	dur := func(name string, d *time.Duration) bool {
		v := os.Getenv(name)
		if v == "" {
			return false
		}
		var err error
		if *d, err = time.ParseDuration(v); err != nil || *d < time.Second {
			t.Fatalf("%s=%q: want a duration of a second or more", name, v)
		}
		return true
	}
	dur("KOP_SYNC_LOAD", &c.load)
	dur("KOP_SYNC_WINDOW", &c.window)
	c.flight = 32
	if c.sustain = dur("KOP_SYNC_SUSTAIN", &c.load); c.sustain {
		c.rate, c.flight = 8000, 64
	}
	for name, v := range map[string]*int{"KOP_SYNC_RATE": &c.rate, "KOP_SYNC_INFLIGHT": &c.flight} {
		if s := os.Getenv(name); s != "" {
			var err error
			if *v, err = strconv.Atoi(s); err != nil || *v <= 0 {
				t.Fatalf("%s=%q: want a positive number", name, s)
			}
		}
	}
	want := strings.Split(cmp.Or(os.Getenv("KOP_SYNC_MODES"), "cycle,stream,repair"), ",")
	for _, m := range scaleModes {
		if !slices.Contains(want, m.key) {
			continue
		}
		if m.key == "cycle" && os.Getenv("KOP_SYNC_BASELINE") == "" {
			t.Logf("no KOP_SYNC_BASELINE: the cycle mode of the release before is not measured")
			continue
		}
		c.modes = append(c.modes, m.key)
	}
	if len(c.modes) == 0 {
		t.Fatalf("KOP_SYNC_MODES=%q: no mode to measure (cycle, stream, repair)", os.Getenv("KOP_SYNC_MODES"))
	}
	return c
}

// scaleModes are the modes measured, in the order they run (repair last: it undoes the
// sync deployment).
var scaleModes = []struct{ key, name string }{
	{"cycle", "sync once per cycle (KOP_SYNC_BASELINE)"},
	{"stream", "streaming sync"},
	{"repair", "replication + watch --repair"},
}

// scaleTopics is how many topics (one partition each) the groups share, half of each kind.
const scaleTopics = 20

// syncScale measures every mode of c with n groups: its rows and its lag windows.
func syncScale(t *testing.T, c scaleConfig, n int) (rows, windows []string) {
	rounds := int(c.load.Seconds()) * c.rate / n // commits per group and phase, at most
	if rounds < 1 {
		t.Fatalf("%d groups at %d commits/s for %s: not one commit per group", n, c.rate, c.load)
	}
	l := newScaleLoad(t, n, 2+len(c.modes)*rounds)
	gen := &committer{cl: labtest.Kafka(t, theLab.Cluster("scus")), n: n, group: l.group, topic: l.topic, offset: l.offset, log: map[int]*commitLog{}}
	gen.workers = c.flight
	for _, i := range l.sampled() {
		gen.log[i] = &commitLog{}
	}
	// Every group has a first commit before sync starts (the seed).
	seedStart := time.Now()
	gen.run(context.Background(), t, 2*min(c.rate, 5000), n, 1)
	t.Logf("%d groups: seed commits on scus in %s", n, time.Since(seedStart).Round(time.Millisecond))
	bin, cfg := labtest.Binary(t), labtest.ConfigCopy(t, theLab, fmt.Sprintf("sync-scale-%d", n))
	undo := syncScaleSetUp(t, n, l.prefix)
	round := 2
	for _, m := range scaleModes {
		if !slices.Contains(c.modes, m.key) {
			continue
		}
		if m.key == "repair" {
			undo()
		}
		sm := startScaleMode(t, m.key, m.name, bin, cfg, l.prefix+"*")
		out := phase(t, gen, l, sm, c, rounds, round)
		stopProcess(t, sm.p)
		round += rounds
		if m.key == "stream" {
			out.check(t)
		}
		r := out.rows(n)
		t.Logf("%d groups, %s:\n%s", n, m.name, strings.Join(r, "\n"))
		rows = append(rows, r...)
		windows = append(windows, out.windowRows(n, c.window)...)
	}
	return rows, windows
}

// syncScaleSetUp runs `sync setup` for the groups of prefix (wus seeded with every one of n)
// and returns its undo, run at the latest at the end of the test.
func syncScaleSetUp(t *testing.T, n int, prefix string) (undo func()) {
	undone := false
	undo = func() {
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
	return undo
}

// startScaleMode starts mode key's process on the groups of scope, ready (and, syncing,
// active, its first sweep done).
func startScaleMode(t *testing.T, key, name, bin, cfg, scope string) *scaleMode {
	m := &scaleMode{key: key, name: name, listen: labtest.FreeListen(t), sync: key != "repair"}
	started := time.Now()
	switch key {
	case "cycle":
		m.p = startProcess(t, os.Getenv("KOP_SYNC_BASELINE"), "sync-baseline", cfg, "--timeout", "10s", "watch", "--sync", "--interval", "1s", "--listen", m.listen, "--group", scope)
	case "stream":
		// Streaming sync waits for no cycle: the exporter's cycle keeps its default (30 s),
		// so that its OffsetFetches of every changed group do not compete with sync.
		m.p = startProcess(t, bin, "sync", cfg, append(verbose(), "--timeout", "10s", "watch", "--sync", "--listen", m.listen, "--group", scope)...)
	default:
		m.p = startProcess(t, bin, "repair", cfg, "--timeout", "10s", "watch", "--repair", "--interval", "5s", "--listen", m.listen, "--group", scope)
	}
	labtest.WaitReady(t, "http://"+m.listen+"/readyz", func() error { return nil })
	if m.sync {
		waitActive(t, m.listen, 1)
		// The first sweep's commits (the seed left nothing to commit) are not the phase's.
		last, at := -1.0, time.Now()
		for time.Since(at) < 2*time.Second && time.Since(started) < 2*time.Minute {
			if s, _ := syncCounts(t, m.listen); s != last {
				last, at = s, time.Now()
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Logf("%s: ready and active in %s; its first sweep committed %v offsets on wus", name, time.Since(started).Round(time.Millisecond), last)
	}
	return m
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
