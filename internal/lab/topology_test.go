//go:build topology

package lab_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kop-offsets/kop-offsets/internal/lab"
)

// The topology tests run on a multi-broker lab (make e2e-topology: KOP_LAB_BROKERS=2, and
// KOP_LAB_CLUSTERS=3 for three clusters). They check the lab itself: every broker answers,
// the bundles of public/__kafka are owned by the cluster's brokers, replication is a full mesh,
// and one broker can be stopped and started by pid.

func multiBrokerLab(t *testing.T) *lab.Lab {
	t.Helper()
	l := ensureLab(t)
	if l.State.Shape.Standalone() {
		t.Fatalf("the lab runs %v: the topology tests need KOP_LAB_BROKERS=2 or more (make e2e-topology)", l.State.Shape)
	}
	return l
}

// TestTopologyEveryBrokerAnswers: each broker of each cluster passes the health check on its
// own web port, the cluster lists all of them as active, and with KoP each broker's own Kafka
// port answers a Metadata request.
func TestTopologyEveryBrokerAnswers(t *testing.T) {
	onEveryCluster(t, func(ctx context.Context, c lab.Cluster, a pulsaradmin.Client) {
		active, err := a.Brokers().GetActiveBrokersWithContext(ctx, c.Name)
		if err != nil {
			t.Fatalf("%s: active brokers: %v", c.Name, err)
		}
		slices.Sort(active)
		var want []string
		for i := 0; i < c.BrokerCount(); i++ {
			want = append(want, fmt.Sprintf("%s:%d", lab.Host, c.Broker(i).Ports.Web))
		}
		if !slices.Equal(active, want) {
			t.Errorf("%s: active brokers %v, want %v", c.Name, active, want)
		}
		for i := 0; i < c.BrokerCount(); i++ {
			b := c.Broker(i)
			if err := lab.CheckHealth(ctx, b); err != nil {
				t.Errorf("%s broker-%d: %v", c.Name, i, err)
				continue
			}
			if !c.KoP {
				t.Logf("%s broker-%d: healthy on %s (KoP off)", c.Name, i, b.AdminURL)
				continue
			}
			n, err := kafkaBrokers(ctx, b)
			if err != nil {
				t.Errorf("%s broker-%d: %v", c.Name, i, err)
				continue
			}
			t.Logf("%s broker-%d: healthy on %s; KoP on %s answers Metadata listing %d broker(s)", c.Name, i, b.AdminURL, b.KafkaBootstrap, n)
		}
	})
}

// onEveryCluster runs check on each cluster of the multi-broker lab with its admin client, all
// within 3 minutes.
func onEveryCluster(t *testing.T, check func(ctx context.Context, c lab.Cluster, a pulsaradmin.Client)) {
	l := multiBrokerLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, c := range l.Clusters {
		check(ctx, c, mustAdmin(t, c))
	}
}

// mustAdmin is the lab's admin client of c; the test stops when there is none.
func mustAdmin(t *testing.T, c lab.Cluster) pulsaradmin.Client {
	t.Helper()
	a, err := lab.NewAdmin(c)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// kafkaBrokers sends one Metadata request to c's Kafka listener alone and returns how many
// brokers the answer lists.
func kafkaBrokers(ctx context.Context, c lab.Cluster) (int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.KafkaBootstrap), kgo.MaxVersions(kversion.V3_8_0()), kgo.RequestRetries(0))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return 0, fmt.Errorf("Kafka Metadata on %s: %w", c.KafkaBootstrap, err)
	}
	return len(resp.Brokers), nil
}

