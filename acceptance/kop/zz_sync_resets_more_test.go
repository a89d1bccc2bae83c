//go:build kop

package kop

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
)

// Issue 51 item 3, every kind of reset, on real KoP, beyond TestSyncFollowsResets (a
// misaligned single-partition topic through streaming sync): an aligned topic, one partition
// of several and all of them, a reset to a datetime, and kept translations with a failover
// (no sync). Each ends with a Kafka consumer of the group on the other cluster, whose first
// record must be the source's message at the reset point (offset and key).

// resetSync is a streaming sync (watch --sync) of one group between scus and wus, and the
// steps of the tests below: a commit on one cluster (the group empty, as a reset is) and the
// other cluster serving its translation.
type resetSync struct {
	t            *testing.T
	p            *process
	group, topic string
	adm          map[string]*kadm.Client
}

func startResetSync(t *testing.T, name, group, topic string) *resetSync {
	t.Helper()
	syncSetUp(t, "--group", group)
	adm := map[string]*kadm.Client{"scus": kafkaAdmin(t, "scus"), "wus": kafkaAdmin(t, "wus")}
	p := startSync(t, labtest.ConfigCopy(t, theLab, name), labtest.FreeListen(t), "10s", group)
	return &resetSync{t: t, p: p, group: group, topic: topic, adm: adm}
}

func other(cluster string) string {
	if cluster == "scus" {
		return "wus"
	}
	return "scus"
}

// reset commits offsets (partition: offset) on cluster on and waits (10 s at most) until
// the other cluster serves exactly want for every partition of the group's topic.
func (s *resetSync) reset(on string, offsets, want map[int32]int64, what string) {
	s.t.Helper()
	commitParts(s.t, s.adm[on], on, s.group, s.topic, offsets)
	to := other(on)
	d, got, ok := servedPartsWithin(context.Background(), s.adm[to], s.group, s.topic, want, 10*time.Second)
	if !ok {
		s.t.Fatalf("%s: %s committed %v; %s serves %v 10 s later, want %v; sync log:\n%s",
			what, on, offsets, to, got, want, grepLines(s.p.stderr(), s.group, 20))
	}
	s.t.Logf("%s: %s %v -> %s serves %v after %s", what, on, offsets, to, want, d.Round(time.Millisecond))
}

// reset0 is reset for partition 0 alone.
func (s *resetSync) reset0(on string, offset, want int64, what string) {
	s.t.Helper()
	s.reset(on, map[int32]int64{0: offset}, map[int32]int64{0: want}, what)
}

// first checks that a consumer of the group on cluster starts, on each partition p of at,
// at at[p], the message the other cluster holds at src[p] (the same key), and waits until
// it left the group.
func (s *resetSync) first(cluster string, at, src map[int32]int64) {
	s.t.Helper()
	firstRecordsAre(s.t, cluster, s.group, s.topic, at, other(cluster), src)
	waitNoMembers(s.t, cluster, s.group)
}

func (s *resetSync) noErrors() {
	s.t.Helper()
	if strings.Contains(s.p.stderr(), `"level":"ERROR"`) {
		s.t.Errorf("sync logged errors:\n%s", grepLines(s.p.stderr(), `"level":"ERROR"`, 10))
	}
}

// firstRecordsAre checks that a Kafka consumer of group on cluster starts, on each partition p
// of at, at offset at[p] with the key srcCluster holds at src[p] (read before the consumer,
// so that a stopped srcCluster fails the test here, not later), and logs what it read first.
func firstRecordsAre(t *testing.T, cluster, group, topic string, at map[int32]int64, srcCluster string, src map[int32]int64) {
	t.Helper()
	keys := map[int32]string{}
	for p, o := range src {
		keys[p] = string(recordAtPart(t, srcCluster, topic, p, o).Key)
	}
	got := firstRecords(t, cluster, group, topic, len(at))
	for _, p := range slices.Sorted(maps.Keys(at)) {
		r := got[p]
		if r == nil || r.Offset != at[p] || string(r.Key) != keys[p] {
			t.Fatalf("a consumer of the group on %s starts on %s[%d] at %v, want offset %d key %s (%s's %d)", cluster, topic, p, recordString(r), at[p], keys[p], srcCluster, src[p])
		}
		t.Logf("a consumer of the group on %s starts on partition %d at offset %d, key %s: %s's message at %d", cluster, p, r.Offset, r.Key, srcCluster, src[p])
	}
}

