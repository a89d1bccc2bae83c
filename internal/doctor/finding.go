// Package doctor audits what geo-replicated KoP consumer offsets depend on: the offsets
// topic and its partition count on every cluster, the replication of the metadata namespace
// and of the group topics, the offsets-topic replicators, retention, compaction and message
// TTL of the metadata namespace, broker versions and whether KoP answers on its Kafka
// listener.
//
// Each rule is a small function over the Admin and KafkaProber interfaces that returns
// Findings; Run runs them all over a set of clusters and builds a Report. Nothing here
// writes to a cluster, prints, or knows about cobra.
package doctor

import (
	"cmp"
	"slices"

	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// Severity of a finding.
type Severity string

// Severities, most severe first.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// Severities lists the severities, most severe first.
var Severities = []Severity{SeverityError, SeverityWarning, SeverityInfo}

func (s Severity) rank() int {
	switch s {
	case SeverityError:
		return 0
	case SeverityWarning:
		return 1
	}
	return 2
}

// Check ids: stable, part of the JSON contract.
const (
	CheckAdminReachable       = "admin-reachable"
	CheckAdminAPI             = "admin-api"
	CheckBrokerVersion        = "broker-version"
	CheckClusterName          = "cluster-name"
	CheckKoPListener          = "kop-listener"
	CheckKoPVersion           = "kop-version"
	CheckBrokers              = "brokers"
	CheckBrokerKoP            = "broker-kop"
	CheckBrokerSettings       = "broker-settings"
	CheckOffsetsServed        = "offsets-partitions-served"
	CheckPeerRegistered       = "peer-cluster-registered"
	CheckOffsetsTopicExists   = "offsets-topic-exists"
	CheckTenantClusters       = "tenant-clusters"
	CheckOffsetsPartitions    = "offsets-topic-partitions"
	CheckMetadataNamespace    = "metadata-namespace-replication"
	CheckTenantAllowed        = "tenant-allowed-clusters"
	CheckOffsetsReplicator    = "offsets-replicator"
	CheckDeploymentModel      = "deployment-model"
	CheckOffsetsRetention     = "offsets-retention"
	CheckOffsetsCompaction    = "offsets-compaction"
	CheckOffsetsTTL           = "offsets-message-ttl"
	CheckOffsetsExpiry        = "offsets-expiry-replication"
	CheckOffsetsLoadable      = "offsets-partition-loadable"
	CheckGroupTopics          = "group-topics"
	CheckTopicExists          = "topic-exists"
	CheckTopicPartitions      = "topic-partitions"
	CheckTopicReplication     = "topic-namespace-replication"
	CheckTopicOffsetAlignment = "topic-offsets-alignment"
	CheckGroupsFollow         = "groups-follow"
)

// Finding is one thing doctor found.
type Finding struct {
	Severity Severity `json:"severity"`
	Check    string   `json:"check"`
	// Tenant is the tenant a finding of a multi-tenant audit is about (empty: the cluster's
	// own, for every tenant).
	Tenant string `json:"tenant,omitempty"`
	// Cluster is the config name of the cluster the finding is about (where the fix runs).
	Cluster string `json:"cluster,omitempty"`
	// Peer is the other cluster of a pair finding (replication towards it, for example).
	Peer    string `json:"peer,omitempty"`
	Subject string `json:"subject,omitempty"` // topic, namespace or tenant
	Message string `json:"message"`
	// Evidence is what the finding rests on: values read from the clusters.
	Evidence map[string]any `json:"evidence,omitempty"`
	// Fix is the exact command that fixes it (pulsar-admin syntax), or what to do when no
	// command can.
	Fix string `json:"fix,omitempty"`
	// FixPulsarctl is the same fix with pulsarctl, when there is one.
	FixPulsarctl string `json:"fixPulsarctl,omitempty"`
}

// SortFindings orders findings by severity (errors first), keeping the rule order within
// a severity.
func SortFindings(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int { return cmp.Compare(a.Severity.rank(), b.Severity.rank()) })
}

// UnloadableError is returned by Options.GroupTopics, with the topics it found, when KoP
// cannot load the group's offsets partition.
type UnloadableError struct{ Failure loader.LoadFailure }

func (e *UnloadableError) Error() string { return e.Failure.String() }
