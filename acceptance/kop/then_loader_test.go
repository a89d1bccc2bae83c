//go:build kop

package kop

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/connect"
	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest/labcli"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// TestExactlyOnceGroupLeftAlone: a group that commits its offsets inside Kafka transactions
// (franz-go GroupTransactSession, read_committed). KoP's live path applies the commit; its
// loader never can (the COMMIT marker is a Pulsar marker entry no reader sees). check must
// not call the healthy cache stale, repair must leave it alone, reload must refuse, and KoP
// must still serve the offset afterwards.
func TestExactlyOnceGroupLeftAlone(t *testing.T) {
	in := labtest.NewTopic(t, theLab, "txn-in")
	group := labtest.Name("txn-group")
	labtest.Settle(t, theLab, group)
	consumeTransactionally(t, "scus", group, in, 600)

	rep, code := cli.Check(t, "--cluster", "scus", "--group", group)
	r := labcli.Row(t, rep, group)
	c := r.Cell("scus")
	if c.Status != verdict.StatusCacheAhead || labtest.Val(c.Cached) != "600" || !strings.Contains(c.Detail, "transactional") {
		t.Fatalf("check: exit %d, status %s, cell %+v (want cache_ahead with a transactional detail)", code, r.Status, c)
	}
	if c.Status == verdict.StatusStaleCache {
		t.Fatal("check calls a healthy transactional cache stale")
	}

	code, d := cli.Repair(t, "--cluster", "scus", "--yes", "--max-bundles", "8")
	for _, cr := range d.Clusters {
		if cr.Execution != nil && len(cr.Execution.Unloaded) > 0 {
			t.Errorf("repair unloaded %v on %s with the transactional group in the lab", cr.Execution.Unloaded, cr.Cluster)
		}
	}
	left := false
	for _, l := range d.Left {
		if l.Group == group && strings.Contains(l.Reason, "would lose") {
			left = true
		}
	}
	if !left {
		t.Errorf("repair exit %d: the transactional group is not among the rows it left, with the reason: %+v", code, d.Left)
	}

	code, outText := cli.Run(t, "--timeout", "10s", "reload", "--cluster", "scus", "--group", group, "--yes")
	if code != 4 || !strings.Contains(outText, "would serve none") {
		t.Errorf("reload of the transactional group's bundle: exit %d (want 4, refused with the loss named)", code)
	}
	labtest.WantServed(t, theLab, "scus", group, in, "600", "scus serves %s after repair and reload, want 600 still")
}