// TestTopologyOffsetsBundlesOwned: public/__kafka keeps its 4 bundles (or splits of them:
// acceptance/topology's split test splits one) on every cluster; a lookup of each offsets
// partition names one of the cluster's brokers; the brokers' own ownership lists hold each
// bundle exactly once. How the load manager spread them is logged.
func TestTopologyOffsetsBundlesOwned(t *testing.T) {
	onEveryCluster(t, func(ctx context.Context, c lab.Cluster, a pulsaradmin.Client) {
		pol, err := a.Namespaces().GetPoliciesWithContext(ctx, lab.MetadataNamespace)
		if err != nil || !lab.MetadataBundlesOK(pol.Bundles) {
			t.Fatalf("%s: bundles of %s: %+v %v", c.Name, lab.MetadataNamespace, pol, err)
		}
		brokers := map[string]int{}
		for i := 0; i < c.BrokerCount(); i++ {
			brokers[c.Broker(i).ServiceURL] = i
		}
		owner := map[string]string{} // bundle -> broker URL
		for p := 0; p < lab.OffsetsTopicPartitions; p++ {
			tn := mustTopic(t, fmt.Sprintf("%s-partition-%d", lab.OffsetsTopic, p))
			rng, err := a.Topics().GetBundleRangeWithContext(ctx, tn)
			if err != nil {
				t.Fatalf("%s: bundle of %s: %v", c.Name, tn.String(), err)
			}
			look, err := a.Topics().LookupWithContext(ctx, tn)
			if err != nil {
				t.Fatalf("%s: lookup of %s: %v", c.Name, tn.String(), err)
			}
			if _, ok := brokers[look.BrokerURL]; !ok {
				t.Errorf("%s: %s owned by %s, not one of the cluster's brokers %v", c.Name, tn.String(), look.BrokerURL, brokers)
			}
			rng = strings.Trim(strings.TrimSpace(rng), `"`)
			if o, seen := owner[rng]; seen && o != look.BrokerURL {
				t.Errorf("%s: bundle %s looked up on %s and %s", c.Name, rng, o, look.BrokerURL)
			}
			owner[rng] = look.BrokerURL
		}
		// Each broker's own list: every bundle of public/__kafka that a partition maps to, once.
		held := map[string]int{}
		for i := 0; i < c.BrokerCount(); i++ {
			owned, err := a.Brokers().GetOwnedNamespacesWithContext(ctx, c.Name, fmt.Sprintf("%s:%d", lab.Host, c.Broker(i).Ports.Web))
			if err != nil {
				t.Fatalf("%s broker-%d: owned namespaces: %v", c.Name, i, err)
			}
			for b := range owned {
				if rng, ok := strings.CutPrefix(b, lab.MetadataNamespace+"/"); ok {
					held[rng]++
					if want := c.Broker(i).ServiceURL; owner[rng] != "" && owner[rng] != want {
						t.Errorf("%s: bundle %s listed by broker-%d, looked up on %s", c.Name, rng, i, owner[rng])
					}
				}
			}
		}
		spread := map[string][]string{}
		for rng, url := range owner {
			if held[rng] != 1 {
				t.Errorf("%s: bundle %s of %s owned by %d brokers", c.Name, rng, lab.MetadataNamespace, held[rng])
			}
			spread[url] = append(spread[url], rng)
		}
		t.Logf("%s: %d bundles of %s hold the %d offsets partitions; owners: %v", c.Name, len(owner), lab.MetadataNamespace, lab.OffsetsTopicPartitions, spread)
	})
}

// TestTopologyReplicationFullMesh: a message written to topic-1 on each cluster arrives on
// every other cluster, marked as replicated from its source.
func TestTopologyReplicationFullMesh(t *testing.T) {
	l := multiBrokerLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	names := lab.ClusterNames(l.Clusters)
	for _, c := range l.Clusters {
		a, _ := lab.NewAdmin(c)
		for _, ns := range []string{lab.DefaultNamespace, lab.MetadataNamespace} {
			repl, err := a.Namespaces().GetNamespaceReplicationClustersWithContext(ctx, ns)
			if err != nil || !lab.SameSet(repl, names) {
				t.Fatalf("%s: %s replicates to %v (%v), want %v", c.Name, ns, repl, err, names)
			}
		}
	}
	run := fmt.Sprintf("topo-%d", time.Now().UnixNano())
	for _, src := range l.Clusters {
		key := run + "-from-" + src.Name
		pc := pulsarClient(t, src.ServiceURLs())
		prod, err := pc.CreateProducer(pulsar.ProducerOptions{Topic: lab.Topic1, DisableBatching: true})
		if err != nil {
			t.Fatalf("%s: producer: %v", src.Name, err)
		}
		_, err = prod.Send(ctx, &pulsar.ProducerMessage{Key: key, Payload: []byte(key)})
		prod.Close()
		if err != nil {
			t.Fatalf("%s: send: %v", src.Name, err)
		}
	}
	for _, dst := range l.Clusters {
		pc := pulsarClient(t, dst.ServiceURLs())
		want := map[string]bool{}
		for _, src := range l.Clusters {
			if src.Name != dst.Name {
				want[run+"-from-"+src.Name] = true
			}
		}
		rd, err := pc.CreateReader(pulsar.ReaderOptions{Topic: lab.Topic1 + "-partition-0", StartMessageID: pulsar.EarliestMessageID()})
		if err != nil {
			t.Fatalf("%s: reader: %v", dst.Name, err)
		}
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Minute)
		for len(want) > 0 {
			msg, err := rd.Next(rctx)
			if err != nil {
				t.Errorf("%s: still missing %v: %v", dst.Name, want, err)
				break
			}
			if !want[msg.Key()] {
				continue
			}
			from := strings.TrimPrefix(msg.Key(), run+"-from-")
			if !msg.IsReplicated() || msg.GetReplicatedFrom() != from {
				t.Errorf("%s: %s replicated=%v from %q", dst.Name, msg.Key(), msg.IsReplicated(), msg.GetReplicatedFrom())
			}
			delete(want, msg.Key())
			t.Logf("%s: got %s, replicated from %s", dst.Name, msg.Key(), msg.GetReplicatedFrom())
		}
		rcancel()
		rd.Close()
	}
}

