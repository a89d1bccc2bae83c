//go:build kop

package kopsuite

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/lab/labtest"
	"github.com/kop-offsets/kop-offsets/internal/offsets"
)

// TestWatchRepairHealsStory: with `watch --repair` running, the user's story heals by
// itself: after the group commits 10900 on scus, KoP on wus serves 10900 within a few cycles
// with no command typed, and the staleness series has seen the episode.
func TestWatchRepairHealsStory(t *testing.T) {
	topic, group, _ := storyAt500(t, "watch")
	if got := served(t, "wus", group, topic); got != "500" {
		t.Fatalf("wus serves %s, want 500", got)
	}

	const listen = "127.0.0.1:19464"
	stop := startWatch(t, listen, 15, group)
	defer func() {
		if code, stopped := stop(); stopped && code != 0 {
			t.Errorf("watch exit %d after cancel", code)
		}
	}()

	start := time.Now()
	commit(t, "scus", group, topic, 10900)
	for served(t, "wus", group, topic) != "10900" {
		if time.Since(start) > 40*time.Second {
			t.Fatalf("wus still serves %s %s after the commit on scus, with watch --repair running", served(t, "wus", group, topic), time.Since(start))
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("wus serves 10900 %s after the commit on scus, healed by watch --repair", time.Since(start).Round(100*time.Millisecond))
	// The reload is counted once its verification ends, and the episode once watch's next
	// cycle sees KoP serve the replicated commit: a moment after KoP serves again.
	var metrics string
	for deadline := time.Now().Add(60 * time.Second); ; {
		metrics = get(t, "http://"+listen+"/metrics")
		served := regexp.MustCompile(`(?m)^kop_offsets_staleness_served_seconds_count\{cluster="wus"\} [1-9]`).MatchString(metrics)
		if strings.Contains(metrics, "kop_offsets_watch_reloads_total{") && served || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	if !strings.Contains(metrics, "kop_offsets_watch_reloads_total{") {
		t.Errorf("no reload counted in /metrics:\n%s", tail(metrics, 40))
	}
	episode := false
	for _, l := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(l, "kop_offsets_watch_reloads_total{") || strings.HasPrefix(l, "kop_offsets_staleness") {
			t.Log(l)
		}
		// The staleness series saw the episode: a replicated commit KoP on wus served late.
		if strings.HasPrefix(l, `kop_offsets_staleness_served_seconds_count{cluster="wus"}`) && !strings.HasSuffix(l, " 0") {
			episode = true
		}
	}
	if !episode {
		t.Error("the staleness series of wus did not record the episode")
	}
}

// TestRepairStandbyWhileLiveOnPrimary: the group's consumer is live on scus (active-passive);
// repair --cluster wus still reloads wus (no member there is touched) and wus serves what
// scus committed.
func TestRepairStandbyWhileLiveOnPrimary(t *testing.T) {
	topic := newTopic(t, "standby")
	group := labtest.Name("standby-group")
	part := offsets.PartitionFor(group, lab.OffsetsTopicPartitions)
	settle(t, group)
	produce(t, theLab.Cluster("scus"), topic, 50)
	waitEndOffset(t, theLab.Cluster("wus"), topic, 50)
	commit(t, "scus", group, topic, 10)
	waitReplicated(t, "scus", "wus", part)
	loadOn(t, "wus", group)

	// A live member on scus consumes everything and commits 50.
	cl := labtest.Kafka(t, theLab.Cluster("scus"), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for n := 0; n < 40; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumer on scus: %v", ctx.Err())
		}
		n += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	waitReplicated(t, "scus", "wus", part)
	if got := served(t, "wus", group, topic); got != "10" {
		t.Fatalf("wus serves %s before the repair, want the stale 10", got)
	}
	code, d := repair(t, "--cluster", "wus", "--yes", "--group", group)
	if code != 0 || len(d.Stale) == 0 {
		t.Fatalf("repair of the standby with the group live on scus: exit %d, %+v", code, d)
	}
	if got := served(t, "wus", group, topic); got != "50" {
		t.Fatalf("wus serves %s after the repair, want 50 (what the live member committed on scus)", got)
	}
}

// startWatch runs `watch --repair` (2 s cycles) over groups in the background, listening on
// listen, and waits until it is ready. stop cancels it and returns its exit code, stopped
// false (with an error reported) when it did not end within 30 s; its last logLines lines of
// stderr are logged.
func startWatch(t *testing.T, listen string, logLines int, groups ...string) (stop func() (code int, stopped bool)) {
	t.Helper()
	args := []string{"--timeout", "10s", "watch", "--repair", "--interval", "2s", "--cooldown", "5s", "--max-bundles", "4", "--listen", listen}
	for _, g := range groups {
		args = append(args, "--group", g)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		code, _, errOut := runCLI(ctx, theLab, args...)
		t.Logf("watch stderr (last lines):\n%s", tail(errOut, logLines))
		done <- code
	}()
	var once sync.Once
	var code int
	var stopped bool
	stop = func() (int, bool) {
		once.Do(func() {
			cancel()
			select {
			case code = <-done:
				stopped = true
			case <-time.After(30 * time.Second):
				t.Error("watch did not stop within 30 s")
			}
		})
		return code, stopped
	}
	t.Cleanup(func() { stop() }) // also when waitReady fails the test
	waitReady(t, "http://"+listen+"/readyz")
	return stop
}

func waitReady(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(url)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready: %v", url, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + fmt.Sprintf("\n(%d lines)", len(lines))
}

// TestWatchRefusesExactlyOnceHealsStandby, with `watch --repair` running over both clusters:
//   - scus: an exactly-once group T (served 600 by the live path only) shares its offsets
//     partition with a group S whose cache on scus is stale (S committed on wus, replicated
//     behind scus's KoP): reloading that bundle would lose T's 600, so watch refuses it,
//     counts the refusal, and KoP on scus still serves 600 for T;
//   - wus: a group L live on scus (a member consuming there) commits; watch reloads wus
//     (no member there) and KoP on wus serves what L committed on scus.
func TestWatchRefusesExactlyOnceHealsStandby(t *testing.T) {
	in := newTopic(t, "wtxn-in")
	txnGroup := labtest.Name("wtxn-group")
	part := offsets.PartitionFor(txnGroup, lab.OffsetsTopicPartitions)
	stale := labtest.Name("wtxn-neighbour")
	for offsets.PartitionFor(stale, lab.OffsetsTopicPartitions) != part {
		stale = labtest.Name("wtxn-neighbour")
	}
	live := labtest.Name("wlive-group")
	livePart := offsets.PartitionFor(live, lab.OffsetsTopicPartitions)
	settle(t, txnGroup, stale, live)
	consumeTransactionally(t, "scus", txnGroup, in, 600)
	topic := newTopic(t, "wlive")
	produce(t, theLab.Cluster("scus"), topic, 50)
	waitEndOffset(t, theLab.Cluster("wus"), topic, 50)
	commit(t, "scus", live, topic, 10)
	waitReplicated(t, "scus", "wus", livePart)
	loadOn(t, "wus", live) // wus caches 10

	const listen = "127.0.0.1:19465"
	stop := startWatch(t, listen, 20, txnGroup, stale, live)
	defer stop()

	// S commits on wus: replicated to scus behind its KoP, scus is stale for S.
	commit(t, "wus", stale, in, 5)
	// L's live member on scus resumes at its committed 10, consumes the other 40 and commits 50.
	cl := labtest.Kafka(t, theLab.Cluster("scus"), kgo.ConsumerGroup(live), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	cctx, ccancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer ccancel()
	for n := 0; n < 40; {
		fs := cl.PollFetches(cctx)
		if cctx.Err() != nil {
			t.Fatalf("consumer on scus: %v", cctx.Err())
		}
		n += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(cctx); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	for served(t, "wus", live, topic) != "50" {
		if time.Since(start) > 60*time.Second {
			t.Fatalf("wus serves %s for %s (live on scus) after %s of watch --repair, want 50", served(t, "wus", live, topic), live, time.Since(start))
		}
		time.Sleep(time.Second)
	}
	t.Logf("wus serves 50 for %s, live on scus, %s after its commit", live, time.Since(start).Round(100*time.Millisecond))
	var metrics string
	for deadline := time.Now().Add(60 * time.Second); ; {
		metrics = get(t, "http://"+listen+"/metrics")
		if regexp.MustCompile(`(?m)^kop_offsets_watch_reloads_refused_total\{cluster="scus",reason="would_lose_offsets"\} [1-9]`).MatchString(metrics) || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	for _, l := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(l, "kop_offsets_watch_reloads") {
			t.Log(l)
		}
	}
	if !regexp.MustCompile(`(?m)^kop_offsets_watch_reloads_refused_total\{cluster="scus",reason="would_lose_offsets"\} [1-9]`).MatchString(metrics) {
		t.Error("watch did not count a refusal for lost offsets on scus")
	}
	if got := served(t, "scus", txnGroup, in); got != "600" {
		t.Fatalf("scus serves %s for the exactly-once group with watch --repair running, want 600", got)
	}
}