func recordString(r *kgo.Record) string {
	if r == nil {
		return "nothing"
	}
	return fmt.Sprintf("offset %d key %s", r.Offset, r.Key)
}

// TestSyncResetsAligned: resets through streaming sync on an ALIGNED topic (600 messages
// written on scus and replicated: the same offsets on both clusters). Homed on scus, the group
// consumes to 500 and is reset by a shift of -100, to the offset 250, to the earliest and
// forward to the latest; then homed on wus (its own newer commit there), the same four
// there. The other cluster serves each reset point exactly (on an aligned topic the
// translation is the number itself: any floor, the tool's own commit or the group's older
// one, would show), and a consumer of the group there starts at the message after it.
func TestSyncResetsAligned(t *testing.T) {
	topic, group, _ := settledGroup(t, "sync-resets-aligned")
	labtest.Produce(t, theLab.Cluster("scus"), topic, 600)
	labtest.WaitEndOffset(t, theLab.Cluster("wus"), topic, 600)
	s := startResetSync(t, "sync-resets-aligned", group, topic)
	at := func(o int64) map[int32]int64 { return map[int32]int64{0: o} }

	s.reset0("scus", 500, 500, "consumed to 500 on scus")
	s.reset0("scus", 400, 400, "reset by a shift of -100 on scus")
	s.first("wus", at(400), at(400))
	s.reset0("scus", 250, 250, "reset to the offset 250 on scus")
	s.reset0("scus", 0, 0, "reset to the earliest on scus")
	end := endOf(t, "scus", topic)
	s.reset0("scus", end, end, "reset forward to the latest on scus")
	produceKeys(t, "scus", topic, "after-latest-scus", 10)
	labtest.WaitEndOffset(t, theLab.Cluster("wus"), topic, end+10)
	s.first("wus", at(end), at(end))

	// Homed on wus: the group's own commit there is newer than every one on scus, where
	// the group's own last commit (the reset to the latest, 600) is a floor only while wus
	// stands at or past it.
	s.reset0("wus", end+10, end+10, "consumed to the end on wus")
	s.reset0("wus", end, end, "reset by a shift of -10 on wus")
	s.reset0("wus", 200, 200, "reset to the offset 200 on wus")
	s.first("scus", at(200), at(200))
	s.reset0("wus", 0, 0, "reset to the earliest on wus")
	end = endOf(t, "wus", topic)
	s.reset0("wus", end, end, "reset forward to the latest on wus")
	produceKeys(t, "scus", topic, "after-latest-wus", 10)
	labtest.WaitEndOffset(t, theLab.Cluster("wus"), topic, end+10)
	s.first("scus", at(end), at(end))
	s.noErrors()
}

// TestSyncResetsPartitions: resets of a group on a topic with 3 partitions, through
// streaming sync. Partition 0 is misaligned (100 messages on scus alone, then 300
// replicated: scus N is wus N-100), partition 1 aligned (300 replicated), partition 2
// misaligned in the middle (150 replicated, 50 on scus alone, 150 replicated: scus N is wus N
// below 150, wus N-50 from 200). The group consumes on scus, then ONE partition is reset
// (kafka-consumer-groups --topic t:2 --to-offset: a commit of that partition only): wus
// follows it and keeps the others where they were. Then ALL partitions are reset by a shift
// of -50. A consumer on wus starts on every partition at the message after the reset point.
func TestSyncResetsPartitions(t *testing.T) {
	topic, group := partitionedTopic(t, "sync-resets-parts", 3)
	scus := theLab.Cluster("scus")
	produceLocalTo(t, scus, topic, 0, 100)
	for p := range int32(3) {
		produceTo(t, scus, topic, p, "a", 150)
	}
	produceLocalTo(t, scus, topic, 2, 50)
	for p := range int32(3) {
		produceTo(t, scus, topic, p, "b", 150)
	}
	waitEnds(t, "scus", topic, map[int32]int64{0: 400, 1: 300, 2: 350})
	waitEnds(t, "wus", topic, map[int32]int64{0: 300, 1: 300, 2: 300})
	s := startResetSync(t, "sync-resets-parts", group, topic)

	s.reset("scus", map[int32]int64{0: 350, 1: 280, 2: 320}, map[int32]int64{0: 250, 1: 280, 2: 270}, "consumed on scus")
	s.reset("scus", map[int32]int64{2: 100}, map[int32]int64{0: 250, 1: 280, 2: 100}, "partition 2 alone reset to the offset 100")
	s.first("wus", map[int32]int64{0: 250, 1: 280, 2: 100}, map[int32]int64{0: 350, 1: 280, 2: 100})
	s.reset("scus", map[int32]int64{0: 300, 1: 230, 2: 50}, map[int32]int64{0: 200, 1: 230, 2: 50}, "all partitions reset by a shift of -50")
	s.first("wus", map[int32]int64{0: 200, 1: 230, 2: 50}, map[int32]int64{0: 300, 1: 230, 2: 50})
	s.noErrors()
}

