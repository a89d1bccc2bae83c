// Package survey is the gather of a check: for every selected group/topic/partition, what
// KoP serves on each cluster (the cached offsets, through OffsetFetch), what each cluster's
// offsets topic holds (the persisted offsets, replayed as KoP's loader does) and what KoP
// would load, compared across clusters; the rows are judged by package verdict. It also
// lists groups (Groups). check runs it once, watch per cycle.
//
// Everything is read through interfaces (loader.OffsetTopicReader, OffsetFetcher,
// ReplicationSource, align.Source) so that tests use in-memory fakes and kfake; the
// implementations for real clusters are kop.Fetcher, align.KafkaSource and AdminReplication.
// Nothing here writes, prints or knows about cobra.
package survey

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/explain"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// Cluster is one cluster to check: its name, how to read each side, and the Kafka
// namespace used to normalise topic names (KoP's kafkaTenant/kafkaNamespace).
type Cluster struct {
	Name           string
	KafkaNamespace string

	// Reader reads the offsets topic (persisted side). Required.
	Reader loader.OffsetTopicReader
	// Replication gives the replicators of this cluster's offsets partitions toward the
	// other clusters. Nil: no replication information (no backlog is assumed).
	Replication ReplicationSource
	// Fetcher asks KoP (cached side). Nil: the cached side is not checked.
	Fetcher OffsetFetcher
	// Down, when set, is why the cluster is not asked at all (it did not answer within the
	// timeout before the check began): one wait per cluster, not one per call.
	Down error
	// Owner names the broker that owns the bundle of an offsets partition, without making
	// one take it ("" when none does): evidence for an unserved partition. Nil: not said.
	Owner func(ctx context.Context, offsetsPartition int32) (string, error)
	// Copies reads this cluster's copies of the data topics through KoP, to find the same
	// message on two clusters (alignment). Nil: offsets replicated to or from this cluster
	// are not translated (their alignment is unknown).
	Copies align.Source
	// URLs are the cluster's endpoints by kind, for its errors (explain.URLs). Nil: errors
	// name no URL.
	URLs map[explain.Kind]string
	// FromFlags: the ad-hoc cluster (config.Cluster.FromFlags); its fixes name the flags.
	FromFlags bool
}

// ListedGroup is one group as KoP lists it (package kop).
type ListedGroup = kop.ListedGroup

// ReplicationSource reports the replicators of one offsets partition of this cluster,
// keyed by remote cluster name.
type ReplicationSource interface {
	OutboundReplication(ctx context.Context, offsetsPartition int32) (map[string]verdict.Inbound, error)
}

// OffsetFetcher is KoP's Kafka API on one cluster.
type OffsetFetcher interface {
	// ListGroups lists the groups KoP knows (its cache).
	ListGroups(ctx context.Context) ([]kop.ListedGroup, error)
	// EachOffsets fetches the committed offsets of groups and hands each group's answer to
	// fn, once per group, one call at a time (kop.Fetcher.EachOffsets).
	kop.OffsetsEach
	// EndOffsets lists the log-end offsets of the partitions of topics (Kafka names).
	EndOffsets(ctx context.Context, topics []string) (map[string]map[int32]int64, error)
}

// AdminReplication is the ReplicationSource of a cluster's admin API.
type AdminReplication struct {
	Admin        *pulsarx.Admin
	OffsetsTopic string // persistent://<tenant>/<ns>/__consumer_offsets
	// Names maps Pulsar cluster names (the keys of Pulsar's replication stats) to config
	// names (config.PulsarNames); a remote not in it keeps Pulsar's name.
	Names map[string]string
}

// OutboundReplication implements ReplicationSource.
func (a AdminReplication) OutboundReplication(ctx context.Context, p int32) (map[string]verdict.Inbound, error) {
	st, err := a.Admin.ReplicationStats(ctx, pulsarx.PartitionTopic(a.OffsetsTopic, p))
	if err != nil {
		return nil, err
	}
	out := make(map[string]verdict.Inbound, len(st))
	for remote, r := range st {
		out[ConfigName(a.Names, remote)] = verdict.Inbound{Backlog: r.ReplicationBacklog, Connected: r.Connected}
	}
	return out, nil
}

// ConfigName is the config name of the cluster Pulsar calls pulsarName, by names (Pulsar
// name -> config name); pulsarName itself when names does not know it.
func ConfigName(names map[string]string, pulsarName string) string {
	if n, ok := names[pulsarName]; ok {
		return n
	}
	return pulsarName
}

// StaticReplication is a ReplicationSource from a fixed table (tests): offsets partition
// -> remote -> state.
type StaticReplication map[int32]map[string]verdict.Inbound

// OutboundReplication implements ReplicationSource.
func (s StaticReplication) OutboundReplication(_ context.Context, p int32) (map[string]verdict.Inbound, error) {
	return maps.Clone(s[p]), nil
}

// ClusterError is a failure of one endpoint of one cluster, explained (package explain):
// Error is the one line a table prints, the other fields its parts.
type ClusterError = explain.Problem

// errNotAsked marks an endpoint that was not asked because its cluster did not answer first.
var errNotAsked = errors.New("not asked")

// clusterErr explains err of endpoint kind of c (an admin call is labelled admin whatever
// kind says).
func clusterErr(c Cluster, kind explain.Kind, err error) ClusterError {
	if errors.Is(err, errNotAsked) {
		cause := "not asked: " + strings.TrimPrefix(pulsarx.TrimCluster(err, c.Name), errNotAsked.Error()+": ")
		return ClusterError{Cluster: c.Name, Endpoint: string(kind), URL: c.URLs[kind], Cause: cause,
			Error: fmt.Sprintf("cluster %s: %s %s: %s", c.Name, kind, c.URLs[kind], cause)}
	}
	e := explain.New(c.Name, kind, "", err)
	e.URL = c.URLs[e.Endpoint]
	if c.FromFlags {
		e.Fix = explain.FlagFix(c.Name, c.URLs, e.Fix)
	}
	return ClusterError{Cluster: c.Name, Endpoint: string(e.Endpoint), URL: e.URL, Cause: e.Cause, Fix: e.Fix, Detail: e.Detail, Error: e.Error()}
}
