//go:build e2e

package pulsarx

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin"

	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest/labrun"
)

func TestMain(m *testing.M) { labrun.Main(m) }

type e2eCluster struct {
	lab.Cluster
	pulsarVersion string
	admin         *Admin
	client        pulsar.Client
	reader        *Reader
}

func setupLab(t *testing.T) (scus, wus *e2eCluster) {
	t.Helper()
	l := labrun.MustEnsure(t, 6*time.Minute)
	mk := func(name string) *e2eCluster {
		c := l.Cluster(name)
		a, err := NewAdmin(name, pulsaradmin.Config{WebServiceURL: c.AdminURL})
		if err != nil {
			t.Fatal(err)
		}
		pc, err := pulsar.NewClient(pulsar.ClientOptions{URL: c.ServiceURL, OperationTimeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pc.Close)
		return &e2eCluster{Cluster: c, pulsarVersion: l.State.PulsarVersion, admin: a, client: pc,
			reader: NewReader(name, pc, a, "public", "__kafka", ReaderOptions{IdleTimeout: 20 * time.Second})}
	}
	return mk("scus"), mk("wus")
}

func TestE2EAdmin(t *testing.T) {
	start := time.Now()
	scus, wus := setupLab(t)
	t.Logf("lab ready in %v", time.Since(start))
	defer func() { t.Logf("admin checks took %v", time.Since(start)) }()
	ctx := context.Background()
	for _, c := range []*e2eCluster{scus, wus} {
		if v, err := c.admin.BrokerVersion(ctx); err != nil || v != c.pulsarVersion {
			t.Errorf("%s: version %q %v", c.Name, v, err)
		}
		if cl, err := c.admin.Clusters(ctx); err != nil || strings.Join(cl, ",") != "scus,wus" {
			t.Errorf("%s: clusters %v %v", c.Name, cl, err)
		}
		if cl, err := c.admin.NamespaceReplicationClusters(ctx, lab.MetadataNamespace); err != nil || strings.Join(cl, ",") != "scus,wus" {
			t.Errorf("%s: replication clusters %v %v", c.Name, cl, err)
		}
		if cl, err := c.admin.TenantAllowedClusters(ctx, lab.Tenant); err != nil || len(cl) < 2 {
			t.Errorf("%s: allowed clusters %v %v", c.Name, cl, err)
		}
		p, err := c.admin.NamespacePolicies(ctx, lab.MetadataNamespace)
		if err != nil || len(p.Bundles) != lab.MetadataBundles {
			t.Errorf("%s: policies %+v %v", c.Name, p, err)
		}
		if n, err := c.reader.Partitions(ctx); err != nil || n != lab.OffsetsTopicPartitions {
			t.Errorf("%s: partitions %d %v", c.Name, n, err)
		}
		if ok, err := c.admin.TopicExists(ctx, lab.OffsetsTopic); !ok || err != nil {
			t.Errorf("%s: offsets topic exists = %v %v", c.Name, ok, err)
		}
		if ok, err := c.admin.TopicExists(ctx, "persistent://public/__kafka/kop-offsets-e2e-absent"); ok || err != nil {
			t.Errorf("%s: absent topic exists = %v %v", c.Name, ok, err)
		}
		if _, err := c.admin.PartitionedTopicPartitions(ctx, "persistent://public/nosuch-ns/x"); !isNotFound(err) {
			t.Errorf("%s: absent namespace: %v", c.Name, err)
		}
		for p := int32(0); p < lab.OffsetsTopicPartitions; p++ {
			topic := PartitionTopic(lab.OffsetsTopic, p)
			mine, err := c.admin.BundleForTopic(ctx, topic)
			if err != nil {
				t.Fatal(err)
			}
			broker, err := c.admin.BrokerBundleForTopic(ctx, topic)
			if err != nil || mine != broker {
				t.Errorf("%s partition %d: computed %s, broker %s (%v)", c.Name, p, mine.Range, broker.Range, err)
			}
			o, err := c.admin.LookupOwner(ctx, topic)
			if err != nil || o.BrokerURL != c.ServiceURL {
				t.Errorf("%s partition %d: owner %+v %v, want %s", c.Name, p, o, err, c.ServiceURL)
			}
		}
	}
}

func isNotFound(err error) bool {
	var ae *AdminError
	return errors.As(err, &ae) && ae.Status == 404
}

// e2eMessages produces n messages per partition on c: empty values, so KoP and the decoders
// treat them as placeholders and skip them (domain.md), and keys that name this run. Odd
// partitions go through a batching producer, even ones one message per entry; the last
// message of each partition carries a base64 key, as the Java client's keyBytes() sends it.
func e2eMessages(t *testing.T, c *e2eCluster, run string, n int) map[string]bool {
	t.Helper()
	want := map[string]bool{}
	for p := int32(0); p < lab.OffsetsTopicPartitions; p++ {
		prod, err := c.client.CreateProducer(pulsar.ProducerOptions{
			Topic:                   PartitionTopic(lab.OffsetsTopic, p),
			DisableBatching:         p%2 == 0,
			BatchingMaxPublishDelay: 50 * time.Millisecond,
		})
		if err != nil {
			t.Fatalf("producer partition %d: %v", p, err)
		}
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			key := fmt.Sprintf("%s-p%d-%d!", run, p, i)
			msgKey := key
			if i == n-1 {
				msgKey = base64.StdEncoding.EncodeToString([]byte(key))
			}
			want[key] = true
			wg.Add(1)
			// A property, because pulsar-client-go drops non-batched empty messages without
			// one (see CursorProber).
			prod.SendAsync(context.Background(), &pulsar.ProducerMessage{Key: msgKey, Payload: []byte{},
				Properties: map[string]string{"kop-offsets-e2e": run}},
				func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
					if err != nil {
						t.Errorf("send partition %d: %v", p, err)
					}
					wg.Done()
				})
		}
		if err := prod.FlushWithCtx(context.Background()); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if p == 6 {
			// Last on partition 6: an empty message without key or properties, as a KoP
			// placeholder; the client drops it and the read must still end at once.
			if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte{}}); err != nil {
				t.Fatal(err)
			}
		}
		prod.Close()
	}
	return want
}