// TestSyncResetsToDatetime: resets to a datetime through streaming sync, both directions, on
// a misaligned topic (300 messages on scus alone, then 300, 300 and 300 replicated, the
// second and third batches written after the datetimes T1 and T2: scus N is wus N-300). The
// offset is what kafka-consumer-groups --reset-offsets --to-datetime computes: ListOffsets by
// timestamp on the cluster the group runs on (the first message at or after it), committed
// with the group empty. Homed on scus (consumed to 1100), reset to T2; then homed on wus
// (consumed to 850), reset to T1 there: scus follows back below the group's own commit on
// scus, its own 300 messages still consumed.
func TestSyncResetsToDatetime(t *testing.T) {
	topic, group, _ := settledGroup(t, "sync-resets-datetime")
	shiftedCopies(t, topic, 300, 300)
	t1 := batchAfter(t, topic, "b", 300)
	t2 := batchAfter(t, topic, "c", 300)
	labtest.WaitEndOffset(t, theLab.Cluster("wus"), topic, 900)
	s := startResetSync(t, "sync-resets-datetime", group, topic)
	at := func(o int64) map[int32]int64 { return map[int32]int64{0: o} }

	s.reset0("scus", 1100, 800, "consumed to 1100 on scus")
	o := offsetForTime(t, s.adm["scus"], "scus", topic, t2, 900)
	s.reset0("scus", o, o-300, "reset to the datetime T2 on scus")
	s.first("wus", at(o-300), at(o))

	s.reset0("wus", 850, 1150, "consumed to 850 on wus")
	o = offsetForTime(t, s.adm["wus"], "wus", topic, t1, 300)
	s.reset0("wus", o, o+300, "reset to the datetime T1 on wus")
	s.first("scus", at(o+300), at(o))
	s.noErrors()
}

// TestSyncResetsKeptForFailover: kept translations (watch --keep-translations --cluster wus,
// the offsets topic replicated, no sync) follow a reset on the primary, and failover lands
// it. The group, homed on scus (300 messages on scus alone, then 1000 replicated: scus N is
// wus N-300), consumes to 1100 and is reset to 500 on scus. Once wus kept the translation of
// 500, scus stops (SIGSTOP) and failover --source scus --target wus lands the group on 200: a
// consumer on wus starts there (scus's 500), not at 800 (scus's 1100).
func TestSyncResetsKeptForFailover(t *testing.T) {
	topic, group, part := settledGroup(t, "kept-resets")
	shiftedCopies(t, topic, 300, 1000)
	keptResetFailover(t, topic, group, part, []int64{1100, 500}, 200)
}

