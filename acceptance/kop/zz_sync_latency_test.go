//go:build kop

package kop

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
)

// TestSyncLatency measures streaming sync on real KoP (issue 46 (a)): one group commits on
// scus, one commit at a time on an otherwise idle lab, and the time from each commit's
// acknowledgement on scus to wus serving its exact translation is measured, wus asked every
// millisecond, on an aligned topic and on a misaligned one (300 messages on scus alone: scus
// N is wus N-300). With KOP_SYNC_BASELINE=<another kop-offsets binary> (the release before,
// whose watch --sync ran once per cycle) the same is measured for it first, in the same run,
// and printed beside (docs/performance.md).
func TestSyncLatency(t *testing.T) {
	const commits = 40
	aTopic, aGroup, _ := settledGroup(t, "sync-lat-aligned")
	labtest.Produce(t, theLab.Cluster("scus"), aTopic, 2*commits*10+100)
	labtest.WaitEndOffset(t, theLab.Cluster("wus"), aTopic, 2*commits*10+100)
	mTopic, mGroup, _ := settledGroup(t, "sync-lat-shifted")
	shiftedCopies(t, mTopic, 300, 2*commits*10+100)
	syncSetUp(t, "--group", aGroup, "--group", mGroup)
	scus, wus := kafkaAdmin(t, "scus"), kafkaAdmin(t, "wus")

	type run struct{ name, bin string }
	runs := []run{}
	if b := os.Getenv("KOP_SYNC_BASELINE"); b != "" {
		runs = append(runs, run{"baseline " + b, b})
	}
	runs = append(runs, run{"this build", labtest.Binary(t)})
	cfg := labtest.ConfigCopy(t, theLab, "sync-latency")
	var table []string
	next := int64(10) // commits only move forward across runs: each is new to the sync
	for _, r := range runs {
		listen := labtest.FreeListen(t)
		args := []string{"--timeout", "10s", "--verbose", "watch", "--sync", "--listen", listen, "--group", aGroup, "--group", mGroup, "--audit-file", ""}
		if r.name != "this build" {
			args = append(args, "--interval", "1s") // the baseline syncs once per cycle
		}
		p := startProcess(t, r.bin, "sync", cfg, args...)
		labtest.WaitReady(t, "http://"+listen+"/readyz", func() error { return nil })
		waitActive(t, listen, 1)
		for _, c := range []struct {
			kind, topic, group string
			shift              int64
		}{{"aligned", aTopic, aGroup, 0}, {"misaligned", mTopic, mGroup, 300}} {
			offs := make([]int64, commits)
			for i := range offs {
				offs[i] = c.shift + next + int64(i)*10
			}
			lat, missed := syncLatencies(t, scus, wus, c.group, c.topic, offs, c.shift)
			t.Logf("%s, %s: each commit's latency in order: %v", r.name, c.kind, roundAll(lat))
			table = append(table, fmt.Sprintf("%-28s %-10s commits %d  p50 %8s  p99 %8s  max %8s  not served in 10 s %d",
				r.name, c.kind, len(lat), percentile(lat, .5).Round(100*time.Microsecond), percentile(lat, .99).Round(100*time.Microsecond),
				percentile(lat, 1).Round(100*time.Microsecond), missed))
			// Every commit served; the median far below a cycle (a sync once per 1 s cycle
			// waits about a second). p99 is printed, not asserted: with 40 commits it is the
			// first one, which reads both copies, and it moves with the machine's load.
			if r.name == "this build" && (missed > 0 || percentile(lat, .5) > 250*time.Millisecond) {
				t.Errorf("%s: streaming sync p50 %s, %d commits not served in 10 s (want every one, p50 far below a second)", c.kind, percentile(lat, .5), missed)
			}
		}
		next += commits * 10
		sent := metric(t, listen, "kop_offsets_sync_commits_total", `cluster="wus"`)
		table = append(table, fmt.Sprintf("%-28s offsets committed on wus %v for %d commits on scus; unloads %v", r.name, sent, 2*commits,
			metric(t, listen, "kop_offsets_watch_reloads_total")))
		if r.name == "this build" && sent > 2*commits {
			t.Errorf("%v offsets committed on wus for %d commits on scus: never more than received", sent, 2*commits)
		}
		steps := strings.Split(grepLines(p.stderr(), "sync step", 1000), "\n")
		t.Logf("%s: its first sync steps:\n%s", r.name, strings.Join(steps[:min(len(steps), 8)], "\n"))
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		p.wait(t, time.Minute)
	}
	t.Logf("sync latency, a commit acknowledged on scus to wus serving its translation (one group, otherwise idle lab, KoP %s):\n%s",
		theLab.KoP.Version, strings.Join(table, "\n"))
}

// kafkaAdmin is a kadm client of cluster's KoP, closed at the end of the test.
func kafkaAdmin(t *testing.T, cluster string) *kadm.Client {
	t.Helper()
	cl, err := lab.KafkaClient(theLab.Cluster(cluster))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// syncLatencies commits each of offs for group on scus (one at a time, 50 ms apart) and
// returns, for each, the time from its acknowledgement to wus serving it minus shift; missed
// counts those wus did not serve within 10 s.
func syncLatencies(t *testing.T, scus, wus *kadm.Client, group, topic string, offs []int64, shift int64) (lat []time.Duration, missed int) {
	t.Helper()
	ctx := context.Background()
	for _, o := range offs {
		commitOn(t, scus, "scus", group, topic, o)
		d, got, ok := servedWithin(ctx, wus, group, topic, o-shift, 10*time.Second)
		if ok {
			lat = append(lat, d)
		} else {
			t.Logf("wus serves %d 10 s after scus's %d, want %d", got, o, o-shift)
			missed++
		}
		time.Sleep(50 * time.Millisecond)
	}
	return lat, missed
}

// servedWithin asks adm every millisecond, from now, until KoP serves want for group's
// topic/0 or within has passed: how long it took, and what it served last.
func servedWithin(ctx context.Context, adm *kadm.Client, group, topic string, want int64, within time.Duration) (time.Duration, int64, bool) {
	start := time.Now()
	for {
		got, ok := servedBy(ctx, adm, group, topic)
		if ok && got == want {
			return time.Since(start), got, true
		}
		if time.Since(start) > within {
			return time.Since(start), got, false
		}
		time.Sleep(time.Millisecond)
	}
}

// servedBy is what KoP serves for group's topic/0 (its answer names topics
// tenant/ns/topic on KoP 3.1, short on others).
func servedBy(ctx context.Context, adm *kadm.Client, group, topic string) (int64, bool) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := adm.FetchOffsets(cctx, group)
	if err != nil || resp.Error() != nil {
		return 0, false
	}
	for name, ps := range resp {
		if o, ok := ps[0]; ok && (name == topic || strings.HasSuffix(name, "/"+topic)) && o.At >= 0 {
			return o.At, true
		}
	}
	return 0, false
}

// roundAll is ds rounded to 0.1 ms, in order (for the log).
func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(100 * time.Microsecond)
	}
	return out
}
