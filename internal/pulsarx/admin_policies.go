package pulsarx

import (
	"context"
	"net/http"
	"slices"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// NamespaceReplicationClusters lists the replication clusters of namespace ("tenant/ns").
func (a *Admin) NamespaceReplicationClusters(ctx context.Context, namespace string) ([]string, error) {
	return sortedList(ctx, a, "get replication clusters of", namespace, func(cctx context.Context) ([]string, error) {
		return a.client.Namespaces().GetNamespaceReplicationClustersWithContext(cctx, namespace)
	})
}

// TenantAllowedClusters lists the clusters tenant may use.
func (a *Admin) TenantAllowedClusters(ctx context.Context, tenant string) ([]string, error) {
	return sortedList(ctx, a, "get tenant", tenant, func(cctx context.Context) ([]string, error) {
		t, err := a.client.Tenants().GetWithContext(cctx, tenant)
		return slices.Clone(t.AllowedClusters), err
	})
}

// NamespacePolicy is what doctor needs of a namespace's policies. Nil pointers mean "not
// set on the namespace" (the broker default applies).
type NamespacePolicy struct {
	ReplicationClusters    []string
	RetentionTimeInMinutes *int   // -1: infinite
	RetentionSizeInMB      *int64 // -1: infinite
	CompactionThreshold    *int64 // bytes; 0 disables automatic compaction
	MessageTTLInSeconds    *int
	Bundles                []Bundle
}

// NamespacePolicies reads namespace's policies (GET /admin/v2/namespaces/{tenant}/{ns}).
func (a *Admin) NamespacePolicies(ctx context.Context, namespace string) (NamespacePolicy, error) {
	p, err := a.policies(ctx, "get policies of", namespace)
	if err != nil {
		return NamespacePolicy{}, err
	}
	np := NamespacePolicy{
		ReplicationClusters: slices.Sorted(slices.Values(p.ReplicationClusters)),
		CompactionThreshold: p.CompactionThreshold,
		MessageTTLInSeconds: p.MessageTTLInSeconds,
	}
	if r := p.RetentionPolicies; r != nil {
		np.RetentionTimeInMinutes = &r.RetentionTimeInMinutes
		np.RetentionSizeInMB = &r.RetentionSizeInMB
	}
	if p.Bundles != nil && len(p.Bundles.Boundaries) > 0 {
		if np.Bundles, err = BundlesFromBoundaries(p.Bundles.Boundaries); err != nil {
			return NamespacePolicy{}, &AdminError{Cluster: a.cluster, Op: "get policies of", Target: namespace, Status: http.StatusInternalServerError, Err: err}
		}
	}
	return np, nil
}

func (a *Admin) policies(ctx context.Context, op, namespace string) (*utils.Policies, error) {
	if _, err := a.nsName(op, namespace); err != nil {
		return nil, err
	}
	return call(ctx, a, op, namespace, func(cctx context.Context) (*utils.Policies, error) {
		return a.client.Namespaces().GetPoliciesWithContext(cctx, namespace)
	})
}

// TopicReplicationClusters is what decides where topic replicates from this cluster: its
// own (local) topic-level policy when it has one (topicLevel), else its namespace's
// replication clusters. Sorted.
func (a *Admin) TopicReplicationClusters(ctx context.Context, topic string) (clusters []string, topicLevel bool, err error) {
	own, err := onTopic(ctx, a, "get replication clusters of", topic, func(cctx context.Context, tn utils.TopicName) ([]string, error) {
		return a.client.Topics().GetReplicationClustersWithContext(cctx, tn)
	})
	if err != nil {
		return nil, false, err
	}
	if len(own) > 0 {
		return slices.Sorted(slices.Values(own)), true, nil
	}
	tn, err := a.topicName("get replication clusters of", topic)
	if err != nil {
		return nil, false, err
	}
	ns, err := a.NamespaceReplicationClusters(ctx, tn.GetTenant()+"/"+tn.GetNamespace())
	return ns, false, err
}

// SetTopicReplicationClusters sets topic's local topic-level replication clusters (this
// cluster's policy only: the other clusters keep theirs).
func (a *Admin) SetTopicReplicationClusters(ctx context.Context, topic string, clusters []string) error {
	_, err := onTopic(ctx, a, "set replication clusters of", topic, func(cctx context.Context, tn utils.TopicName) (struct{}, error) {
		return struct{}{}, a.client.Topics().SetReplicationClustersWithContext(cctx, tn, clusters)
	})
	return err
}

// RemoveTopicReplicationClusters removes topic's local topic-level replication clusters:
// its namespace's apply again.
func (a *Admin) RemoveTopicReplicationClusters(ctx context.Context, topic string) error {
	_, err := onTopic(ctx, a, "remove replication clusters of", topic, func(cctx context.Context, tn utils.TopicName) (struct{}, error) {
		return struct{}{}, a.client.Topics().RemoveReplicationClustersWithContext(cctx, tn)
	})
	return err
}

// OffsetsTenants lists the tenants whose <tenant>/<metadataNamespace> holds KoP's offsets
// topic (what `tenants: auto` covers), sorted: a tenant without that namespace or topic
// (KoP creates both when the tenant's first client arrives) is left out.
func (a *Admin) OffsetsTenants(ctx context.Context, metadataNamespace string) ([]string, error) {
	tenants, err := sortedList(ctx, a, "list tenants", "", func(cctx context.Context) ([]string, error) {
		return a.client.Tenants().ListWithContext(cctx)
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range tenants {
		ok, err := a.TopicExists(ctx, OffsetsTopic(t, metadataNamespace))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, t)
		}
	}
	return out, nil
}