// TestSyncResetsKeptBelowOwnCommit: a reset below the group's own commit on the standby.
// The group first ran on wus (300 messages on wus alone, then 1000 replicated from scus: scus
// N is wus N+300) and committed 800 there (scus 500); it moved to scus, consumed to 700 (wus
// 1000), and is reset on scus to 200 (wus 500), below where its own commit on wus stands.
// watch --keep-translations --cluster wus keeps it; scus stops and failover lands the group
// exactly on the reset point, 500: not at its own 800 on wus (the floor rule of sync: the
// newest intent wins), and not at 0 either (the 300 messages only wus holds, below 800, were
// consumed there).
func TestSyncResetsKeptBelowOwnCommit(t *testing.T) {
	topic, group, part := settledGroup(t, "kept-resets-own")
	scus, wus := theLab.Cluster("scus"), theLab.Cluster("wus")
	produceLocal(t, wus, topic, 300)
	labtest.WaitEndOffset(t, wus, topic, 300)
	labtest.Produce(t, scus, topic, 1000)
	labtest.WaitEndOffset(t, wus, topic, 1300)
	labtest.Commit(t, theLab, "wus", group, topic, 800) // its first life, on wus
	labtest.WaitReplicated(t, theLab, "wus", "scus", part)
	keptResetFailover(t, topic, group, part, []int64{700, 200}, 500)
}

// keptResetFailover runs watch --keep-translations --cluster wus for group, commits each of
// commits on scus (the last one a reset) and waits until wus kept each; makes wus's KoP load
// the group's offsets partition, stops scus (SIGSTOP) and runs failover --source scus --target wus.
// The failover must land the group on landed, the translation of the reset point kept on wus,
// and a consumer of the group on wus must start there, at scus's message at the reset point.
//
// The load before the stop: on this lab, after a failover had reloaded a wus bundle while
// scus was stopped, scus's replicator sent commits it had already replicated again; they
// landed on wus after an earlier test's kept translation, which was then no longer the newest
// record of its key. While scus is stopped such a group's alignment cannot be checked, and a
// failover refuses to reload a bundle that holds it (exit 4, nothing written). With the kept
// translation loaded, the failover has nothing to reload.
func keptResetFailover(t *testing.T, topic, group string, part int32, commits []int64, landed int64) {
	t.Helper()
	listen := labtest.FreeListen(t)
	stop := cli.StartWatchArgs(t, listen, 30, "--keep-translations", "--cluster", "wus", "--interval", "2s", "--group", group)
	for i, o := range commits {
		labtest.Commit(t, theLab, "scus", group, topic, o)
		labtest.WaitReplicated(t, theLab, "scus", "wus", part)
		keptCount(t, listen, "wus", i+1)
	}
	reset := commits[len(commits)-1]
	want := recordAt(t, "scus", topic, reset) // read while scus answers
	labtest.LoadOn(t, theLab, "wus", group)

	resume := labtest.PauseCluster(t, theLab, "scus")
	if code, _ := stop(); code != 0 {
		t.Logf("watch ended with exit %d (scus stopped)", code)
	}
	code, d, took := failover(t, "--source", "scus", "--target", "wus", "--group", group, "--source-gone")
	t.Logf("failover without scus: exit %d in %s", code, took.Round(time.Millisecond))
	if len(d.Plan.Rows) != 1 {
		t.Fatalf("failover without scus: exit %d, %+v", code, d)
	}
	r := d.Plan.Rows[0]
	var keptSrc any
	if r.Kept != nil {
		keptSrc = r.Kept.Source
	}
	t.Logf("failover row: %s, source %d, kept source %v, translated %s: %s", r.Action, r.Source, keptSrc, labtest.Val(r.Translated), r.Why)
	if r.Kept == nil || r.Kept.Source != reset || labtest.Val(r.Translated) != fmt.Sprint(landed) {
		t.Errorf("failover lands %s from the kept source %v, want %d from scus's reset point %d", labtest.Val(r.Translated), keptSrc, landed, reset)
	}
	// Nothing to write (the kept translation is served): no result; else its proof.
	if code != 0 || d.Result != nil && (len(d.Result.Proof) != 1 || !d.Result.Proof[0].OK) {
		t.Errorf("failover without scus: exit %d, %+v", code, d.Result)
	}
	first := labtest.FirstRecord(t, theLab, "wus", group, topic)
	if first.Offset != landed || string(first.Key) != string(want.Key) {
		t.Fatalf("a consumer on wus after the failover starts at %s, want offset %d key %s (scus's reset point %d)", recordString(first), landed, want.Key, reset)
	}
	t.Logf("a consumer of the group on wus after the failover starts at offset %d, key %s: scus's reset point %d", first.Offset, first.Key, reset)
	resume()
}

