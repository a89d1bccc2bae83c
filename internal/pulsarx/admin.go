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

// call runs fn within the Admin's timeout and wraps its error as an *AdminError of op on
// target (a cancellation by the caller is returned unchanged, see wrap).
func call[T any](ctx context.Context, a *Admin, op, target string, fn func(context.Context) (T, error)) (T, error) {
	cctx, cancel := a.withTimeout(ctx)
	defer cancel()
	v, err := fn(cctx)
	if err != nil {
		var zero T
		return zero, a.wrap(ctx, op, target, err)
	}
	return v, nil
}

// do is call for a call that answers nothing but its error.
func (a *Admin) do(ctx context.Context, op, target string, fn func(context.Context) error) error {
	cctx, cancel := a.withTimeout(ctx)
	defer cancel()
	return a.wrap(ctx, op, target, fn(cctx))
}

// sortedList is call for a call that lists names: the list comes back sorted.
func sortedList(ctx context.Context, a *Admin, op, target string, fn func(context.Context) ([]string, error)) ([]string, error) {
	l, err := call(ctx, a, op, target, fn)
	if err != nil {
		return nil, err
	}
	slices.Sort(l)
	return l, nil
}

// onTopic is call for a call about one topic: topic is parsed first (a name that does not
// parse is a 400 of op), and errors name the topic in full.
func onTopic[T any](ctx context.Context, a *Admin, op, topic string, fn func(context.Context, utils.TopicName) (T, error)) (T, error) {
	tn, err := a.topicName(op, topic)
	if err != nil {
		var zero T
		return zero, err
	}
	return call(ctx, a, op, tn.String(), func(cctx context.Context) (T, error) { return fn(cctx, *tn) })
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
	md, err := call(ctx, a, op, tn.String(), func(cctx context.Context) (utils.PartitionedTopicMetadata, error) {
		return a.client.Topics().GetMetadataWithContext(cctx, *tn)
	})
	if err != nil {
		return 0, err
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
	st, target, err := a.internalStats(ctx, topic)
	if err != nil {
		return 0, 0, false, err
	}
	c, found := st.Cursors[subscription]
	if !found {
		return 0, 0, false, nil
	}
	if _, err := fmt.Sscanf(c.MarkDeletePosition, "%d:%d", &ledger, &entry); err != nil {
		return 0, 0, false, &AdminError{Cluster: a.cluster, Op: opInternalStats, Target: target, Status: http.StatusInternalServerError,
			Err: fmt.Errorf("cursor %s: mark-delete position %q: %w", subscription, c.MarkDeletePosition, err)}
	}
	return ledger, entry, true, nil
}

// ViewHorizon implements HorizonProber from the topic's internal stats: its first ledger
// (trimming moves it) and its compacted ledger (each compaction writes a new one).
func (a *Admin) ViewHorizon(ctx context.Context, topic string) (string, error) {
	st, _, err := a.internalStats(ctx, topic)
	if err != nil {
		return "", err
	}
	first := int64(-1)
	if len(st.Ledgers) > 0 {
		first = st.Ledgers[0].LedgerID
	}
	return fmt.Sprintf("first ledger %d, compacted ledger %d", first, st.CompactedLedger.LedgerID), nil
}

const opInternalStats = "get internal stats of"

func (a *Admin) internalStats(ctx context.Context, topic string) (utils.PersistentTopicInternalStats, string, error) {
	tn, err := a.topicName(opInternalStats, topic)
	if err != nil {
		return utils.PersistentTopicInternalStats{}, "", err
	}
	st, err := call(ctx, a, opInternalStats, tn.String(), func(cctx context.Context) (utils.PersistentTopicInternalStats, error) {
		return a.client.Topics().GetInternalStatsWithContext(cctx, *tn)
	})
	return st, tn.String(), err
}

var _ HorizonProber = (*Admin)(nil)

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
	return onTopic(ctx, a, "get stats of", topic, a.client.Topics().GetStatsWithContext)
}