// readRun reads every partition of c and returns this run's messages by key.
func readRun(t *testing.T, c *e2eCluster, run string) (map[string]loader.Message, int, time.Duration) {
	t.Helper()
	got := map[string]loader.Message{}
	total := 0
	start := time.Now()
	err := c.reader.ReadAll(context.Background(), nil, 3, func(m loader.Message) error {
		total++
		if strings.HasPrefix(string(m.Key), run) {
			got[string(m.Key)] = m
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: ReadAll: %v", c.Name, err)
	}
	return got, total, time.Since(start)
}

func TestE2EReadReplicated(t *testing.T) {
	scus, wus := setupLab(t)
	run := fmt.Sprintf("kop-offsets-e2e-%d", time.Now().UnixNano())
	before := time.Now()
	want := e2eMessages(t, scus, run, 5)

	got, total, took := readRun(t, scus, run)
	t.Logf("scus: read %d messages of 8 partitions in %v", total, took)
	if took > 15*time.Second {
		t.Errorf("scus: reading took %v: the dropped placeholder was waited for", took)
	}
	for k := range want {
		m, ok := got[k]
		if !ok {
			t.Errorf("scus: message %s not read", k)
			continue
		}
		if len(m.Value) != 0 || m.PublishTime.Before(before.Add(-time.Second)) ||
			!strings.HasSuffix(strings.Split(m.MessageID, ":")[2], fmt.Sprint(m.Partition)) ||
			!strings.Contains(k, fmt.Sprintf("-p%d-", m.Partition)) {
			t.Errorf("scus: message %s: %+v", k, m)
		}
	}
	if len(got) != len(want) {
		t.Errorf("scus: %d of %d messages", len(got), len(want))
	}

	// Replication to wus is asynchronous: poll.
	deadline := time.Now().Add(90 * time.Second)
	for {
		got, total, took = readRun(t, wus, run)
		if len(got) == len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(2 * time.Second)
	}
	t.Logf("wus: read %d messages in %v, %d of this run", total, took, len(got))
	for k := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("wus: replicated message %s not read", k)
		}
	}

	// The replicators towards wus settle: connected, no backlog.
	ctx := context.Background()
	for p := int32(0); p < lab.OffsetsTopicPartitions; p++ {
		topic := PartitionTopic(lab.OffsetsTopic, p)
		var r Replication
		for {
			rs, err := scus.admin.ReplicationStats(ctx, topic)
			if err != nil {
				t.Fatal(err)
			}
			r = rs["wus"]
			if r.Connected && r.ReplicationBacklog == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Second)
		}
		if !r.Connected || r.ReplicationBacklog != 0 {
			t.Errorf("scus partition %d: replicator to wus %+v", p, r)
		}
	}
}