// partitionedTopic creates a Kafka topic with n partitions on both clusters (the namespace
// replicates) and a settled group named after it.
func partitionedTopic(t *testing.T, prefix string, n int) (topic, group string) {
	t.Helper()
	topic = labtest.Name(prefix)
	tn, err := utils.GetTopicName("persistent://public/default/" + topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range theLab.Clusters {
		if err := labtest.Admin(t, c).Topics().Create(*tn, n); err != nil && !strings.Contains(err.Error(), "409") {
			t.Fatalf("%s: create %s with %d partitions: %v", c.Name, tn, n, err)
		}
	}
	group = labtest.Name(prefix + "-group")
	labtest.Settle(t, theLab, group)
	return topic, group
}

// produceTo writes n records <prefix>-<p>-<i> to topic's partition p on c through KoP (they
// replicate).
func produceTo(t *testing.T, c lab.Cluster, topic string, p int32, prefix string, n int) {
	t.Helper()
	cl := labtest.Kafka(t, c, append(labtest.PatientProducer(), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	var rs []*kgo.Record
	for i := range n {
		rs = append(rs, &kgo.Record{Partition: p, Key: fmt.Appendf(nil, "%s-%d-%d", prefix, p, i), Value: []byte("v")})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("%s: produce to %s[%d]: %v", c.Name, topic, p, err)
	}
}

// produceLocalTo is produceLocal for partition p: n messages on c only (a Pulsar producer,
// replication disabled).
func produceLocalTo(t *testing.T, c lab.Cluster, topic string, p int32, n int) {
	t.Helper()
	prod, err := labtest.Pulsar(t, c).CreateProducer(pulsar.ProducerOptions{Topic: fmt.Sprintf("persistent://public/default/%s-partition-%d", topic, p), DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range n {
		if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Key: fmt.Sprintf("local-%s-%d-%d", c.Name, p, i), Payload: []byte("on " + c.Name + " only"), DisableReplication: true}); err != nil {
			t.Fatalf("%s: local record: %v", c.Name, err)
		}
	}
}

// waitEnds waits (3 minutes at most) until topic's partitions on cluster end at want.
func waitEnds(t *testing.T, cluster, topic string, want map[int32]int64) {
	t.Helper()
	adm := kafkaAdmin(t, cluster)
	got := map[int32]int64{}
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ends, err := adm.ListEndOffsets(ctx, topic)
		cancel()
		if err == nil {
			ends.Each(func(o kadm.ListedOffset) {
				if o.Err == nil {
					got[o.Partition] = o.Offset
				}
			})
			if maps.Equal(got, want) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s ends at %v, want %v (%v)", cluster, topic, got, want, err)
		}
	}
}

// commitParts commits offsets (partition: offset) for group's topic through KoP on cluster
// with adm (the group empty: as a reset does; only those partitions, as
// kafka-consumer-groups --topic t:p does).
func commitParts(t *testing.T, adm *kadm.Client, cluster, group, topic string, offsets map[int32]int64) {
	t.Helper()
	var os kadm.Offsets
	for p, o := range offsets {
		os.Add(kadm.Offset{Topic: topic, Partition: p, At: o, LeaderEpoch: -1})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := adm.CommitOffsets(ctx, group, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("%s: commit %v for %s: %v", cluster, offsets, group, err)
	}
}

// servedPartsWithin is servedWithin for several partitions: it asks adm every millisecond
// until KoP serves exactly want for each partition of want, or within has passed.
func servedPartsWithin(ctx context.Context, adm *kadm.Client, group, topic string, want map[int32]int64, within time.Duration) (time.Duration, map[int32]int64, bool) {
	start := time.Now()
	for {
		got := servedParts(ctx, adm, group, topic)
		ok := true
		for p, o := range want {
			v, has := got[p]
			ok = ok && has && v == o
		}
		if ok || time.Since(start) > within {
			return time.Since(start), got, ok
		}
		time.Sleep(time.Millisecond)
	}
}

// servedParts is what KoP serves for group's topic, by partition (servedBy).
func servedParts(ctx context.Context, adm *kadm.Client, group, topic string) map[int32]int64 {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	got := map[int32]int64{}
	resp, err := adm.FetchOffsets(cctx, group)
	if err != nil || resp.Error() != nil {
		return got
	}
	for name, ps := range resp {
		if name != topic && !strings.HasSuffix(name, "/"+topic) {
			continue
		}
		for p, o := range ps {
			if o.At >= 0 {
				got[p] = o.At
			}
		}
	}
	return got
}

// firstRecords joins group on cluster with a group consumer of topic (no commits) and
// returns the first record it gets of each of the topic's n partitions.
func firstRecords(t *testing.T, cluster, group, topic string, n int) map[int32]*kgo.Record {
	t.Helper()
	cl := labtest.Kafka(t, theLab.Cluster(cluster), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := map[int32]*kgo.Record{}
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%s: consumer of %s on %s got the first records of %d partitions of %d: %v", cluster, group, topic, len(out), n, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if _, seen := out[r.Partition]; !seen {
				out[r.Partition] = r
			}
		})
	}
	return out
}