func pulsarClient(t *testing.T, url string) pulsar.Client {
	t.Helper()
	pc, err := pulsar.NewClient(pulsar.ClientOptions{URL: url, OperationTimeout: 30 * time.Second, Logger: plog.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pc.Close)
	return pc
}

// TestTopologyStopStartOneBroker: the last broker of the first cluster stopped by pid; the
// others keep answering, every offsets partition is looked up on a live broker (the bundles of
// the stopped one move), and StartBroker brings it back healthy. Runs last in this file.
func TestTopologyStopStartOneBroker(t *testing.T) {
	l := multiBrokerLab(t)
	c := l.Clusters[0]
	last := c.BrokerCount() - 1
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	before, _ := l.State.Process(c.Name, lab.RoleBroker, last)
	if err := l.StopBroker(ctx, c.Name, last); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = l.StartBroker(context.Background(), c.Name, last)
		}
	})
	st, err := lab.ReadState(l.Paths.StateFile())
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := st.Process(c.Name, lab.RoleBroker, last)
	if ps == nil || !ps.Stopped || lab.IsLabJVM(ps.PID, c.Name) || lab.PortInUse(c.Broker(last).Ports.Web) {
		t.Fatalf("%s broker-%d after StopBroker: %+v, web port open %v", c.Name, last, ps, lab.PortInUse(c.Broker(last).Ports.Web))
	}
	if r, err := lab.Status(ctx, lab.Options{Root: l.Paths.Root}); err == nil {
		for _, cs := range r.Clusters {
			if cs.Name == c.Name && cs.Health == nil {
				t.Errorf("%s: status calls it healthy with broker-%d stopped", c.Name, last)
			}
		}
	}
	live := c.Broker(0)
	if err := lab.CheckHealth(ctx, live); err != nil {
		t.Errorf("%s broker-0 with broker-%d stopped: %v", c.Name, last, err)
	}
	a, _ := lab.NewAdmin(live)
	t0 := time.Now()
	for p := 0; p < lab.OffsetsTopicPartitions; p++ {
		tn := mustTopic(t, fmt.Sprintf("%s-partition-%d", lab.OffsetsTopic, p))
		for {
			look, err := a.Topics().LookupWithContext(ctx, tn)
			if err == nil && look.BrokerURL != c.Broker(last).ServiceURL {
				break
			}
			if time.Since(t0) > 2*time.Minute {
				t.Fatalf("%s: %s not owned by a live broker 2m after broker-%d stopped: %+v %v", c.Name, tn.String(), last, look, err)
			}
			time.Sleep(time.Second)
		}
	}
	t.Logf("%s: broker-%d (pid %d) stopped; every offsets partition owned by a live broker after %s", c.Name, last, before.PID, time.Since(t0).Round(100*time.Millisecond))

	if err := l.StartBroker(ctx, c.Name, last); err != nil {
		t.Fatal(err)
	}
	restarted = true
	st, _ = lab.ReadState(l.Paths.StateFile())
	ps, _ = st.Process(c.Name, lab.RoleBroker, last)
	if ps == nil || ps.Stopped || !lab.IsLabProcess(ps.PID, c.Name, ps.ID()) || ps.PID == before.PID {
		t.Fatalf("%s broker-%d after StartBroker: %+v", c.Name, last, ps)
	}
	if err := lab.CheckHealth(ctx, c.Broker(last)); err != nil {
		t.Errorf("%s broker-%d after StartBroker: %v", c.Name, last, err)
	}
	t.Logf("%s: broker-%d started again as pid %d, healthy after %.1fs", c.Name, last, ps.PID, ps.ReadySeconds)
}
