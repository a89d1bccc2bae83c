package pulsarx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/auth"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/rest"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// DefaultAdminTimeout bounds each admin call. pulsaradmin's own HTTP timeout is 5 minutes,
// far too long to report a dead cluster from a cron job.
const DefaultAdminTimeout = 30 * time.Second

// OffsetsTopic is the full name of KoP's offsets topic in tenant/namespace.
func OffsetsTopic(tenant, namespace string) string {
	return fmt.Sprintf("persistent://%s/%s/__consumer_offsets", tenant, namespace)
}

// PartitionTopic is the full name of partition p of a partitioned topic.
func PartitionTopic(topic string, p int32) string {
	return fmt.Sprintf("%s-partition-%d", topic, p)
}

// Admin is the admin REST API of one cluster. Every error it returns is an *AdminError.
type Admin struct {
	cluster  string
	client   pulsaradmin.Client
	http     *http.Client  // shares pulsaradmin's auth/TLS transport, for calls it lacks
	provider auth.Provider // the auth/TLS transport, for ForBroker
	baseURL  string
	timeout  time.Duration
}

// NewAdmin builds the admin client of the cluster named cluster (the name only labels
// errors). cfg carries the web service URL, auth and TLS settings; it is copied.
func NewAdmin(cluster string, cfg pulsaradmin.Config) (*Admin, error) {
	c := cfg
	provider, err := auth.GetAuthProvider(&c)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: admin auth: %w", cluster, err)
	}
	return newAdmin(cluster, &c, provider)
}

// NewAdminWithTransport builds the admin client over rt, a transport that already carries
// the cluster's auth and TLS (connect.AdminTransport builds it from the configuration).
func NewAdminWithTransport(cluster, webServiceURL string, rt http.RoundTripper) (*Admin, error) {
	return newAdmin(cluster, &pulsaradmin.Config{WebServiceURL: strings.TrimRight(webServiceURL, "/")}, auth.NewDefaultProvider(rt))
}

func newAdmin(cluster string, cfg *pulsaradmin.Config, provider auth.Provider) (*Admin, error) {
	client, err := admin.NewPulsarClientWithAuthProvider(cfg, provider)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: admin client: %w", cluster, err)
	}
	return &Admin{
		cluster:  cluster,
		client:   client,
		http:     &http.Client{Transport: provider, Timeout: admin.DefaultHTTPTimeOutDuration},
		provider: provider,
		baseURL:  strings.TrimRight(cfg.WebServiceURL, "/"),
		timeout:  DefaultAdminTimeout,
	}, nil
}

// ActiveBrokers lists the active brokers of cluster (its Pulsar name) by broker id, the
// "host:port" of each broker's web service (GET /admin/v2/brokers/{cluster}), sorted.
func (a *Admin) ActiveBrokers(ctx context.Context, cluster string) ([]string, error) {
	const op = "list active brokers of"
	cctx, cancel := a.withTimeout(ctx)
	defer cancel()
	bs, err := a.client.Brokers().GetActiveBrokersWithContext(cctx, cluster)
	if err != nil {
		return nil, a.wrap(ctx, op, cluster, err)
	}
	slices.Sort(bs)
	return bs, nil
}

// ForBroker returns the admin API of one broker of the cluster, at its own web address
// (broker is an id from ActiveBrokers, "host:port", taken with the scheme of this Admin's
// URL; or a web address "http(s)://host:port" from BrokerAddress), with the same auth, TLS
// and timeout. Calls that a broker answers about itself (its version, its runtime
// configuration) then describe that broker, not whichever one sits behind the cluster's
// admin URL. Errors are labelled "<cluster> broker <id>".
func (a *Admin) ForBroker(broker string) (*Admin, error) {
	scheme := "http"
	if u, err := url.Parse(a.baseURL); err == nil && u.Scheme != "" {
		scheme = u.Scheme
	}
	if s, hostPort, ok := strings.Cut(broker, "://"); ok && (s == "http" || s == "https") {
		scheme, broker = s, hostPort
	}
	if broker == "" || strings.ContainsAny(broker, "/?#@") {
		return nil, &AdminError{Cluster: a.cluster, Op: "address broker", Target: broker, Status: http.StatusBadRequest, Err: errors.New("not a host:port broker id")}
	}
	b, err := newAdmin(a.cluster+" broker "+broker, &pulsaradmin.Config{WebServiceURL: scheme + "://" + broker}, a.provider)
	if err != nil {
		return nil, err
	}
	b.timeout = a.timeout
	return b, nil
}

