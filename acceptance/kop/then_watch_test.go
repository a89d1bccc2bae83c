//go:build kop

package kop

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
)

// TestWatchRepairHealsStory: with `watch --repair` running, the user's story heals by
// itself: after the group commits 10900 on scus, KoP on wus serves 10900 within a few cycles
// with no command typed, and the staleness series has seen the episode.
func TestWatchRepairHealsStory(t *testing.T) {
	topic, group, _ := labtest.StoryAt500(t, theLab, "watch")
	labtest.WantServed(t, theLab, "wus", group, topic, "500", "wus serves %s, want 500")

	const listen = "127.0.0.1:19464"
	stop := cli.StartWatch(t, listen, 15, group)
	defer func() {
		if code, stopped := stop(); stopped && code != 0 {
			t.Errorf("watch exit %d after cancel", code)
		}
	}()

	labtest.CommitHealedOnWus(t, theLab, group, topic, 10900, 40*time.Second)
	// The reload is counted once its verification ends, and the episode once watch's next
	// cycle sees KoP serve the replicated commit: a moment after KoP serves again.
	metrics := labtest.WaitMetrics(t, listen, func(metrics string) bool {
		served := regexp.MustCompile(`(?m)^kop_offsets_staleness_served_seconds_count\{cluster="wus"\} [1-9]`).MatchString(metrics)
		return strings.Contains(metrics, "kop_offsets_watch_reloads_total{") && served
	})
	if !strings.Contains(metrics, "kop_offsets_watch_reloads_total{") {
		t.Errorf("no reload counted in /metrics:\n%s", labtest.Tail(metrics, 40))
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
	topic, group, part := settledGroup(t, "standby")
	labtest.Produce(t, theLab.Cluster("scus"), topic, 50)
	labtest.WaitEndOffset(t, theLab.Cluster("wus"), topic, 50)
	labtest.Commit(t, theLab, "scus", group, topic, 10)
	labtest.WaitReplicated(t, theLab, "scus", "wus", part)
	labtest.LoadOn(t, theLab, "wus", group)

	// A live member on scus consumes everything and commits 50.
	cl := labtest.Kafka(t, theLab.Cluster("scus"), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit())
	consumeAndCommit(t, cl, 40)
	labtest.WaitReplicated(t, theLab, "scus", "wus", part)
	labtest.WantServed(t, theLab, "wus", group, topic, "10", "wus serves %s before the repair, want the stale 10")
	code, d := cli.Repair(t, "--cluster", "wus", "--yes", "--group", group)
	if code != 0 || len(d.Stale) == 0 {
		t.Fatalf("repair of the standby with the group live on scus: exit %d, %+v", code, d)
	}
	labtest.WantServed(t, theLab, "wus", group, topic, "50", "wus serves %s after the repair, want 50 (what the live member committed on scus)")
}

// TestWatchRefusesExactlyOnceHealsStandby, with `watch --repair` running over both clusters:
//   - scus: an exactly-once group T (served 600 by the live path only) shares its offsets
//     partition with a group S whose cache on scus is stale (S committed on wus, replicated
//     behind scus's KoP): reloading that bundle would lose T's 600, so watch refuses it,
//     counts the refusal, and KoP on scus still serves 600 for T;
//   - wus: a group L live on scus (a member consuming there) commits; watch reloads wus
//     (no member there) and KoP on wus serves what L committed on scus.
func TestWatchRefusesExactlyOnceHealsStandby(t *testing.T) {
	in := labtest.NewTopic(t, theLab, "wtxn-in")
	txnGroup := labtest.Name("wtxn-group")
	part := loader.PartitionFor(txnGroup, lab.OffsetsTopicPartitions)
	stale := labtest.Name("wtxn-neighbour")
	for loader.PartitionFor(stale, lab.OffsetsTopicPartitions) != part {
		stale = labtest.Name("wtxn-neighbour")
	}
	live := labtest.Name("wlive-group")
	livePart := loader.PartitionFor(live, lab.OffsetsTopicPartitions)
	labtest.Settle(t, theLab, txnGroup, stale, live)
	consumeTransactionally(t, "scus", txnGroup, in, 600)
	topic := labtest.NewTopic(t, theLab, "wlive")
	labtest.Produce(t, theLab.Cluster("scus"), topic, 50)
	labtest.WaitEndOffset(t, theLab.Cluster("wus"), topic, 50)
	labtest.Commit(t, theLab, "scus", live, topic, 10)
	labtest.WaitReplicated(t, theLab, "scus", "wus", livePart)
	labtest.LoadOn(t, theLab, "wus", live) // wus caches 10

	const listen = "127.0.0.1:19465"
	stop := cli.StartWatch(t, listen, 20, txnGroup, stale, live)
	defer stop()

	// S commits on wus: replicated to scus behind its KoP, scus is stale for S.
	labtest.Commit(t, theLab, "wus", stale, in, 5)
	// L's live member on scus resumes at its committed 10, consumes the other 40 and commits 50.
	cl := labtest.Kafka(t, theLab.Cluster("scus"), kgo.ConsumerGroup(live), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	consumeAndCommit(t, cl, 40)

	start := time.Now()
	for labtest.Served(t, theLab, "wus", live, topic) != "50" {
		if time.Since(start) > 60*time.Second {
			t.Fatalf("wus serves %s for %s (live on scus) after %s of watch --repair, want 50", labtest.Served(t, theLab, "wus", live, topic), live, time.Since(start))
		}
		time.Sleep(time.Second)
	}
	t.Logf("wus serves 50 for %s, live on scus, %s after its commit", live, time.Since(start).Round(100*time.Millisecond))
	var metrics string
	for deadline := time.Now().Add(60 * time.Second); ; {
		metrics = labtest.Get(t, "http://"+listen+"/metrics")
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
	labtest.WantServed(t, theLab, "scus", txnGroup, in, "600", "scus serves %s for the exactly-once group with watch --repair running, want 600")
}

// consumeAndCommit polls cl, a member on scus, until it got n records (within two minutes),
// and commits what it consumed.
func consumeAndCommit(t *testing.T, cl *kgo.Client, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for got := 0; got < n; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumer on scus: %v", ctx.Err())
		}
		got += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
}
