package pulsarx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// ActiveBrokers lists the active brokers of cluster (its Pulsar name) by broker id, the
// "host:port" of each broker's web service (GET /admin/v2/brokers/{cluster}), sorted.
func (a *Admin) ActiveBrokers(ctx context.Context, cluster string) ([]string, error) {
	return sortedList(ctx, a, "list active brokers of", cluster, func(cctx context.Context) ([]string, error) {
		return a.client.Brokers().GetActiveBrokersWithContext(cctx, cluster)
	})
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
	m, err := call(ctx, a, "list the bundles owned by broker", broker, func(cctx context.Context) (map[string]utils.NamespaceOwnershipStatus, error) {
		return a.client.Brokers().GetOwnedNamespacesWithContext(cctx, cluster, broker)
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(m))
	for bundle, st := range m {
		out[bundle] = st.IsActive
	}
	return out, nil
}

// Clusters lists the clusters this cluster knows (its own and the remote ones).
func (a *Admin) Clusters(ctx context.Context) ([]string, error) {
	return sortedList(ctx, a, "list clusters", "", a.client.Clusters().ListWithContext)
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