// BrokerAddress is the web address ForBroker should use for broker (an id from
// ActiveBrokers) of cluster (its Pulsar name). A broker id is the host and port of the
// broker's plain web service; over https (a broker with both webServicePort and
// webServicePortTls) that port does not speak TLS, and the broker's TLS port is not in the
// id. Pulsar knows it: a broker-scoped call (GET /admin/v2/brokers/{cluster}/{broker}/
// ownedNamespaces) sent to the admin URL is redirected to that broker's address on the
// request's scheme. So over https the redirect is asked for and not followed; an answer
// without redirect means the broker behind the admin URL is that broker. Over http the
// address is the id itself, with no call.
func (a *Admin) BrokerAddress(ctx context.Context, cluster, broker string) (string, error) {
	const op = "find the web address of broker"
	u, err := url.Parse(a.baseURL)
	if err != nil || u.Scheme != "https" {
		return "http://" + broker, nil
	}
	cctx, cancel := a.withTimeout(ctx)
	defer cancel()
	target := fmt.Sprintf("%s/admin/v2/brokers/%s/%s/ownedNamespaces", a.baseURL, url.PathEscape(cluster), url.PathEscape(broker))
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, target, nil)
	if err != nil {
		return "", &AdminError{Cluster: a.cluster, Op: op, Target: broker, Status: http.StatusBadRequest, Err: err}
	}
	hc := *a.http
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := hc.Do(req)
	if err != nil {
		return "", a.wrap(ctx, op, broker, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
	switch {
	case resp.StatusCode/100 == 2:
		return u.Scheme + "://" + u.Host, nil
	case resp.StatusCode == http.StatusTemporaryRedirect || resp.StatusCode == http.StatusFound ||
		resp.StatusCode == http.StatusPermanentRedirect || resp.StatusCode == http.StatusSeeOther:
		loc, err := resp.Location()
		if err == nil && loc.Host == "" {
			err = errors.New("no host")
		}
		if err != nil {
			return "", &AdminError{Cluster: a.cluster, Op: op, Target: broker, Status: resp.StatusCode, Err: fmt.Errorf("redirect without a usable Location: %w", err)}
		}
		return loc.Scheme + "://" + loc.Host, nil
	}
	return "", &AdminError{Cluster: a.cluster, Op: op, Target: broker, Status: resp.StatusCode, Err: errors.New(resp.Status)}
}

// OwnedBundles lists the bundles broker owns ("tenant/ns/0xLO_0xHI" -> active), from the
// broker's ownership cache (GET /admin/v2/brokers/{cluster}/{broker}/ownedNamespaces). It
// does not make any broker take a bundle.
func (a *Admin) OwnedBundles(ctx context.Context, cluster, broker string) (map[string]bool, error) {
	const op = "list the bundles owned by broker"
	cctx, cancel := a.withTimeout(ctx)
	defer cancel()
	m, err := a.client.Brokers().GetOwnedNamespacesWithContext(cctx, cluster, broker)
	if err != nil {
		return nil, a.wrap(ctx, op, broker, err)
	}
	out := make(map[string]bool, len(m))
	for bundle, st := range m {
		out[bundle] = st.IsActive
	}
	return out, nil
}

// SetTimeout changes the per-call timeout (0 or less: no timeout beyond the caller's ctx).
func (a *Admin) SetTimeout(d time.Duration) { a.timeout = d }

// Cluster is the cluster name errors are labelled with.
func (a *Admin) Cluster() string { return a.cluster }

// Client exposes the underlying pulsaradmin client for calls this wrapper does not cover.
func (a *Admin) Client() pulsaradmin.Client { return a.client }

func (a *Admin) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if a.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, a.timeout)
}

