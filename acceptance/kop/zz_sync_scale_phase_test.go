//go:build kop

package kop

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
)

// drain is how long a phase waits after its load for the last commits to be served.
const drain = 10 * time.Second

// scaleMode is one mode's process during its phase.
type scaleMode struct {
	key, name string
	p         *process
	listen    string
	sync      bool // the sync deployment: OffsetCommits sent on wus are counted
}

// timedCommit is one sampled commit: when scus acknowledged it, and how long until wus
// served its exact translation (or a later commit's); served false: not within the phase,
// lat then the time from it to the phase's end (a lower bound).
type timedCommit struct {
	at     time.Time
	lat    time.Duration
	served bool
}

// tick is the load and the tool's CPU at one moment of a phase.
type tick struct {
	at    time.Time
	acked int64
	cpu   time.Duration
}

// phaseOut is what one mode's phase measured.
type phaseOut struct {
	mode                string
	sync                bool
	start, loadEnd, end time.Time
	acked               int
	cpu                 time.Duration
	hwm                 int64
	unloads             float64
	sent, received      float64
	receivedAcked       bool // the tool does not count what it received: the commits acknowledged stand in
	ticks               []tick
	commits             [2][]timedCommit // by kind, in no order
	wrong               [2][]string      // by kind: groups wus served a value no commit makes, with it
}

// phase runs the load on gen for mode m: rounds rounds of every group from round (at
// c.rate a second; sustained: as fast as scus acknowledges, until c.load has passed).
func phase(t *testing.T, gen *committer, l *scaleLoad, m *scaleMode, c scaleConfig, rounds, round int) phaseOut {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	onWus := sampleWus(ctx, t, &wg, l, gen)
	out := phaseOut{mode: m.name, sync: m.sync}
	cpu0, _ := procCPU(m.p.pid())
	unloads0 := metric(t, m.listen, "kop_offsets_watch_reloads_total")
	sent0, recv0 := syncCounts(t, m.listen)
	steps0 := cycleSteps(t, m.listen)
	acked0 := gen.acked.Load()
	out.start = time.Now()
	wg.Go(func() { out.ticks = progress(ctx, t, m, gen, out.start, c) })
	if c.sustain {
		gen.until = out.start.Add(c.load)
	}
	out.acked = gen.run(ctx, t, c.rate, l.n*rounds, round)
	gen.until = time.Time{}
	out.loadEnd = time.Now()
	if r := float64(out.acked) / out.loadEnd.Sub(out.start).Seconds(); c.sustain && r > 0.95*float64(c.rate) {
		t.Logf("%s: %.0f commits/s acknowledged is KOP_SYNC_RATE's cap (%d), not the most scus sustains: raise it", m.name, r, c.rate)
	}
	time.Sleep(drain) // the last commits' chance to be served
	cancel()
	wg.Wait()
	out.end = time.Now()
	cpu1, _ := procCPU(m.p.pid())
	out.cpu, out.hwm = cpu1-cpu0, procHWM(m.p.pid())
	out.unloads = metric(t, m.listen, "kop_offsets_watch_reloads_total") - unloads0
	sent1, recv1 := syncCounts(t, m.listen)
	out.sent, out.received = sent1-sent0, recv1-recv0
	if out.received == 0 {
		out.received, out.receivedAcked = float64(gen.acked.Load()-acked0), true
	}
	t.Logf("%d groups, %s: where a cycle's time went (means over the phase): %s", l.n, m.name, cycleSteps(t, m.listen).since(steps0))
	logSyncSteps(t, m)
	for _, i := range l.sampled() {
		k := l.kind(i)
		tc, wrong := timeCommits(gen.log[i], onWus[i], l.shift(i), out.start, out.end)
		out.commits[k] = append(out.commits[k], tc...)
		if wrong >= 0 {
			out.wrong[k] = append(out.wrong[k], fmt.Sprintf("%s served %d", l.group(i), wrong))
		}
	}
	return out
}

// syncCounts are the offsets sync committed on wus and the own commits it read on scus.
func syncCounts(t *testing.T, listen string) (sent, received float64) {
	return metric(t, listen, "kop_offsets_sync_commits_total", `cluster="wus"`),
		metric(t, listen, "kop_offsets_sync_source_commits_total", `cluster="scus"`)
}

