package doctor

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// fakeAdmin is an in-memory Admin: one cluster's answers. A nil map field answers as a
// healthy lab cluster would.
type fakeAdmin struct {
	name        string
	down        bool
	version     string
	runtime     map[string]string
	clusters    []string
	offsetsN    int32 // 0: the offsets topic does not exist
	nsRepl      map[string][]string
	policies    map[string]pulsarx.NamespacePolicy
	tenants     map[string][]string
	topics      map[string]int32 // full name -> partitions (0: non-partitioned)
	repl        map[string]map[string]pulsarx.Replication
	activity    map[string]TopicActivity
	statsErr    error
	replCalls   int
	nsReplError error
}

func notFound(c, target string) error {
	return &pulsarx.AdminError{Cluster: c, Op: "get", Target: target, Status: http.StatusNotFound, Err: errors.New("not found")}
}

func (f *fakeAdmin) err() error {
	if f.down {
		return &pulsarx.AdminError{Cluster: f.name, Op: "call", Err: errors.New("dial tcp: connection refused")}
	}
	return nil
}

func (f *fakeAdmin) BrokerVersion(context.Context) (string, error) { return f.version, f.err() }
func (f *fakeAdmin) RuntimeConfig(context.Context) (map[string]string, error) {
	return f.runtime, f.err()
}
func (f *fakeAdmin) Clusters(context.Context) ([]string, error) { return f.clusters, f.err() }
func (f *fakeAdmin) OffsetsTopicPartitions(_ context.Context, tenant, ns string) (int32, error) {
	if err := f.err(); err != nil {
		return 0, err
	}
	if f.offsetsN == 0 {
		return 0, notFound(f.name, tenant+"/"+ns)
	}
	return f.offsetsN, nil
}
func (f *fakeAdmin) PartitionedTopicPartitions(_ context.Context, topic string) (int32, error) {
	if err := f.err(); err != nil {
		return 0, err
	}
	n, ok := f.topics[topic]
	if !ok {
		return 0, notFound(f.name, topic)
	}
	return n, nil
}
func (f *fakeAdmin) TopicExists(_ context.Context, topic string) (bool, error) {
	_, ok := f.topics[topic]
	return ok, f.err()
}
func (f *fakeAdmin) ReplicationStats(_ context.Context, topic string) (map[string]pulsarx.Replication, error) {
	f.replCalls++
	if err := f.err(); err != nil {
		return nil, err
	}
	if f.statsErr != nil {
		return nil, f.statsErr
	}
	return f.repl[topic], nil
}
func (f *fakeAdmin) TopicActivity(_ context.Context, topic string) (TopicActivity, error) {
	return f.activity[topic], f.err()
}
func (f *fakeAdmin) NamespaceReplicationClusters(_ context.Context, ns string) ([]string, error) {
	if err := f.err(); err != nil {
		return nil, err
	}
	if f.nsReplError != nil {
		return nil, f.nsReplError
	}
	rc, ok := f.nsRepl[ns]
	if !ok {
		return nil, notFound(f.name, ns)
	}
	return slices.Clone(rc), nil
}
func (f *fakeAdmin) NamespacePolicies(_ context.Context, ns string) (pulsarx.NamespacePolicy, error) {
	if err := f.err(); err != nil {
		return pulsarx.NamespacePolicy{}, err
	}
	p, ok := f.policies[ns]
	if !ok {
		return p, notFound(f.name, ns)
	}
	return p, nil
}
func (f *fakeAdmin) TenantAllowedClusters(_ context.Context, t string) ([]string, error) {
	if err := f.err(); err != nil {
		return nil, err
	}
	a, ok := f.tenants[t]
	if !ok {
		return nil, notFound(f.name, t)
	}
	return a, nil
}

const offsetsTopic = "persistent://public/__kafka/__consumer_offsets"

func ptr[T any](v T) *T { return &v }

// healthy returns a cluster named name in a healthy two-cluster set-up with KoP's own
// namespace policies and 4 offsets partitions, all replicated and connected.
func healthy(name string) *fakeAdmin {
	peer := map[string]string{"scus": "wus", "wus": "scus"}[name]
	f := &fakeAdmin{
		name: name, version: "4.0.8",
		runtime:  map[string]string{"clusterName": name, "messagingProtocols": "[kafka]"},
		clusters: []string{"scus", "wus"}, offsetsN: 4,
		nsRepl: map[string][]string{"public/__kafka": {"scus", "wus"}, "public/default": {"scus", "wus"}},
		policies: map[string]pulsarx.NamespacePolicy{"public/__kafka": {
			RetentionTimeInMinutes: ptr(4320), RetentionSizeInMB: ptr(int64(-1)),
			CompactionThreshold: ptr(int64(100 << 20)), MessageTTLInSeconds: ptr(259200),
		}},
		tenants: map[string][]string{"public": {"scus", "wus"}},
		topics:  map[string]int32{"persistent://public/default/topic-1": 1},
		repl:    map[string]map[string]pulsarx.Replication{},
	}
	for i := int32(0); i < 4; i++ {
		f.repl[pulsarx.PartitionTopic(offsetsTopic, i)] = map[string]pulsarx.Replication{peer: {Connected: true}}
	}
	return f
}

func cluster(f *fakeAdmin) *Cluster {
	port := map[string]string{"scus": "1", "wus": "2"}[f.name]
	return &Cluster{Name: f.name, AdminURL: "http://127.0.0.1:" + port + "8080", ServiceURL: "pulsar://127.0.0.1:" + port + "6650",
		Tenant: "public", MetadataNamespace: "__kafka", KafkaNamespace: "public/default",
		KafkaBootstrap: []string{"127.0.0.1:" + port + "9092"}, Admin: f}
}

type fakeKafka struct{ fail map[string]error }

func (k *fakeKafka) Probe(_ context.Context, cl Cluster) (KafkaProbe, error) {
	if err := k.fail[cl.Name]; err != nil {
		return KafkaProbe{}, err
	}
	return KafkaProbe{Brokers: 1}, nil
}
