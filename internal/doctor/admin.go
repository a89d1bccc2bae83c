package doctor

import (
	"context"
	"errors"
	"strings"

	"github.com/kop-offsets/kop-offsets/internal/explain"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// Admin is the part of a cluster's admin REST API doctor reads. *PulsarAdmin implements it
// over pulsarx.Admin; tests use fakes. Errors should match pulsarx.ErrNotFound and
// pulsarx.ErrUnreachable with errors.Is where they apply.
type Admin interface {
	// BrokerVersion is the Pulsar version of the broker behind the admin URL.
	BrokerVersion(ctx context.Context) (string, error)
	// RuntimeConfig is the broker's runtime configuration (GET
	// /admin/v2/brokers/configuration/runtime): clusterName, messagingProtocols and the
	// broker defaults of retention, TTL and compaction.
	RuntimeConfig(ctx context.Context) (map[string]string, error)
	// Clusters lists the clusters this cluster knows (its own and the remote ones).
	Clusters(ctx context.Context) ([]string, error)
	// OffsetsTopicPartitions is the partition count of <tenant>/<namespace>/__consumer_offsets;
	// ErrNotFound when it is not a partitioned topic.
	OffsetsTopicPartitions(ctx context.Context, tenant, namespace string) (int32, error)
	// PartitionedTopicPartitions is the partition count of a topic, 0 for a
	// non-partitioned one.
	PartitionedTopicPartitions(ctx context.Context, topic string) (int32, error)
	// TopicExists reports whether topic exists (partitioned or not).
	TopicExists(ctx context.Context, topic string) (bool, error)
	// ReplicationStats returns the replicators of one (partition) topic by remote cluster.
	ReplicationStats(ctx context.Context, topic string) (map[string]pulsarx.Replication, error)
	// TopicActivity returns who writes one (partition) topic locally.
	TopicActivity(ctx context.Context, topic string) (TopicActivity, error)
	// NamespaceReplicationClusters lists the replication clusters of a namespace.
	NamespaceReplicationClusters(ctx context.Context, namespace string) ([]string, error)
	// NamespacePolicies reads a namespace's retention, compaction and TTL policies.
	NamespacePolicies(ctx context.Context, namespace string) (pulsarx.NamespacePolicy, error)
	// TenantAllowedClusters lists the clusters a tenant may use.
	TenantAllowedClusters(ctx context.Context, tenant string) ([]string, error)
}

// Brokers is optionally implemented by an Admin: the active brokers of the cluster and
// what each one says about itself, read at its own web address (not through the admin URL,
// which reaches one broker of many). *PulsarAdmin implements it.
type Brokers interface {
	// ActiveBrokers lists the broker ids ("host:port" of each web service) of cluster, its
	// Pulsar name (GET /admin/v2/brokers/{cluster}).
	ActiveBrokers(ctx context.Context, cluster string) ([]string, error)
	// BrokerVersionOf is the Pulsar version of one broker.
	BrokerVersionOf(ctx context.Context, broker string) (string, error)
	// RuntimeConfigOf is one broker's runtime configuration.
	RuntimeConfigOf(ctx context.Context, broker string) (map[string]string, error)
}

// TopicActivity is what the topic stats of one partition say about its writers.
type TopicActivity struct {
	// LocalProducers are the producers that are not geo-replicators (whose names do not
	// start with "pulsar.repl.").
	LocalProducers []string
	// MsgInCounter counts the messages written to the topic since it was loaded, replicated
	// ones included.
	MsgInCounter int64
	// ReplicatedIn is the rate of messages received from each remote cluster.
	ReplicatedIn map[string]float64
}

// ReplicatorProducerPrefix starts the producer name of Pulsar's geo-replicators
// ("pulsar.repl.<local cluster>" on the remote topic).
const ReplicatorProducerPrefix = "pulsar.repl."

// PulsarAdmin implements Admin over pulsarx.Admin, adding the calls pulsarx lacks
// (RuntimeConfig, TopicActivity) through its pulsaradmin client.
type PulsarAdmin struct{ *pulsarx.Admin }

var (
	_ Admin            = PulsarAdmin{}
	_ Brokers          = PulsarAdmin{}
	_ TopicReplication = PulsarAdmin{}
)

// TopicReplication is optionally implemented by an Admin: where a topic replicates from this
// cluster, its own topic-level policy first (topicLevel), else its namespace's. With it,
// doctor tells the sync deployment (the offsets topic not replicated between the clusters:
// `kop-offsets sync setup`, docs/sync.md) from a broken replication. *PulsarAdmin implements it.
type TopicReplication interface {
	TopicReplicationClusters(ctx context.Context, topic string) (clusters []string, topicLevel bool, err error)
}

// BrokerVersionOf asks broker, at its own web address, for its version.
func (a PulsarAdmin) BrokerVersionOf(ctx context.Context, broker string) (string, error) {
	b, err := a.ForBroker(broker)
	if err != nil {
		return "", err
	}
	return b.BrokerVersion(ctx)
}

// RuntimeConfigOf asks broker, at its own web address, for its runtime configuration.
func (a PulsarAdmin) RuntimeConfigOf(ctx context.Context, broker string) (map[string]string, error) {
	b, err := a.ForBroker(broker)
	if err != nil {
		return nil, err
	}
	return PulsarAdmin{Admin: b}.RuntimeConfig(ctx)
}

// RuntimeConfig is GET /admin/v2/brokers/configuration/runtime.
func (a PulsarAdmin) RuntimeConfig(ctx context.Context) (map[string]string, error) {
	m, err := a.Client().Brokers().GetRuntimeConfigurationsWithContext(ctx)
	if err != nil {
		return nil, classify(a.Cluster(), "get runtime configuration", "", err)
	}
	return m, nil
}

// TopicActivity reads the stats of topic (GET .../stats).
func (a PulsarAdmin) TopicActivity(ctx context.Context, topic string) (TopicActivity, error) {
	tn, err := parseTopic(topic)
	if err != nil {
		return TopicActivity{}, err
	}
	st, err := a.Client().Topics().GetStatsWithContext(ctx, *tn)
	if err != nil {
		return TopicActivity{}, classify(a.Cluster(), "get stats of", topic, err)
	}
	act := TopicActivity{MsgInCounter: st.MsgCounterIn, ReplicatedIn: map[string]float64{}}
	for _, p := range st.Publishers {
		if !strings.HasPrefix(p.ProducerName, ReplicatorProducerPrefix) {
			act.LocalProducers = append(act.LocalProducers, p.ProducerName)
		}
	}
	for remote, r := range st.Replication {
		act.ReplicatedIn[remote] = r.MsgRateIn
	}
	return act, nil
}

// isNotFound and isUnreachable classify admin errors.
// A 404 without Pulsar's reason is an adminURL that is not a Pulsar admin API: the
// cluster is down for doctor, not missing a topic.
func isNotFound(err error) bool    { return errors.Is(err, pulsarx.ErrNotFound) && !notAdminAPI(err) }
func isUnreachable(err error) bool { return errors.Is(err, pulsarx.ErrUnreachable) }
func notAdminAPI(err error) bool {
	return err != nil && strings.HasPrefix(explain.Of(err), explain.CauseNotAdminAPI)
}