// TestPoisonedPartitionPredicted: a record KoP cannot parse (raw bytes, not a record batch)
// in an offsets partition of wus, written with a Pulsar producer without replication. check
// names the partition unloadable; repair does not bounce its bundle; reload refuses; with
// --accept-loss the reload shows the prediction was right (KoP then serves nothing for the
// partition); the record is then removed (an empty message with its key, and compaction)
// and a reload brings the offset back.
func TestPoisonedPartitionPredicted(t *testing.T) {
	topic, group, part := settledGroup(t, "poison")
	wus := theLab.Cluster("wus")
	labtest.Commit(t, theLab, "wus", group, topic, 42)
	labtest.WantServed(t, theLab, "wus", group, topic, "42", "wus serves %s, want 42")

	partTopic := fmt.Sprintf("%s-partition-%d", lab.OffsetsTopic, part)
	key := "kop-offsets-kopsuite-poison"
	send := func(value []byte) {
		t.Helper()
		pc := labtest.Pulsar(t, wus)
		p, err := pc.CreateProducer(pulsar.ProducerOptions{Topic: partTopic, DisableBatching: true})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Key: key, Payload: value, DisableReplication: true}); err != nil {
			t.Fatal(err)
		}
	}
	cleaned := false
	cleanup := func() {
		if cleaned {
			return
		}
		cleaned = true
		send(nil) // compaction drops the key: the loader's compacted view no longer has the record
		compact(t, wus, partTopic)
	}
	t.Cleanup(cleanup)
	send([]byte("kop-offsets kop suite: not a record batch"))

	rep, code := cli.Check(t, "--cluster", "wus", "--group", group)
	r := labcli.Row(t, rep, group)
	c := r.Cell("wus")
	if code != 1 || c.Status != verdict.StatusUnloadable || !strings.Contains(c.Detail, fmt.Sprintf("offsets partition %d", part)) {
		t.Fatalf("check: exit %d, cell %+v", code, c)
	}
	warned := false
	for _, w := range rep.Warnings {
		warned = warned || strings.Contains(w, fmt.Sprintf("offsets partition %d: KoP cannot load it", part))
	}
	if !warned {
		t.Errorf("check warnings do not name the partition: %v", rep.Warnings)
	}

	_, d := cli.Repair(t, "--cluster", "wus", "--yes", "--max-bundles", "8")
	for _, cr := range d.Clusters {
		if cr.Execution != nil && len(cr.Execution.Unloaded) > 0 {
			t.Errorf("repair bounced bundles %v on %s", cr.Execution.Unloaded, cr.Cluster)
		}
	}
	labtest.WantServed(t, theLab, "wus", group, topic, "42", "wus serves %s after repair, want 42 (nothing reloaded)")
	if code, _ := cli.Run(t, "--timeout", "10s", "reload", "--cluster", "wus", "--group", group, "--yes"); code != 4 {
		t.Errorf("reload of the poisoned partition's bundle: exit %d, want 4 (refused)", code)
	}

	// The prediction, shown on KoP: with the loss accepted, KoP loads nothing of it.
	code, _ = cli.Run(t, "--timeout", "10s", "reload", "--cluster", "wus", "--group", group, "--yes", "--accept-loss", "--allow-active", "--wait", "15s")
	if got := labtest.Served(t, theLab, "wus", group, topic); got != "none" {
		t.Fatalf("reload --accept-loss exit %d: wus serves %s for a group of a partition KoP cannot load, want none", code, got)
	}
	t.Logf("KoP on wus serves no offset for %s after loading poisoned offsets partition %d, as predicted", group, part)

	cleanup()
	rep, _ = cli.Check(t, "--cluster", "wus", "--persisted-only", "--group", group)
	if c := labcli.Row(t, rep, group).Cell("wus"); c.Status == verdict.StatusUnloadable {
		t.Fatalf("after compaction the partition is still unloadable: %+v", c)
	}
	if code, _ := cli.Run(t, "--timeout", "10s", "reload", "--cluster", "wus", "--group", group, "--yes"); code != 0 {
		t.Fatalf("reload after cleanup: exit %d", code)
	}
	labtest.WantServed(t, theLab, "wus", group, topic, "42", "wus serves %s after cleanup and reload, want 42")
}

// compact triggers compaction of one topic on c and waits for it to succeed.
func compact(t *testing.T, c lab.Cluster, topic string) {
	t.Helper()
	tn, err := utils.GetTopicName(topic)
	if err != nil {
		t.Fatal(err)
	}
	a := labtest.Admin(t, c)
	// Pulsar 2.10's compactor gave up once on a loaded 2-core lab (LowOverheadTimeoutException:
	// Timeout): a timed-out compaction is asked for again, twice at most.
	for attempt := 1; ; attempt++ {
		if err := a.Topics().Compact(*tn); err != nil {
			t.Fatalf("%s: compact %s: %v", c.Name, topic, err)
		}
		lastErr, ok := compactionDone(t, a, c.Name, topic, *tn)
		if ok {
			return
		}
		if !strings.Contains(lastErr, "Timeout") || attempt == 3 {
			t.Fatalf("%s: compaction of %s failed (attempt %d): %s", c.Name, topic, attempt, lastErr)
		}
		t.Logf("%s: compaction of %s timed out (attempt %d): asking again", c.Name, topic, attempt)
	}
}