func (a *Admin) topicName(op, topic string) (*utils.TopicName, error) {
	tn, err := utils.GetTopicName(topic)
	if err != nil {
		return nil, &AdminError{Cluster: a.cluster, Op: op, Target: topic, Status: http.StatusBadRequest, Err: err}
	}
	return tn, nil
}

func (a *Admin) nsName(op, ns string) (*utils.NameSpaceName, error) {
	n, err := utils.GetNamespaceName(ns)
	if err != nil {
		return nil, &AdminError{Cluster: a.cluster, Op: op, Target: ns, Status: http.StatusBadRequest, Err: err}
	}
	return n, nil
}

// OffsetsTopicPartitions is the partition count of <tenant>/<namespace>/__consumer_offsets;
// ErrNotFound when the topic is not a partitioned topic there.
func (a *Admin) OffsetsTopicPartitions(ctx context.Context, tenant, namespace string) (int32, error) {
	return a.partitions(ctx, OffsetsTopic(tenant, namespace), true)
}

// PartitionedTopicPartitions is the partition count of topic from its partitioned-topic
// metadata: 0 for a non-partitioned topic. Pulsar 4.0 answers 404 (ErrNotFound) for an
// absent topic or namespace; brokers that allow topic auto-creation may answer 0 instead, so
// use TopicExists to test existence.
func (a *Admin) PartitionedTopicPartitions(ctx context.Context, topic string) (int32, error) {
	return a.partitions(ctx, topic, false)
}

func (a *Admin) partitions(ctx context.Context, topic string, mustBePartitioned bool) (int32, error) {
	const op = "get partitioned metadata of"
	tn, err := a.topicName(op, topic)
	if err != nil {
		return 0, err
	}
	cctx, cancel := a.withTimeout(ctx)
	defer cancel()
	md, err := a.client.Topics().GetMetadataWithContext(cctx, *tn)
	if err != nil {
		return 0, a.wrap(ctx, op, tn.String(), err)
	}
	if mustBePartitioned && md.Partitions <= 0 {
		return 0, &AdminError{Cluster: a.cluster, Op: op, Target: tn.String(), Status: http.StatusNotFound,
			Err: rest.Error{Code: http.StatusNotFound, Reason: "not a partitioned topic"}}
	}
	return int32(md.Partitions), nil
}

// TopicExists reports whether topic exists as a partitioned topic, a partition of one, or a
// non-partitioned topic. A missing namespace is (false, nil).
func (a *Admin) TopicExists(ctx context.Context, topic string) (bool, error) {
	const op = "list topics for"
	tn, err := a.topicName(op, topic)
	if err != nil {
		return false, err
	}
	ns := tn.GetTenant() + "/" + tn.GetNamespace()
	// Listing is the reliable test: partitioned metadata answers 404 for an absent topic on
	// Pulsar 4.0 but 0 partitions on brokers that allow auto-creation. Plain net/http:
	// pulsaradmin's Topics().List queries both domains and leaks goroutines on error.
	name := tn.String()
	for _, suffix := range []string{"/partitioned", ""} {
		var topics []string
		body, err := a.get(ctx, "/admin/v2/"+string(tn.GetDomain())+"/"+escapePath(ns)+suffix)
		if err == nil {
			err = json.Unmarshal(body, &topics)
		}
		if err != nil {
			err = a.wrap(ctx, op, ns, err)
			if isStatus(err, http.StatusNotFound) {
				return false, nil
			}
			return false, err
		}
		if slices.Contains(topics, name) {
			return true, nil
		}
	}
	return false, nil
}