func TestE2EFromAndFollow(t *testing.T) {
	scus, _ := setupLab(t)
	ctx := context.Background()
	const p = 3

	// From in the future: nothing to read, at once.
	r := NewReader("scus", scus.client, scus.admin, "public", "__kafka", ReaderOptions{From: time.Now().Add(time.Hour)})
	start := time.Now()
	n := 0
	if err := r.ReadPartition(ctx, p, func(loader.Message) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("future From: n=%d err=%v", n, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("future From took %v", d)
	}

	// Follow sees a message published after it started; From skips older ones.
	run := fmt.Sprintf("kop-offsets-e2e-follow-%d", time.Now().UnixNano())
	fctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	from := time.Now()
	fr := NewReader("scus", scus.client, scus.admin, "public", "__kafka", ReaderOptions{From: from})
	seen := make(chan loader.Message, 1)
	done := make(chan error, 1)
	go func() {
		done <- fr.FollowAll(fctx, []int32{p}, func(m loader.Message) error {
			if m.PublishTime.Before(from.Add(-time.Second)) {
				t.Errorf("follow from %v delivered a message published %v", from, m.PublishTime)
			}
			if strings.HasPrefix(string(m.Key), run) {
				seen <- m
			}
			return nil
		})
	}()
	time.Sleep(2 * time.Second)
	prod, err := scus.client.CreateProducer(pulsar.ProducerOptions{Topic: PartitionTopic(lab.OffsetsTopic, p)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Key: run + "-x", Payload: []byte{}}); err != nil {
		t.Fatal(err)
	}
	prod.Close()
	select {
	case m := <-seen:
		t.Logf("followed %s at %s", m.Key, m.MessageID)
	case <-fctx.Done():
		t.Fatal("follow did not deliver the new message")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("FollowAll: %v", err)
	}
}

// TestE2EUnloadBundle exercises the write calls of issue 5 on the real broker: unloading a
// bundle and taking it again with a lookup. It ends with a single-topic unload, after which
// KoP (when it runs) serves nothing for the partition: the test then loads it again.
func TestE2EUnloadBundle(t *testing.T) {
	scus, _ := setupLab(t)
	ctx := context.Background()
	topic := PartitionTopic(lab.OffsetsTopic, 7)
	if scus.KoP {
		t.Cleanup(func() {
			if err := lab.ReloadOffsetsPartition(ctx, scus.Cluster, 7); err != nil {
				t.Errorf("KoP left without offsets partition 7: %v", err)
			}
		})
	}
	b, err := scus.admin.BundleForTopic(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if err := scus.admin.UnloadBundle(ctx, lab.MetadataNamespace, b.Range); err != nil {
		t.Fatal(err)
	}
	if err := scus.admin.UnloadTopic(ctx, topic); err != nil && !isNotFound(err) {
		// A topic of an unloaded bundle may answer 404/307 until looked up again.
		t.Logf("unload topic after bundle unload: %v", err)
	}
	o, err := scus.admin.LookupOwner(ctx, topic)
	if err != nil || o.BrokerURL != scus.ServiceURL {
		t.Fatalf("lookup after unload: %+v %v", o, err)
	}
	if err := scus.admin.UnloadTopic(ctx, topic); err != nil {
		t.Fatalf("unload topic: %v", err)
	}
	if err := scus.reader.ReadPartition(ctx, 7, func(loader.Message) error { return nil }); err != nil {
		t.Fatalf("read after unload: %v", err)
	}
}
