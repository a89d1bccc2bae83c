package pulsarx

import (
	"context"
	"net/http"
	"strings"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// Bundles returns the bundles of namespace ("tenant/ns"), sorted by range. The broker fills
// the policies' bundles from the local policies, so split bundles are included.
func (a *Admin) Bundles(ctx context.Context, namespace string) ([]Bundle, error) {
	const op = "get bundles of"
	p, err := a.policies(ctx, op, namespace)
	if err != nil {
		return nil, err
	}
	if p.Bundles == nil || len(p.Bundles.Boundaries) == 0 {
		// No bundle data: Pulsar treats the namespace as one full bundle.
		return []Bundle{{Range: FormatBundleRange(0, 0xffffffff), Lo: 0, Hi: 0xffffffff}}, nil
	}
	b, err := BundlesFromBoundaries(p.Bundles.Boundaries)
	if err != nil {
		return nil, &AdminError{Cluster: a.cluster, Op: op, Target: namespace, Status: http.StatusInternalServerError, Err: err}
	}
	return b, nil
}

// BundleForTopic computes the bundle of topic (a full topic name; for a partition, the
// partition's name) from its namespace's bundles and TopicHash, as the broker does. It does
// not trigger ownership.
func (a *Admin) BundleForTopic(ctx context.Context, topic string) (Bundle, error) {
	tn, err := a.topicName("find bundle of", topic)
	if err != nil {
		return Bundle{}, err
	}
	bundles, err := a.Bundles(ctx, tn.GetTenant()+"/"+tn.GetNamespace())
	if err != nil {
		return Bundle{}, err
	}
	b, err := FindBundle(bundles, tn.String())
	if err != nil {
		return Bundle{}, &AdminError{Cluster: a.cluster, Op: "find bundle of", Target: tn.String(), Status: http.StatusInternalServerError, Err: err}
	}
	return b, nil
}

// BrokerBundleForTopic asks the broker which bundle holds topic
// (GET /lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}/bundle). It does not trigger
// ownership; use it to cross-check BundleForTopic.
func (a *Admin) BrokerBundleForTopic(ctx context.Context, topic string) (Bundle, error) {
	const op = "get bundle of"
	tn, err := a.topicName(op, topic)
	if err != nil {
		return Bundle{}, err
	}
	r, err := call(ctx, a, op, tn.String(), func(cctx context.Context) (string, error) {
		return a.client.Topics().GetBundleRangeWithContext(cctx, *tn)
	})
	if err != nil {
		return Bundle{}, err
	}
	b, err := ParseBundleRange(strings.Trim(strings.TrimSpace(r), `"`))
	if err != nil {
		return Bundle{}, &AdminError{Cluster: a.cluster, Op: op, Target: tn.String(), Status: http.StatusInternalServerError, Err: err}
	}
	return b, nil
}

// Owner is the broker serving a topic, as the lookup answers it.
type Owner struct {
	BrokerURL    string // pulsar://host:port
	BrokerURLTLS string
	HTTPURL      string
	HTTPURLTLS   string
}

// LookupOwner looks topic up (GET /lookup/v2/topic/...). WRITE-LIKE: when no broker owns the
// topic's bundle, the lookup makes one take it, and for KoP that loads every offsets
// partition of the bundle into the group coordinator. That is the load lever of `reload`.
func (a *Admin) LookupOwner(ctx context.Context, topic string) (Owner, error) {
	d, err := onTopic(ctx, a, "look up", topic, a.client.Topics().LookupWithContext)
	if err != nil {
		return Owner{}, err
	}
	return Owner{BrokerURL: d.BrokerURL, BrokerURLTLS: d.BrokerURLTLS, HTTPURL: d.HTTPURL, HTTPURLTLS: d.HTTPURLTLS}, nil
}

// UnloadBundle unloads one bundle of namespace (WRITE): the owning broker closes every topic
// of the bundle and gives up ownership; KoP drops the groups of the offsets partitions in it.
// The bundle is loaded again by the next lookup or client connection of any topic in it.
func (a *Admin) UnloadBundle(ctx context.Context, namespace, bundleRange string) error {
	const op = "unload bundle"
	if _, err := ParseBundleRange(bundleRange); err != nil {
		return &AdminError{Cluster: a.cluster, Op: op, Target: namespace + "/" + bundleRange, Status: http.StatusBadRequest, Err: err}
	}
	return a.do(ctx, op, namespace+"/"+bundleRange, func(cctx context.Context) error {
		return a.client.Namespaces().UnloadNamespaceBundleWithContext(cctx, namespace, bundleRange)
	})
}

// UnloadTopic unloads one topic (WRITE). On Pulsar 3.0+ KoP drops that partition's groups
// but does not load them again until the bundle is loaded again (domain.md): not a reload.
func (a *Admin) UnloadTopic(ctx context.Context, topic string) error {
	_, err := onTopic(ctx, a, "unload topic", topic, func(cctx context.Context, tn utils.TopicName) (struct{}, error) {
		return struct{}{}, a.client.Topics().UnloadWithContext(cctx, tn)
	})
	return err
}
