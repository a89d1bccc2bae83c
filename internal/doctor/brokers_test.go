package doctor

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

// withBrokers gives a cluster's fake admin active brokers, each answering its own version
// and runtime configuration: a copy of the cluster's, changed by each edit.
func withBrokers(a *activityAdmin, edits map[string]func(*fakes.Admin)) *activityAdmin {
	a.PerBroker = map[string]*fakes.Admin{}
	for id, edit := range edits {
		rc := map[string]string{}
		for k, v := range a.Runtime {
			rc[k] = v
		}
		rc["defaultRetentionTimeInMinutes"] = "0"
		b := &fakes.Admin{Name: a.Name + " broker " + id, Version: a.Version, Runtime: rc}
		if edit != nil {
			edit(b)
		}
		a.PerBroker[id] = b
	}
	return a
}

// Three brokers on scus: b2 runs without KoP, with another retention default and another
// Pulsar version; b3's own address does not answer. Each is a finding naming the broker;
// the healthy wus (two identical brokers) says nothing.
func TestEveryBrokerChecked(t *testing.T) {
	scus := withBrokers(healthy("scus"), map[string]func(*fakes.Admin){
		"b1:8080": nil,
		"b2:8080": func(b *fakes.Admin) {
			b.Runtime["messagingProtocols"] = "[]"
			b.Runtime["defaultRetentionTimeInMinutes"] = "4320"
			b.Version = "4.0.6"
		},
		"b3:8080": func(b *fakes.Admin) { b.Down = true },
		"b4:8080": nil,
	})
	wus := withBrokers(healthy("wus"), map[string]func(*fakes.Admin){"w1:8080": nil, "w2:8080": nil})
	r := runWith(t, Options{}, scus, wus)

	kop := wantOne(t, r, SeverityError, CheckBrokerKoP, "scus", "on broker b2:8080")
	if kop.Subject != "b2:8080" || !strings.Contains(kop.Message, "KoP is not loaded on broker b2:8080 of scus") {
		t.Errorf("broker-kop: %+v", kop)
	}
	set := wantOne(t, r, SeverityError, CheckBrokerSettings, "scus", "defaultRetentionTimeInMinutes")
	if set.Subject != "defaultRetentionTimeInMinutes" || !strings.Contains(set.Message, `b2:8080="4320"; the other brokers "0"`) {
		t.Errorf("broker-settings: %+v", set)
	}
	ver := wantOne(t, r, SeverityWarning, CheckBrokerVersion, "scus", "")
	if !strings.Contains(ver.Message, `b2:8080="4.0.6"; the other brokers "4.0.8"`) {
		t.Errorf("broker-version: %+v", ver)
	}
	down := wantOne(t, r, SeverityWarning, CheckBrokers, "scus", "http://b3:8080")
	if down.Subject != "b3:8080" || !strings.Contains(down.Message, "did not answer at its own address") {
		t.Errorf("brokers: %+v", down)
	}
	for _, f := range r.Findings {
		if f.Cluster == "wus" && f.Severity != SeverityInfo {
			t.Errorf("wus is healthy: %+v", f)
		}
	}
	if r.APIErrors || len(r.Unreachable) != 0 {
		t.Errorf("one broker's address is not the cluster's admin API: %+v", r)
	}
	bs := r.Clusters[0].Brokers
	if len(bs) != 4 || bs[1].ID != "b2:8080" || bs[1].KoP == nil || *bs[1].KoP || bs[2].Reachable || bs[2].KoP != nil || *bs[0].KoP != true {
		t.Errorf("brokers in the report: %+v", bs)
	}
	// The active brokers are listed by Pulsar's cluster name (runtime clusterName).
	if !slices.Contains(scus.Calls(), "ActiveBrokers scus") {
		t.Errorf("calls %v", scus.Calls())
	}
}

// Pulsar lists three brokers, KoP's Metadata two, and no runtime configuration is readable:
// the count names the gap.
func TestKoPListsFewerBrokers(t *testing.T) {
	scus := withBrokers(healthy("scus"), map[string]func(*fakes.Admin){
		"b1:8080": nil, "b2:8080": nil, "b3:8080": nil,
	})
	for _, b := range scus.PerBroker {
		b.Runtime = nil
	}
	k := &listenersKafka{probe: KafkaProbe{Brokers: 2, MaxVersions: map[string]int16{"OffsetFetch": 8},
		Listeners: []KafkaListener{{NodeID: 0, Address: "b1:9092", MaxVersions: map[string]int16{"OffsetFetch": 8}},
			{NodeID: 1, Address: "b2:9092", MaxVersions: map[string]int16{"OffsetFetch": 8}}}}}
	r := runWith(t, Options{Kafka: k}, scus)
	f := wantOne(t, r, SeverityError, CheckKoPListener, "scus", "brokers list")
	if !strings.Contains(f.Message, "KoP lists 2 brokers of scus but Pulsar has 3 active brokers") {
		t.Errorf("%+v", f)
	}
}

type listenersKafka struct{ probe KafkaProbe }

func (k *listenersKafka) Probe(context.Context, Cluster) (KafkaProbe, error) { return k.probe, nil }

