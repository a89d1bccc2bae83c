//go:build kop

package kop

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The tables of TestSyncScale.

const scaleHeader = "| groups | topics | mode | commits/s acknowledged on scus | commits sampled | served exactly | p50 | p99 | max | p99 first minute → last minute (lag slope) | groups wus served a value no commit makes | OffsetCommits sent on wus / commits received | unloads (per hour) | tool CPU (of one core) | CPU per commit | tool peak RSS |"

const windowHeader = "| groups | mode | from | to | commits/s acknowledged | tool CPU | topics | commits sampled | served exactly | p50 | p99 | max |"

// scaleRule is the markdown rule under header.
func scaleRule(header string) string {
	return "|" + strings.Repeat("---|", strings.Count(header, "|")-1)
}

// rows are o's two rows: aligned, misaligned (the phase's load, CPU, memory, OffsetCommits
// and unloads are of both at once).
func (o phaseOut) rows(n int) []string {
	span := o.end.Sub(o.start)
	sent := "none (replication)"
	if o.sync {
		sent = fmt.Sprintf("%.0f / %.0f (%.2f)", o.sent, o.received, o.sent/max(o.received, 1))
		if o.receivedAcked {
			sent += ", received: acknowledged on scus"
		}
	}
	common := fmt.Sprintf("%s | %.0f (%.0f) | %s (%.0f %%) | %s | %.0f MiB |", sent, o.unloads, o.unloads/span.Hours(),
		o.cpu.Round(10*time.Millisecond), 100*o.cpu.Seconds()/span.Seconds(),
		(o.cpu / time.Duration(max(o.acked, 1))).Round(time.Microsecond), float64(o.hwm)/(1<<20))
	var out []string
	for k, cs := range o.commits {
		lat := servedOf(cs)
		out = append(out, fmt.Sprintf("| %d | %s | %s | %.0f | %d | %d (%.0f %%) | %s | %s | %s | %s | %d | %s",
			n, scaleKinds[k], o.mode, float64(o.acked)/o.loadEnd.Sub(o.start).Seconds(), len(cs), len(lat), 100*float64(len(lat))/float64(max(len(cs), 1)),
			ms(percentile(lat, .5)), ms(percentile(lat, .99)), ms(percentile(lat, 1)), o.trend(cs), len(o.wrong[k]), common))
	}
	return out
}

// servedOf are the latencies of the commits served.
func servedOf(cs []timedCommit) []time.Duration {
	var out []time.Duration
	for _, c := range cs {
		if c.served {
			out = append(out, c.lat)
		}
	}
	return out
}

// ms is d for the tables (none: -1).
func ms(d time.Duration) string {
	switch {
	case d < 0:
		return "none"
	case d < 10*time.Second:
		return d.Round(time.Millisecond).String()
	default:
		return d.Round(100 * time.Millisecond).String()
	}
}

// trend is the p99 of the commits of the load's first minute and of its last, and the
// slope of every commit's lag over the load (least squares, a commit not served counting
// for its lower bound, the time to the phase's end): a lag that does not grow has a slope
// near 0. Loads under two minutes have no trend.
func (o phaseOut) trend(cs []timedCommit) string {
	if o.loadEnd.Sub(o.start) < 2*time.Minute {
		return "—"
	}
	var first, last []time.Duration
	var sx, sy, sxx, sxy float64
	for _, c := range cs {
		if c.served && c.at.Before(o.start.Add(time.Minute)) {
			first = append(first, c.lat)
		}
		if c.served && !c.at.Before(o.loadEnd.Add(-time.Minute)) {
			last = append(last, c.lat)
		}
		x, y := c.at.Sub(o.start).Minutes(), float64(c.lat.Milliseconds())
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	n := float64(len(cs))
	slope := 0.0
	if d := n*sxx - sx*sx; d > 0 {
		slope = (n*sxy - sx*sy) / d
	}
	return fmt.Sprintf("%s → %s (%+.0f ms/min)", ms(percentile(first, .99)), ms(percentile(last, .99)), slope)
}

// windowRows are o's lag by window of w over its load, two rows (aligned, misaligned) each.
func (o phaseOut) windowRows(n int, w time.Duration) []string {
	var out []string
	for from := o.start; from.Before(o.loadEnd); from = from.Add(w) {
		to := from.Add(w)
		if to.After(o.loadEnd) {
			to = o.loadEnd
		}
		a, b := o.tickAt(from), o.tickAt(to)
		dt := max(b.at.Sub(a.at).Seconds(), 0.001)
		for k, cs := range o.commits {
			var in []timedCommit
			for _, c := range cs {
				if !c.at.Before(from) && c.at.Before(to) {
					in = append(in, c)
				}
			}
			lat := servedOf(in)
			out = append(out, fmt.Sprintf("| %d | %s | %s | %s | %.0f | %.0f %% | %s | %d | %d (%.0f %%) | %s | %s | %s |",
				n, o.mode, from.Sub(o.start).Round(time.Second), to.Sub(o.start).Round(time.Second), float64(b.acked-a.acked)/dt,
				100*(b.cpu-a.cpu).Seconds()/dt, scaleKinds[k], len(in), len(lat), 100*float64(len(lat))/float64(max(len(in), 1)),
				ms(percentile(lat, .5)), ms(percentile(lat, .99)), ms(percentile(lat, 1))))
		}
	}
	return out
}

// tickAt is the first tick at or after at (the last when none).
func (o phaseOut) tickAt(at time.Time) tick {
	for _, tk := range o.ticks {
		if !tk.at.Before(at) {
			return tk
		}
	}
	if len(o.ticks) == 0 {
		return tick{at: at}
	}
	return o.ticks[len(o.ticks)-1]
}

// check fails t unless what must hold whatever the machine held: every value wus served is
// a commit's exact translation, no unload, never more offsets committed than received.
func (o phaseOut) check(t *testing.T) {
	t.Helper()
	for k, wrong := range o.wrong {
		if len(wrong) > 0 {
			t.Errorf("%s, %s topics: wus served values no commit makes (translated), for %d groups: %s", o.mode, scaleKinds[k], len(wrong), strings.Join(wrong[:min(3, len(wrong))], "; "))
		}
	}
	if o.unloads != 0 {
		t.Errorf("%s: %v unloads", o.mode, o.unloads)
	}
	if o.receivedAcked || o.sent > o.received {
		t.Errorf("%s: %v offsets committed on wus for %v commits received on scus (the tool's count: %v): never more, and counted", o.mode, o.sent, o.received, !o.receivedAcked)
	}
}