// recordAtPart reads the record at offset of topic's partition p on cluster (a partition
// consumer, no group).
func recordAtPart(t *testing.T, cluster, topic string, p int32, offset int64) *kgo.Record {
	t.Helper()
	cl := labtest.Kafka(t, theLab.Cluster(cluster), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(offset)}}))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		fs := cl.PollRecords(ctx, 1)
		if ctx.Err() != nil {
			t.Fatalf("%s: no record at %s[%d] offset %d", cluster, topic, p, offset)
		}
		var r *kgo.Record
		fs.EachRecord(func(x *kgo.Record) {
			if r == nil {
				r = x
			}
		})
		if r != nil {
			if r.Offset != offset {
				t.Fatalf("%s: %s[%d] read at %d, asked %d", cluster, topic, p, r.Offset, offset)
			}
			return r
		}
	}
}

// batchAfter takes a datetime (milliseconds) and then writes n records <prefix>-<i> on scus
// (they replicate), every one stamped after it; it returns the datetime.
func batchAfter(t *testing.T, topic, prefix string, n int) int64 {
	t.Helper()
	time.Sleep(20 * time.Millisecond) // the batch before is stamped before the datetime
	at := time.Now().UnixMilli()
	time.Sleep(20 * time.Millisecond)
	produceKeys(t, "scus", topic, prefix, n)
	return at
}

// offsetForTime is the offset kafka-consumer-groups --reset-offsets --to-datetime computes
// for topic/0 on cluster: ListOffsets by timestamp, the first message stamped at or after
// ms. The test stops unless it is want (the first message written after the datetime) and
// the records around it say so (KoP answers no timestamp with the offset).
func offsetForTime(t *testing.T, adm *kadm.Client, cluster, topic string, ms, want int64) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	los, err := adm.ListOffsetsAfterMilli(ctx, ms, topic)
	if err != nil {
		t.Fatalf("%s: ListOffsets of %s after %d: %v", cluster, topic, ms, err)
	}
	o, ok := los.Lookup(topic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("%s: ListOffsets of %s after %d: %+v", cluster, topic, ms, o)
	}
	dt := time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000")
	if o.Offset != want {
		t.Fatalf("%s: ListOffsets of %s by the timestamp of %s answers %d, want %d: the first message written after it", cluster, topic, dt, o.Offset, want)
	}
	at, before := recordAt(t, cluster, topic, o.Offset).Timestamp, recordAt(t, cluster, topic, o.Offset-1).Timestamp
	if at.UnixMilli() < ms || before.UnixMilli() >= ms {
		t.Fatalf("%s: %s's records %d and %d are stamped %s and %s: not on either side of %s", cluster, topic, o.Offset-1, o.Offset, before, at, dt)
	}
	t.Logf("%s: --to-datetime %s: ListOffsets by timestamp answers offset %d (its record stamped %d ms after the datetime, the one before %d ms before)",
		cluster, dt, o.Offset, at.UnixMilli()-ms, ms-before.UnixMilli())
	return o.Offset
}
