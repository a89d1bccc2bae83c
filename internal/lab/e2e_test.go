//go:build e2e

package lab_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// TestOffsetsTopicGeoReplicated proves the lab is two real, geo-replicated Pulsar clusters: a
// message written to an offsets-topic partition on scus arrives on wus (the replicator's backlog
// drains to 0) with the same key and payload, and the partition lives in one of the 4 bundles
// of public/__kafka on both sides.
func TestOffsetsTopicGeoReplicated(t *testing.T) {
	l := ensureLab(t)
	scus, wus := l.Cluster("scus"), l.Cluster("wus")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The record is a valid offset commit in KoP's format (kopcommit) of a group of this run that
	// lives in partition 5: KoP loads this shared offsets topic, and a record it cannot parse
	// would make it fail the whole partition on every load (issue 15).
	const partition = 5
	topic := fmt.Sprintf("%s-partition-%d", lab.OffsetsTopic, partition)
	var group string
	for i := 0; group == ""; i++ {
		if g := fmt.Sprintf("lab-e2e-%d-%d", time.Now().UnixNano(), i); loader.PartitionFor(g, lab.OffsetsTopicPartitions) == partition {
			group = g
		}
	}
	_, payload := kop.Encode(kop.OffsetCommit{Group: group, Topic: lab.Topic1, Partition: 0, Offset: 1})
	key := base64.StdEncoding.EncodeToString(kop.PulsarKey(group))

	for _, c := range []lab.Cluster{scus, wus} {
		a, err := lab.NewAdmin(c)
		if err != nil {
			t.Fatal(err)
		}
		md, err := a.Topics().GetMetadataWithContext(ctx, mustTopic(t, lab.OffsetsTopic))
		if err != nil || md.Partitions != lab.OffsetsTopicPartitions {
			t.Fatalf("%s: %s partitions %d (%v), want %d", c.Name, lab.OffsetsTopic, md.Partitions, err, lab.OffsetsTopicPartitions)
		}
		repl, err := a.Namespaces().GetNamespaceReplicationClustersWithContext(ctx, lab.MetadataNamespace)
		if err != nil || !lab.SameSet(repl, []string{"scus", "wus"}) {
			t.Fatalf("%s: %s replicates to %v (%v)", c.Name, lab.MetadataNamespace, repl, err)
		}
	}

	// Produce on scus.
	cl, err := pulsar.NewClient(pulsar.ClientOptions{URL: scus.ServiceURL, OperationTimeout: 30 * time.Second, Logger: plog.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	prod, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatalf("producer on scus: %v", err)
	}
	id, err := prod.Send(ctx, &pulsar.ProducerMessage{Key: key, Payload: payload})
	prod.Close()
	if err != nil {
		t.Fatalf("send on scus: %v", err)
	}
	t.Logf("sent an offset commit of %s (%d bytes) to %s on scus at %v", group, len(payload), topic, id)

	// Wait for the scus -> wus replicator of that partition to drain.
	sa, _ := lab.NewAdmin(scus)
	tn := mustTopic(t, topic)
	var last utils.ReplicatorStats
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st, err := sa.Topics().GetStatsWithContext(ctx, tn)
		if err == nil {
			r, ok := st.Replication["wus"]
			last = r
			if ok && r.Connected && r.ReplicationBacklog == 0 && st.MsgCounterIn > 0 {
				t.Logf("scus %s: replication to wus connected, backlog 0, msgInCounter %d", topic, st.MsgCounterIn)
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("replication backlog of %s to wus did not drain: %+v (last error %v)", topic, last, err)
		}
		time.Sleep(500 * time.Millisecond)
	}

	// Read it on wus with a non-durable reader from the earliest message.
	wc, err := pulsar.NewClient(pulsar.ClientOptions{URL: wus.ServiceURL, OperationTimeout: 30 * time.Second, Logger: plog.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Close()
	rd, err := wc.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatalf("reader on wus: %v", err)
	}
	defer rd.Close()
	rctx, rcancel := context.WithTimeout(ctx, 60*time.Second)
	defer rcancel()
	read := 0
	for {
		msg, err := rd.Next(rctx)
		if err != nil {
			t.Fatalf("wus: the commit of %s not found after reading %d messages: %v", group, read, err)
		}
		read++
		if msg.Key() != key {
			continue
		}
		if !bytes.Equal(msg.Payload(), payload) {
			t.Fatalf("wus: key %s has payload %x, want %x", key, msg.Payload(), payload)
		}
		if !msg.IsReplicated() || msg.GetReplicatedFrom() != "scus" {
			t.Fatalf("wus: message not marked as replicated from scus (replicated=%v from=%q)", msg.IsReplicated(), msg.GetReplicatedFrom())
		}
		t.Logf("wus: read the commit of %s (key %s) replicated from %s at %v after %d messages", group, msg.Key(), msg.GetReplicatedFrom(), msg.ID(), read)
		break
	}

	// The partition lives in one of the 4 bundles of public/__kafka, the same on both sides,
	// and each cluster's own broker owns it.
	var ranges []string
	for _, c := range []lab.Cluster{scus, wus} {
		a, _ := lab.NewAdmin(c)
		pol, err := a.Namespaces().GetPoliciesWithContext(ctx, lab.MetadataNamespace)
		if err != nil {
			t.Fatal(err)
		}
		if pol.Bundles == nil || pol.Bundles.NumBundles != lab.MetadataBundles || len(pol.Bundles.Boundaries) != lab.MetadataBundles+1 {
			t.Fatalf("%s: %s bundles %+v, want %d", c.Name, lab.MetadataNamespace, pol.Bundles, lab.MetadataBundles)
		}
		var bundles []string
		for i := 0; i+1 < len(pol.Bundles.Boundaries); i++ {
			bundles = append(bundles, pol.Bundles.Boundaries[i]+"_"+pol.Bundles.Boundaries[i+1])
		}
		rng, err := a.Topics().GetBundleRangeWithContext(ctx, tn)
		if err != nil {
			t.Fatalf("%s: bundle of %s: %v", c.Name, topic, err)
		}
		if !slices.Contains(bundles, rng) {
			t.Fatalf("%s: %s in bundle %s, not one of %v", c.Name, topic, rng, bundles)
		}
		look, err := a.Topics().LookupWithContext(ctx, tn)
		if err != nil {
			t.Fatalf("%s: lookup %s: %v", c.Name, topic, err)
		}
		if look.BrokerURL != c.ServiceURL {
			t.Fatalf("%s: %s owned by %s, want %s", c.Name, topic, look.BrokerURL, c.ServiceURL)
		}
		t.Logf("%s: %s in bundle %s of %s, owner %s", c.Name, topic, rng, lab.MetadataNamespace, look.BrokerURL)
		ranges = append(ranges, rng)
	}
	if ranges[0] != ranges[1] {
		t.Errorf("bundle of %s differs: scus %s, wus %s", topic, ranges[0], ranges[1])
	}
}

// TestKoPModeReported: the lab says in its state, its status and config.yaml which KoP it
// loaded and from where (with KOP_NAR: that file, by sha256, answering on both Kafka ports),
// or why it runs without one (the mvn error, or KOP=off) and that nothing answers Kafka.
func TestKoPModeReported(t *testing.T) {
	l := ensureLab(t)
	r, err := lab.Status(context.Background(), lab.Options{})
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(l.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if !l.KoP.Enabled {
		assertKoPAbsent(t, l, r, string(y))
		return
	}
	k := l.KoP
	if k.SHA256 == "" || k.Version == "" || k.HandlerClass == "" || k.HandlerDir == "" {
		t.Errorf("KoP on but not described: %+v", k)
	}
	if sum, err := lab.FileSHA256(k.Nar); err != nil || sum != k.SHA256 {
		t.Errorf("loaded NAR %s: sha256 %s (%v), recorded %s", k.Nar, sum, err, k.SHA256)
	}
	if nar := os.Getenv("KOP_NAR"); nar != "" {
		if sum, err := lab.FileSHA256(nar); err != nil || sum != k.SHA256 || k.Source != "KOP_NAR" {
			t.Errorf("KOP_NAR=%s: sha256 %s (%v); the lab loaded %s from %s", nar, sum, err, k.SHA256, k.Source)
		}
	}
	entries, err := os.ReadDir(k.HandlerDir)
	var nars []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".nar") {
			nars = append(nars, e.Name())
		}
	}
	if err != nil || (k.Source == "KOP_NAR" && len(nars) != 1) {
		t.Errorf("handler directory %s holds %v (%v): the brokers would load each", k.HandlerDir, nars, err)
	}
	for _, c := range l.Clusters {
		if !c.KoP {
			t.Errorf("%s: KoP off in a KoP lab", c.Name)
		}
		if err := lab.KafkaMetadata(context.Background(), c); err != nil {
			t.Errorf("%s: KoP does not answer: %v", c.Name, err)
		}
		conf, err := os.ReadFile(l.Paths.BrokerConf(c.Name))
		if err != nil || !strings.Contains(string(conf), "protocolHandlerDirectory="+k.HandlerDir+"\n") {
			t.Errorf("%s: broker.conf does not load handlers from %s (%v)", c.Name, k.HandlerDir, err)
		}
	}
	if !r.KoP.Enabled || r.KoP.SHA256 != k.SHA256 || r.KoP.Version != k.Version || r.PulsarVersion != l.State.PulsarVersion {
		t.Errorf("status KoP %+v, Pulsar %s", r.KoP, r.PulsarVersion)
	}
	if !strings.Contains(string(y), "# KoP "+k.Version+": on") || !strings.Contains(string(y), k.SHA256) {
		t.Errorf("config.yaml does not name the KoP and its sha256:\n%s", y)
	}
	t.Logf("KoP %s (version from %s), sha256 %s, from %s %s, on Pulsar %s", k.Version, k.VersionFrom, k.SHA256, k.Source, k.Origin, l.State.PulsarVersion)
}

func assertKoPAbsent(t *testing.T, l *lab.Lab, r *lab.StatusReport, y string) {
	t.Helper()
	switch {
	case l.KoP.Mode == lab.KoPOff:
		if !strings.HasPrefix(l.KoP.Reason, "KOP=off") {
			t.Errorf("KOP=off, reason %q", l.KoP.Reason)
		}
	case !strings.HasPrefix(l.KoP.MavenError, "[ERROR]") || !strings.Contains(l.KoP.MavenError, "pulsar-protocol-handler-kafka"):
		t.Errorf("mvn error not recorded: %q", l.KoP.MavenError)
	case !strings.Contains(l.KoP.Reason, l.KoP.MavenError) || !strings.Contains(l.KoP.Command, "-Pkop") || !strings.Contains(l.KoP.Reason, "KOP_NAR"):
		t.Errorf("reason %q / command %q", l.KoP.Reason, l.KoP.Command)
	}
	for _, c := range l.Clusters {
		if c.KoP {
			t.Errorf("%s: KoP on without a NAR", c.Name)
		}
		if err := lab.KafkaMetadata(context.Background(), c); err == nil {
			t.Errorf("%s: something answers Kafka on %s although KoP is off", c.Name, c.KafkaBootstrap)
		}
	}
	if r.KoP.Enabled || r.KoP.MavenError != l.KoP.MavenError {
		t.Errorf("status KoP %+v", r.KoP)
	}
	if !strings.Contains(y, "# KoP: off (") || l.KoP.Mode != lab.KoPOff && !strings.Contains(y, "pulsar-protocol-handler-kafka") {
		t.Errorf("config.yaml does not say KoP is off and why:\n%s", y)
	}
}

// TestKoPRequired: KOP=required on a KoP lab reuses it as it is; on a lab without KoP (and no
// KOP_NAR) it asks Maven again (KOP_PROBE=1), fails with the mvn error naming KOP_NAR, and
// leaves the running lab alone.
func TestKoPRequired(t *testing.T) {
	l := ensureLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if l.KoP.Enabled {
		again, err := lab.Up(ctx, lab.Options{KoP: lab.KoPRequired, Log: testWriter{t}})
		if err != nil || again.Started || again.KoP.SHA256 != l.KoP.SHA256 {
			t.Fatalf("KOP=required on a KoP lab: started %v, KoP %+v, %v", again != nil && again.Started, again, err)
		}
		return
	}
	if l.KoP.Mode == lab.KoPOff {
		t.Fatalf("KOP=off: run the lab's tests without KOP=off (KOP=required would replace the lab)")
	}
	if _, err := os.Stat(l.Paths.KoPNar(l.KoP.Version)); err == nil {
		t.Fatalf("a KoP NAR is present (%s) but the lab runs without KoP: restart it (kop-lab down)", l.Paths.KoPNar(l.KoP.Version))
	}
	t.Setenv("KOP_PROBE", "1")
	_, err := lab.Up(ctx, lab.Options{KoP: lab.KoPRequired, Log: testWriter{t}})
	if !errors.Is(err, lab.ErrKoPRequired) {
		t.Fatalf("KOP=required: got %v, want ErrKoPRequired", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "[ERROR]") || !strings.Contains(msg, "pulsar-protocol-handler-kafka") || !strings.Contains(msg, "mvn ") ||
		!strings.Contains(msg, "KOP_NAR") {
		t.Errorf("error does not carry the mvn command and error, or name KOP_NAR:\n%s", msg)
	}
	t.Logf("KOP=required: %v", err)
	st, err := lab.ReadState(l.Paths.StateFile())
	if err != nil || st == nil {
		t.Fatalf("state after KOP=required: %v %v", st, err)
	}
	for _, c := range st.Clusters {
		if !lab.IsLabJVM(c.PID, c.Name) {
			t.Errorf("%s (pid %d) stopped by a failed KOP=required start", c.Name, c.PID)
		}
		if err := lab.CheckHealth(ctx, c.Cluster); err != nil {
			t.Errorf("%s unhealthy after a failed KOP=required start: %v", c.Name, err)
		}
	}
}