func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

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
	cctx, cancel := a.withTimeout(ctx)
	defer cancel()
	r, err := a.client.Topics().GetBundleRangeWithContext(cctx, *tn)
	if err != nil {
		return Bundle{}, a.wrap(ctx, op, tn.String(), err)
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
	const op = "look up"
	tn, err := a.topicName(op, topic)
	if err != nil {
		return Owner{}, err
	}
	cctx, cancel := a.withTimeout(ctx)
	defer cancel()
	d, err := a.client.Topics().LookupWithContext(cctx, *tn)
	if err != nil {
		return Owner{}, a.wrap(ctx, op, tn.String(), err)
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
	cctx, cancel := a.withTimeout(ctx)
	defer cancel()
	err := a.client.Namespaces().UnloadNamespaceBundleWithContext(cctx, namespace, bundleRange)
	return a.wrap(ctx, op, namespace+"/"+bundleRange, err)
}

// UnloadTopic unloads one topic (WRITE). On Pulsar 3.0+ KoP drops that partition's groups
// but does not load them again until the bundle is loaded again (domain.md): not a reload.
func (a *Admin) UnloadTopic(ctx context.Context, topic string) error {
	const op = "unload topic"
	tn, err := a.topicName(op, topic)
	if err != nil {
		return err
	}
	cctx, cancel := a.withTimeout(ctx)
	defer cancel()
	return a.wrap(ctx, op, tn.String(), a.client.Topics().UnloadWithContext(cctx, *tn))
}

// Replication is the state of the replicator of one topic towards one remote cluster.
type Replication struct {
	Connected                 bool
	ReplicationBacklog        int64
	ReplicationDelayInSeconds int64
	MsgRateIn                 float64
	MsgRateOut                float64
	MsgThroughputOut          float64
	MsgRateExpired            float64
	InboundConnection         string
	OutboundConnection        string
	OutboundConnectedSince    string
}

// ReplicationStats returns the replicators of topic (a non-partitioned topic or one
// partition) keyed by remote cluster name, from its topic stats. A topic without
// replication gives an empty map.
func (a *Admin) ReplicationStats(ctx context.Context, topic string) (map[string]Replication, error) {
	st, err := a.topicStats(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Replication, len(st.Replication))
	for remote, r := range st.Replication {
		out[remote] = Replication{
			Connected:                 r.Connected,
			ReplicationBacklog:        r.ReplicationBacklog,
			ReplicationDelayInSeconds: r.ReplicationDelayInSeconds,
			MsgRateIn:                 r.MsgRateIn,
			MsgRateOut:                r.MsgRateOut,
			MsgThroughputOut:          r.MsgThroughputOut,
			MsgRateExpired:            r.MsgRateExpired,
			InboundConnection:         r.InboundConnection,
			OutboundConnection:        r.OutboundConnection,
			OutboundConnectedSince:    r.OutboundConnectedSince,
		}
	}
	return out, nil
}

// CursorMarkDelete returns the mark-delete position of subscription on topic from the
// topic's internal stats (non-durable cursors are listed too while they are open).
func (a *Admin) CursorMarkDelete(ctx context.Context, topic, subscription string) (ledger, entry int64, ok bool, err error) {
	const op = "get internal stats of"
	tn, err := a.topicName(op, topic)
	if err != nil {
		return 0, 0, false, err
	}
	cctx, cancel := a.withTimeout(ctx)
	defer cancel()
	st, err := a.client.Topics().GetInternalStatsWithContext(cctx, *tn)
	if err != nil {
		return 0, 0, false, a.wrap(ctx, op, tn.String(), err)
	}
	c, found := st.Cursors[subscription]
	if !found {
		return 0, 0, false, nil
	}
	if _, err := fmt.Sscanf(c.MarkDeletePosition, "%d:%d", &ledger, &entry); err != nil {
		return 0, 0, false, &AdminError{Cluster: a.cluster, Op: op, Target: tn.String(), Status: http.StatusInternalServerError,
			Err: fmt.Errorf("cursor %s: mark-delete position %q: %w", subscription, c.MarkDeletePosition, err)}
	}
	return ledger, entry, true, nil
}

// NamespaceReplicationClusters lists the replication clusters of namespace ("tenant/ns").
func (a *Admin) NamespaceReplicationClusters(ctx context.Context, namespace string) ([]string, error) {
	const op = "get replication clusters of"
	cctx, cancel := a.withTimeout(ctx)
	defer cancel()
	cl, err := a.client.Namespaces().GetNamespaceReplicationClustersWithContext(cctx, namespace)
	if err != nil {
		return nil, a.wrap(ctx, op, namespace, err)
	}
	slices.Sort(cl)
	return cl, nil
}

// TenantAllowedClusters lists the clusters tenant may use.
func (a *Admin) TenantAllowedClusters(ctx context.Context, tenant string) ([]string, error) {
	const op = "get tenant"
	cctx, cancel := a.withTimeout(ctx)
	defer cancel()
	t, err := a.client.Tenants().GetWithContext(cctx, tenant)
	if err != nil {
		return nil, a.wrap(ctx, op, tenant, err)
	}
	cl := slices.Clone(t.AllowedClusters)
	slices.Sort(cl)
	return cl, nil
}

// Clusters lists the clusters this cluster knows (its own and the remote ones).
func (a *Admin) Clusters(ctx context.Context) ([]string, error) {
	const op = "list clusters"
	cctx, cancel := a.withTimeout(ctx)
	defer cancel()
	cl, err := a.client.Clusters().ListWithContext(cctx)
	if err != nil {
		return nil, a.wrap(ctx, op, "", err)
	}
	slices.Sort(cl)
	return cl, nil
}

// BrokerVersion is the Pulsar version of the broker behind the admin URL, e.g. "4.0.8".
func (a *Admin) BrokerVersion(ctx context.Context) (string, error) {
	const op = "get broker version"
	// pulsaradmin has no call for GET /admin/v2/brokers/version: plain net/http with the
	// same auth/TLS transport. The broker answers the bare text 4.0.8, labelled JSON.
	body, err := a.get(ctx, "/admin/v2/brokers/version")
	if err != nil {
		return "", a.wrap(ctx, op, "", err)
	}
	return strings.Trim(strings.TrimSpace(string(body)), `"`), nil
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
	cctx, cancel := a.withTimeout(ctx)
	defer cancel()
	p, err := a.client.Namespaces().GetPoliciesWithContext(cctx, namespace)
	if err != nil {
		return nil, a.wrap(ctx, op, namespace, err)
	}
	return p, nil
}

// get is a GET on the admin API for the calls pulsaradmin lacks. Non-2xx answers become
// rest.Error so that wrap classifies them like pulsaradmin's.
func (a *Admin) get(ctx context.Context, path string) ([]byte, error) {
	cctx, cancel := a.withTimeout(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, a.baseURL+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := a.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		re := rest.Error{Code: resp.StatusCode, Reason: resp.Status}
		if r := jsonReason(body); r != "" {
			re.Reason = r
		} else if b := strings.TrimSpace(string(body)); b != "" {
			re.Reason = b // as pulsaradmin does for non-JSON bodies
		}
		return nil, re
	}
	return body, nil
}

// isStatus reports whether err is (or wraps) an *AdminError with the given HTTP status.
func isStatus(err error, code int) bool {
	var ae *AdminError
	return errors.As(err, &ae) && ae.Status == code
}

// topicStats reads the stats of a non-partitioned topic or one partition.
func (a *Admin) topicStats(ctx context.Context, topic string) (utils.TopicStats, error) {
	const op = "get stats of"
	tn, err := a.topicName(op, topic)
	if err != nil {
		return utils.TopicStats{}, err
	}
	cctx, cancel := a.withTimeout(ctx)
	defer cancel()
	st, err := a.client.Topics().GetStatsWithContext(cctx, *tn)
	if err != nil {
		return utils.TopicStats{}, a.wrap(ctx, op, tn.String(), err)
	}
	return st, nil
}

// ClusterName is the broker's own cluster name (clusterName in its runtime configuration,
// GET /admin/v2/brokers/configuration/runtime; reading it needs super-user rights): the name
// other clusters' replicators and replication-cluster lists use for this cluster.
func (a *Admin) ClusterName(ctx context.Context) (string, error) {
	ctx, cancel := a.withTimeout(ctx)
	defer cancel()
	m, err := a.client.Brokers().GetRuntimeConfigurationsWithContext(ctx)
	if err != nil {
		return "", fmt.Errorf("cluster %s: get runtime configuration: %w", a.cluster, err)
	}
	return m["clusterName"], nil
}