// KoP on two brokers: node 1 does not answer ApiVersions, and a second bootstrap address
// refuses connections. The prober asks every advertised broker; doctor names each.
func TestKgoProberEveryListener(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(2))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.ControlKey(int16(kmsg.ApiVersions), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if c.CurrentNode() == 1 {
			return nil, errors.New("dropped"), true // kfake closes the connection: no answer
		}
		return nil, nil, false
	})
	refused, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := refused.Addr().String()
	_ = refused.Close()
	p := &KgoProber{DialTimeout: time.Second, NewClient: func(_ Cluster, extra ...kgo.Opt) (*kgo.Client, error) {
		return kgo.NewClient(append(extra, kgo.SeedBrokers(c.ListenAddrs()[0]))...)
	}}
	cl := Cluster{Name: "scus", KafkaBootstrap: []string{c.ListenAddrs()[0], deadAddr}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := p.Probe(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Listeners) != 2 || got.Listeners[0].Error != "" || got.Listeners[1].Error == "" || got.Refused[deadAddr] == "" {
		t.Fatalf("probe %+v", got)
	}

	r := runWith(t, Options{Kafka: &listenersKafka{probe: got}}, healthy("scus"))
	var subjects []string
	for _, f := range only(r, SeverityError, CheckKoPListener) {
		subjects = append(subjects, f.Subject)
	}
	if len(subjects) != 2 || subjects[0] != deadAddr || subjects[1] != got.Listeners[1].Address {
		t.Errorf("kop-listener findings on %v, want %s and node 1 (%s): %+v", subjects, deadAddr, got.Listeners[1].Address, r.Findings)
	}
}

// No broker of a cluster runs KoP (the lab without a NAR): that is the cluster-level KoP
// findings' to say, not one broker-kop error per broker.
func TestNoBrokerWithKoPIsNotABrokerFinding(t *testing.T) {
	off := func(b *fakes.Admin) { b.Runtime["messagingProtocols"] = "[]" }
	scus := withBrokers(healthy("scus"), map[string]func(*fakes.Admin){"b1:8080": off, "b2:8080": off})
	wus := withBrokers(healthy("wus"), map[string]func(*fakes.Admin){"w1:8080": nil, "w2:8080": nil})
	r := runWith(t, Options{}, scus, wus)
	for _, f := range r.Findings {
		if f.Check == CheckBrokerKoP {
			t.Errorf("unexpected %+v", f)
		}
	}
}

// addressed is a cluster's fake admin behind an https admin URL: each broker is read at the
// TLS address Pulsar gives for its id (pulsarx.Admin.BrokerAddress), not at https://<id>.
type addressed struct {
	*activityAdmin
	ids []string          // the ids Pulsar lists (PerBroker is keyed by address)
	tls map[string]string // broker id -> web address; an id missing here fails to resolve
}

func (a addressed) ActiveBrokers(ctx context.Context, cluster string) ([]string, error) {
	return a.ids, a.Call(ctx, "ActiveBrokers "+cluster)
}

func (a addressed) BrokerAddress(ctx context.Context, cluster, broker string) (string, error) {
	if err := a.Call(ctx, "BrokerAddress "+cluster+" "+broker); err != nil {
		return "", err
	}
	if addr, ok := a.tls[broker]; ok {
		return addr, nil
	}
	return "", errors.New("404 Not Found")
}

// Over https each broker is read at the address Pulsar names for it, and the findings name
// that address; a broker whose address cannot be found is a warning naming it, as a broker
// that does not answer is.
func TestBrokersReadAtTheirTLSAddress(t *testing.T) {
	scus := withBrokers(healthy("scus"), map[string]func(*fakes.Admin){
		"https://127.0.0.1:18079": nil,
		"https://127.0.0.1:18078": func(b *fakes.Admin) { b.Down = true },
	})
	cl := cluster(scus)
	cl.AdminURL = "https://127.0.0.1:18079"
	cl.Admin = addressed{activityAdmin: scus, ids: []string{"127.0.0.1:18080", "127.0.0.1:18081", "127.0.0.1:18082"}, tls: map[string]string{
		"127.0.0.1:18080": "https://127.0.0.1:18079",
		"127.0.0.1:18081": "https://127.0.0.1:18078",
	}}
	r := Run(context.Background(), Options{Clusters: []*Cluster{cl}, Kafka: &fakeKafka{}, ReplicatorSettle: -1})

	var down, lost []Finding
	for _, f := range only(r, SeverityWarning, CheckBrokers) {
		switch f.Subject {
		case "127.0.0.1:18081":
			down = append(down, f)
		case "127.0.0.1:18082":
			lost = append(lost, f)
		default:
			t.Errorf("finding on a broker that answered: %+v", f)
		}
	}
	if len(down) != 1 || !strings.Contains(down[0].Message, "did not answer at its own address https://127.0.0.1:18078") ||
		!strings.Contains(down[0].Fix, "https://127.0.0.1:18078") {
		t.Errorf("the stopped broker: %+v", down)
	}
	if len(lost) != 1 || !strings.Contains(lost[0].Message, "has no web address the admin API named") {
		t.Errorf("the broker without an address: %+v", lost)
	}
	bs := r.Clusters[0].Brokers
	if len(bs) != 3 || !bs[0].Reachable || bs[0].Version != "4.0.8" || bs[0].KoP == nil || !*bs[0].KoP {
		t.Errorf("broker reports %+v", bs)
	}
}
