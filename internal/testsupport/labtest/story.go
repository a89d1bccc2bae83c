package labtest

// The user's story's steps on a lab with KoP, shared by the tagged suites that run it (the KoP
// suite, acceptance/kop, tag kop; the several-brokers suite, acceptance/topology, tag
// topology): topics, records and commits through KoP, what KoP serves, and loads of offsets
// partitions.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// NewTopic creates persistent://public/default/<prefix>-<ns> with one partition on every
// cluster of l (the namespace replicates between them) and returns its Kafka name.
func NewTopic(t testing.TB, l *lab.Lab, prefix string) string {
	t.Helper()
	name := Name(prefix)
	CreateTopic(t, l, "", name)
	return name
}

// CreateTopic creates tenant tn's Kafka topic name (in <tn>/default; public/default for "")
// with one partition on every cluster of l: KoP's auto-creation would make it local to one.
// 409 means another cluster's creation reached this one first.
func CreateTopic(t testing.TB, l *lab.Lab, tn, name string) {
	t.Helper()
	topic, err := utils.GetTopicName("persistent://" + lab.KafkaNamespaceOf(tn) + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range l.Clusters {
		if err := Admin(t, c).Topics().Create(*topic, 1); err != nil && !strings.Contains(err.Error(), "409") {
			t.Fatalf("%s: create %s: %v", c.Name, topic, err)
		}
	}
}

// PatientProducer is a producer without idempotence (the lab's KoP has no transaction
// coordinator) that waits long for KoP's answer: a produce request that times out is sent
// again, and without idempotence its records are then written twice (seen once on the
// loaded lab: 11,900 records for 10,900 produced).
func PatientProducer() []kgo.Opt {
	return []kgo.Opt{kgo.DisableIdempotentWrite(), kgo.ProducerLinger(5 * time.Millisecond),
		kgo.ProduceRequestTimeout(2 * time.Minute), kgo.RequestTimeoutOverhead(2 * time.Minute)}
}

// Produce writes n records (key k-<i>, value v-<i>) to topic through c's KoP.
func Produce(t testing.TB, c lab.Cluster, topic string, n int) {
	t.Helper()
	ProduceAs(t, c, "", topic, n)
}

// ProduceAs is Produce as tenant tn (its client; a short topic name is in <tn>/default).
func ProduceAs(t testing.TB, c lab.Cluster, tn, topic string, n int) {
	t.Helper()
	start := time.Now()
	cl := KafkaAs(t, c, tn, append(PatientProducer(), kgo.DefaultProduceTopic(topic))...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const chunk = 1000
	for i := 0; i < n; i += chunk {
		var rs []*kgo.Record
		for j := i; j < n && j < i+chunk; j++ {
			rs = append(rs, &kgo.Record{Key: []byte(fmt.Sprintf("k-%d", j)), Value: []byte(fmt.Sprintf("v-%d", j))})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("%s: produce to %s through KoP: %v", c.Name, topic, err)
		}
	}
	t.Logf("%s: produced %d records to %s through KoP in %s", c.Name, n, topic, time.Since(start).Round(time.Millisecond))
}

// WaitEndOffset waits (3 minutes at most) until topic's partition 0 on c ends at want
// (replication brings the records of the other cluster).
func WaitEndOffset(t testing.TB, c lab.Cluster, topic string, want int64) {
	t.Helper()
	adm := kadm.NewClient(Kafka(t, c))
	deadline := time.Now().Add(3 * time.Minute)
	var got int64 = -1
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ends, err := adm.ListEndOffsets(ctx, topic)
		cancel()
		if err == nil {
			if o, ok := ends.Lookup(topic, 0); ok && o.Err == nil {
				if got = o.Offset; got == want {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s ends at %d, want %d (%v)", c.Name, topic, got, want, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// WaitReplicated waits (2 minutes at most) until from's replicator of offsets partition p
// toward to is connected with no backlog.
func WaitReplicated(t testing.TB, l *lab.Lab, from, to string, p int32) {
	t.Helper()
	WaitReplicatedTenant(t, l, "", from, to, p)
}

// WaitReplicatedTenant is WaitReplicated for tenant tn's offsets topic (public's for "").
func WaitReplicatedTenant(t testing.TB, l *lab.Lab, tenant, from, to string, p int32) {
	t.Helper()
	tn, _ := utils.GetTopicName(fmt.Sprintf("%s-partition-%d", lab.OffsetsTopicOf(tenant), p))
	a := Admin(t, l.Cluster(from))
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st, err := a.Topics().GetStats(*tn)
		if err == nil {
			// The backlog in the stats may be a periodic figure (Pulsar 2.10): the replicator's
			// cursor in the internal stats, read live, must be at the last entry too.
			if r, ok := st.Replication[to]; ok && r.Connected && r.ReplicationBacklog == 0 && replicatorCaughtUp(a, *tn, to) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: replication of %s to %s not done: %+v %v", from, tn, to, st.Replication, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// Served returns what KoP on cluster serves for group's topic/0 ("none" when it has no
// offset). An answer KoP gives while the bundle moves (LEADER_NOT_AVAILABLE, NOT_COORDINATOR,
// ...) is asked again for a minute: tests poll this while watch or repair unloads.
func Served(t testing.TB, l *lab.Lab, cluster, group, topic string) string {
	t.Helper()
	return ServedAs(t, l, "", cluster, group, topic)
}

// ServedAs is Served for tenant tn's group, asked as tn ("": public).
func ServedAs(t testing.TB, l *lab.Lab, tn, cluster, group, topic string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	off, ok, err := lab.FetchThroughKoPAs(ctx, l.Cluster(cluster), tn, group, topic, 0)
	for err != nil && kerr.IsRetriable(err) && ctx.Err() == nil {
		time.Sleep(500 * time.Millisecond)
		off, ok, err = lab.FetchThroughKoPAs(ctx, l.Cluster(cluster), tn, group, topic, 0)
	}
	if err != nil {
		t.Fatalf("%v", err)
	}
	if !ok {
		return "none"
	}
	return fmt.Sprint(off)
}

// WantServed stops the test unless KoP on cluster serves want for group's topic/0 (Served);
// failure is the message, with a %s for what KoP serves.
func WantServed(t testing.TB, l *lab.Lab, cluster, group, topic, want, failure string) {
	t.Helper()
	if got := Served(t, l, cluster, group, topic); got != want {
		t.Fatalf(failure, got)
	}
}

// Commit commits offset for group's topic/0 through cluster's KoP.
func Commit(t testing.TB, l *lab.Lab, cluster, group, topic string, offset int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := lab.CommitThroughKoP(ctx, l.Cluster(cluster), group, topic, 0, offset); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %s committed %s/0=%d through KoP", cluster, group, topic, offset)
}

// LoadOn makes cluster's KoP load group's offsets partition afresh (bundle unload + lookup).
func LoadOn(t testing.TB, l *lab.Lab, cluster, group string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := lab.ReloadOffsetsPartition(ctx, l.Cluster(cluster), loader.PartitionFor(group, lab.OffsetsTopicPartitions)); err != nil {
		t.Fatal(err)
	}
}

// Settle leaves nothing stale behind for the groups of a test: when it ends, every cluster
// loads their offsets partitions again, so that later tests (and repair, which takes every
// stale row of a cluster) start from a lab where only they are stale.
func Settle(t testing.TB, l *lab.Lab, groups ...string) {
	t.Helper()
	t.Cleanup(func() {
		for _, g := range groups {
			for _, c := range l.Clusters {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				err := lab.ReloadOffsetsPartition(ctx, c, loader.PartitionFor(g, lab.OffsetsTopicPartitions))
				cancel()
				if err != nil {
					t.Errorf("settle %s on %s: %v", g, c.Name, err)
				}
			}
		}
	})
}

// SettledGroup makes a fresh topic and a group named after it (prefix+"-group"), settles the
// group (Settle), and returns them with the group's offsets partition.
func SettledGroup(t testing.TB, l *lab.Lab, prefix string) (topic, group string, part int32) {
	t.Helper()
	topic = NewTopic(t, l, prefix)
	group = Name(prefix + "-group")
	part = loader.PartitionFor(group, lab.OffsetsTopicPartitions)
	Settle(t, l, group)
	return topic, group, part
}

// StoryAt500 sets up the user's story up to its stale point: 10900 records on scus
// replicated to wus, the group's commit of 500 on scus replicated, and wus's KoP loaded with
// it. The names start with prefix.
func StoryAt500(t testing.TB, l *lab.Lab, prefix string) (topic, group string, part int32) {
	t.Helper()
	topic, group, part = SettledGroup(t, l, prefix)
	Produce(t, l.Cluster("scus"), topic, 10900)
	WaitEndOffset(t, l.Cluster("wus"), topic, 10900)
	Commit(t, l, "scus", group, topic, 500)
	WaitReplicated(t, l, "scus", "wus", part)
	LoadOn(t, l, "wus", group)
	return topic, group, part
}

// FirstRecord joins group on cluster with a franz-go group consumer of topic (no commits)
// and returns the first record it gets; with no committed offset it starts at the beginning.
func FirstRecord(t testing.TB, l *lab.Lab, cluster, group, topic string) *kgo.Record {
	t.Helper()
	cl := Kafka(t, l.Cluster(cluster), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		fs := cl.PollRecords(ctx, 1)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%s: consumer of %s on %s got no record: %v", cluster, group, topic, err)
		}
		var first *kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			if first == nil {
				first = r
			}
		})
		if first != nil {
			t.Logf("%s: consumer of %s starts at offset %d key %s", cluster, group, first.Offset, first.Key)
			return first
		}
	}
}

// FreeListen returns 127.0.0.1:<a port free now>.
func FreeListen(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().String()
}

// Get returns the body of a GET of url (watch's /metrics, /report).
func Get(t testing.TB, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// WaitMetrics reads listen's /metrics every second until done says it holds what the test
// waits for, or for 60 seconds, and returns the last answer.
func WaitMetrics(t testing.TB, listen string, done func(metrics string) bool) string {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; {
		metrics := Get(t, "http://"+listen+"/metrics")
		if done(metrics) || time.Now().After(deadline) {
			return metrics
		}
		time.Sleep(time.Second)
	}
}

// Tail returns the last n lines of s and how many it returned.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + fmt.Sprintf("\n(%d lines)", len(lines))
}

// Val prints an optional offset: its value, or null.
func Val(p *int64) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

// WaitReady waits (3 minutes at most) until url answers 200 OK. ended, when not nil, is
// asked between tries: an error from it (the server ended) fails the test at once.
func WaitReady(t testing.TB, url string, ended func() error) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		resp, err := http.Get(url)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if ended != nil {
			if eerr := ended(); eerr != nil {
				t.Fatal(eerr)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after 3 min: %v", url, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// CommitHealedOnWus commits offset for group on scus and waits, up to limit, until KoP on wus
// serves it, healed by the watch --repair the test runs; the test fails when it does not.
func CommitHealedOnWus(t testing.TB, l *lab.Lab, group, topic string, offset int64, limit time.Duration) {
	t.Helper()
	want := strconv.FormatInt(offset, 10)
	start := time.Now()
	Commit(t, l, "scus", group, topic, offset)
	for Served(t, l, "wus", group, topic) != want {
		if time.Since(start) > limit {
			t.Fatalf("wus still serves %s %s after the commit on scus, with watch --repair running", Served(t, l, "wus", group, topic), time.Since(start))
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("wus serves %s %s after the commit on scus, healed by watch --repair", want, time.Since(start).Round(100*time.Millisecond))
}

// replicatorCaughtUp reports whether the replicator cursor of topic to cluster to has
// acknowledged the topic's last entry (its mark-delete position is the last confirmed entry,
// or an earlier ledger when the last one holds none yet).
func replicatorCaughtUp(a pulsaradmin.Client, topic utils.TopicName, to string) bool {
	is, err := a.Topics().GetInternalStats(topic)
	if err != nil {
		return false
	}
	c, ok := is.Cursors["pulsar.repl."+to]
	if !ok {
		return false
	}
	return positionCovers(c.MarkDeletePosition, is.LastConfirmedEntry)
}

// positionCovers: mark-delete position md ("ledger:entry") covers the last confirmed entry
// lce: equal, or lce is an empty new ledger ("L:-1") after md's.
func positionCovers(md, lce string) bool {
	if md == lce {
		return true
	}
	var mdL, mdE, lL, lE int64
	if _, err := fmt.Sscanf(md, "%d:%d", &mdL, &mdE); err != nil {
		return false
	}
	if _, err := fmt.Sscanf(lce, "%d:%d", &lL, &lE); err != nil {
		return false
	}
	return lE == -1 && mdL < lL
}