// compactionDone waits (2 minutes at most) for the compaction of topic to end: ok, or the
// compactor's error.
func compactionDone(t *testing.T, a pulsaradmin.Client, cluster, topic string, tn utils.TopicName) (string, bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st, err := a.Topics().CompactStatus(tn)
		if err == nil && st.Status == utils.SUCCESS {
			return "", true
		}
		if err == nil && st.Status == utils.ERROR {
			return st.LastError, false
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: compaction of %s not done: %+v %v", cluster, topic, st, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestRepairManyBundlesLeavesEveryPartitionLoaded: stale caches in every bundle of wus;
// repair --max-bundles 8 reloads them one after the other, each only once KoP answers for
// every partition of the previous one, and afterwards KoP answers for all 8 partitions.
func TestRepairManyBundlesLeavesEveryPartitionLoaded(t *testing.T) {
	topic := labtest.NewTopic(t, theLab, "paced")
	var groups []string
	for p := range int32(lab.OffsetsTopicPartitions) {
		g := loader.ProbeGroup(p, lab.OffsetsTopicPartitions) + "-" + labtest.Name("paced")
		for loader.PartitionFor(g, lab.OffsetsTopicPartitions) != p {
			g = labtest.Name(fmt.Sprintf("paced-%d", p))
		}
		groups = append(groups, g)
	}
	labtest.Settle(t, theLab, groups...)
	for _, g := range groups {
		labtest.Commit(t, theLab, "scus", g, topic, 1)
	}
	for p := range int32(lab.OffsetsTopicPartitions) {
		labtest.WaitReplicated(t, theLab, "scus", "wus", p)
	}
	for _, g := range groups {
		labtest.LoadOn(t, theLab, "wus", g) // wus caches 1
	}
	for _, g := range groups {
		labtest.Commit(t, theLab, "scus", g, topic, 2)
	}
	for p := range int32(lab.OffsetsTopicPartitions) {
		labtest.WaitReplicated(t, theLab, "scus", "wus", p)
	}
	code, d := cli.Repair(t, "--cluster", "wus", "--yes", "--max-bundles", "8")
	if code != 0 || d.After == nil || len(d.After.Stale) != 0 {
		t.Fatalf("repair: exit %d, after %+v", code, d.After)
	}
	for p := range int32(lab.OffsetsTopicPartitions) {
		if err := rawOffsetFetch(t, theLab.Cluster("wus"), loader.ProbeGroup(p, lab.OffsetsTopicPartitions)); err != nil {
			t.Errorf("wus offsets partition %d after repair: %v", p, err)
		}
	}
	for _, g := range groups {
		if got := labtest.Served(t, theLab, "wus", g, topic); got != "2" {
			t.Errorf("wus serves %s for %s, want 2", got, g)
		}
	}
}

// awaitPartition waits until c's KoP answers for offsets partition p (a probe group: no
// NOT_COORDINATOR, no loading), so that a test does not commit into a partition KoP is still
// loading.
func awaitPartition(t *testing.T, c lab.Cluster, p int32, topic string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		// Through FindCoordinator (kadm), which makes KoP look the partition up: on a lab
		// just started nobody may own its bundle yet, and a raw OffsetFetch would only ever
		// get NOT_COORDINATOR.
		fctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		_, _, err := lab.FetchThroughKoP(fctx, c, loader.ProbeGroup(p, lab.OffsetsTopicPartitions), topic, 0)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: offsets partition %d does not answer: %v", c.Name, p, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// consumeTransactionally produces n records to in on cluster and consumes them as group with
// a franz-go GroupTransactSession (read_committed, offsets committed in each transaction),
// then waits until KoP serves n for the group.
func consumeTransactionally(t *testing.T, cluster, group, in string, n int) {
	t.Helper()
	out := labtest.NewTopic(t, theLab, "txn-out")
	c := theLab.Cluster(cluster)
	labtest.Produce(t, c, in, n)
	awaitPartition(t, c, loader.PartitionFor(group, lab.OffsetsTopicPartitions), in)

	base, err := connect.KafkaOpts(config.Cluster{Name: c.Name, KafkaBootstrap: []string{c.KafkaBootstrap}}, connect.Options{RequestTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := kgo.NewGroupTransactSession(append(base,
		kgo.TransactionalID(labtest.Name("txn-id")), kgo.ConsumerGroup(group), kgo.ConsumeTopics(in),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DefaultProduceTopic(out))...)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	consumed := 0
	for consumed < n {
		fs := sess.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d transactionally: %v", consumed, n, ctx.Err())
		}
		fs.EachError(func(tp string, p int32, err error) { t.Logf("fetch %s/%d: %v", tp, p, err) })
		if err := sess.Begin(); err != nil {
			t.Fatalf("begin: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			consumed++
			sess.Produce(ctx, &kgo.Record{Key: r.Key, Value: r.Value}, nil)
		})
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil || !committed {
			t.Fatalf("end transaction: committed %v, %v", committed, err)
		}
	}
	sess.Close()
	t.Logf("%s: %s consumed %d records of %s in transactions", cluster, group, n, in)
	// The COMMIT completes asynchronously (the transaction coordinator writes the markers).
	want := fmt.Sprint(n)
	for deadline := time.Now().Add(30 * time.Second); labtest.Served(t, theLab, cluster, group, in) != want; {
		if time.Now().After(deadline) {
			t.Fatalf("%s serves %s for the transactional group, want %s", cluster, labtest.Served(t, theLab, cluster, group, in), want)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