// sampleWus asks wus every 50 ms what it serves for the sampled groups, until ctx ends,
// keeping each change with when it was seen.
func sampleWus(ctx context.Context, t *testing.T, wg *sync.WaitGroup, l *scaleLoad, gen *committer) map[int]*served {
	onWus := map[int]*served{}
	idx := l.sampled()
	names := make([]string, len(idx))
	for k, i := range idx {
		onWus[i], names[k] = &served{}, l.group(i)
	}
	// OffsetFetch requests of 50 groups (v8), as watch asks: light enough that the
	// measurement does not load wus's KoP (one request per group, eight at a time without
	// pause, added seconds to the latency it measured).
	wus := labtest.Kafka(t, theLab.Cluster("wus"))
	f := &kop.Fetcher{Admin: kadm.NewClient(wus), Client: wus}
	wg.Go(func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		last := map[int]int64{}
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
					o, ok := parts[0]
					if v, seen := last[i]; ok && strings.HasSuffix(topic, gen.topic(i)) && (!seen || v != o) {
						onWus[i].add(o)
						last[i] = o
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	})
	return onWus
}

// progress reads the commits acknowledged and the tool's CPU every second until ctx ends,
// logging them every c.window, and returns what it read.
func progress(ctx context.Context, t *testing.T, m *scaleMode, gen *committer, start time.Time, c scaleConfig) []tick {
	var ticks []tick
	read := func() tick {
		cpu, _ := procCPU(m.p.pid())
		return tick{at: time.Now(), acked: gen.acked.Load(), cpu: cpu}
	}
	ticks = append(ticks, read())
	every := time.NewTicker(time.Second)
	defer every.Stop()
	logged := ticks[0]
	for {
		select {
		case <-ctx.Done():
			return append(ticks, read())
		case <-every.C:
		}
		tk := read()
		ticks = append(ticks, tk)
		if tk.at.Sub(logged.at) >= c.window {
			dt := tk.at.Sub(logged.at).Seconds()
			t.Logf("%s: %s of %s: %.0f commits/s acknowledged on scus, tool CPU %.0f %% of one core", m.name,
				tk.at.Sub(start).Round(time.Second), c.load, float64(tk.acked-logged.acked)/dt, 100*(tk.cpu-logged.cpu).Seconds()/dt)
			logged = tk
		}
	}
}

// timeCommits times the commits of log acknowledged from start: the first sample of on at
// or past the exact translation of each (scus's number minus shift) that is the translation
// of a commit made. wrong is a value on served that no commit makes (translated), or -1.
func timeCommits(log *commitLog, on *served, shift int64, start, end time.Time) (out []timedCommit, wrong int64) {
	log.mu.Lock()
	made := map[int64]bool{}
	for _, o := range log.off {
		made[o] = true
	}
	offs, ats := append([]int64(nil), log.off...), append([]time.Time(nil), log.at...)
	log.mu.Unlock()
	on.mu.Lock()
	vals, seen := append([]int64(nil), on.off...), append([]time.Time(nil), on.at...)
	on.mu.Unlock()
	wrong = -1
	for _, v := range vals {
		if !made[v+shift] {
			wrong = v
			break
		}
	}
	from, prev := 0, int64(-1) // commits ascend: each one's search starts at the last's answer
	for k, o := range offs {
		if ats[k].Before(start) {
			continue
		}
		if o < prev {
			from = 0
		}
		prev = o
		tc := timedCommit{at: ats[k], lat: end.Sub(ats[k])}
		for j := from; j < len(vals); j++ {
			// A sample may be read a moment before the committer logs the acknowledgement.
			if v := vals[j]; v >= o-shift && made[v+shift] {
				tc.lat, tc.served, from = max(seen[j].Sub(ats[k]), 0), true, j
				break
			}
		}
		out = append(out, tc)
	}
	return out, wrong
}

// logSyncSteps logs a dozen of the sync steps that asked groups (KOP_SYNC_VERBOSE).
func logSyncSteps(t *testing.T, m *scaleMode) {
	if len(verbose()) == 0 || m.key != "stream" {
		return
	}
	var last []string
	for l := range strings.Lines(m.p.stderr()) {
		if strings.Contains(l, "sync step") && !strings.Contains(l, `"groups":0,`) {
			last = append(last, strings.TrimSpace(l))
		}
	}
	var some []string
	for i := 0; i < len(last); i += max(1, len(last)/12) {
		some = append(some, last[i])
	}
	t.Logf("%s: sync steps that asked groups (KOP_SYNC_VERBOSE, %d of %d):\n%s", m.name, len(some), len(last), strings.Join(some, "\n"))
}
