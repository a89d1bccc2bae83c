package doctor

import (
	"context"

	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

// activityAdmin is the shared fake admin plus the one method whose type it cannot name
// (fakes cannot import doctor): topic activity.
type activityAdmin struct {
	*fakes.Admin
	activity map[string]TopicActivity
}

func (f *activityAdmin) TopicActivity(ctx context.Context, topic string) (TopicActivity, error) {
	return f.activity[topic], f.Call(ctx, "TopicActivity "+topic)
}

const offsetsTopic = "persistent://public/__kafka/__consumer_offsets"

func ptr[T any](v T) *T { return &v }

// healthy returns a cluster named name in a healthy two-cluster set-up with KoP's own
// namespace policies and 4 offsets partitions, all replicated and connected.
func healthy(name string) *activityAdmin {
	peer := map[string]string{"scus": "wus", "wus": "scus"}[name]
	f := &activityAdmin{Admin: &fakes.Admin{
		Name: name, Version: "4.0.8",
		Runtime:      map[string]string{"clusterName": name, "messagingProtocols": "[kafka]"},
		ClusterNames: []string{"scus", "wus"}, OffsetsPartitions: 4,
		NamespaceRepl: map[string][]string{"public/__kafka": {"scus", "wus"}, "public/default": {"scus", "wus"}},
		Policies: map[string]pulsarx.NamespacePolicy{"public/__kafka": {
			RetentionTimeInMinutes: ptr(4320), RetentionSizeInMB: ptr(int64(-1)),
			CompactionThreshold: ptr(int64(100 << 20)), MessageTTLInSeconds: ptr(259200),
		}},
		Tenants: map[string][]string{"public": {"scus", "wus"}},
		Topics:  map[string]int32{"persistent://public/default/topic-1": 1},
		Repl:    map[string]map[string]pulsarx.Replication{},
	}}
	for i := int32(0); i < 4; i++ {
		f.Repl[pulsarx.PartitionTopic(offsetsTopic, i)] = map[string]pulsarx.Replication{peer: {Connected: true}}
	}
	return f
}

func cluster(f *activityAdmin) *Cluster {
	port := map[string]string{"scus": "1", "wus": "2"}[f.Name]
	return &Cluster{Name: f.Name, AdminURL: "http://127.0.0.1:" + port + "8080", ServiceURL: "pulsar://127.0.0.1:" + port + "6650",
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
