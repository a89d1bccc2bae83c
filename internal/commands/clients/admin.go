// Package clients dials one cluster for a command: the admin client over the project's one
// transport, the check of the cluster's Pulsar name, the reader of the offsets topic as KoP's
// loader reads it, and the data copies read through KoP.
package clients

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/connect"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// NewAdmin returns the admin client of cl with a per-call timeout, over the project's one
// admin transport (connect.AdminTransport: auth, TLS, timeouts). Secrets are resolved now;
// configuration errors are *config.Error (exit 2).
func NewAdmin(cl config.Cluster, timeout time.Duration) (*pulsarx.Admin, error) {
	rt, err := connect.AdminTransport(cl, connect.Options{RequestTimeout: timeout})
	if err != nil {
		return nil, err
	}
	a, err := pulsarx.NewAdminWithTransport(cl.Name, cl.AdminURL, rt)
	if err != nil {
		return nil, &config.Error{Cluster: cl.Name, Field: "pulsarAuth", Err: err}
	}
	if timeout > 0 {
		a.SetTimeout(timeout)
	}
	return a, nil
}

// ClusterNamer reads a cluster's own name from its brokers (*pulsarx.Admin).
type ClusterNamer interface {
	ClusterName(ctx context.Context) (string, error)
}

var _ ClusterNamer = (*pulsarx.Admin)(nil)

// CheckPulsarName refuses cl when its brokers call the cluster by another name than the
// config says (cl.PulsarName(): pulsarCluster, else name). Replication stats are keyed by
// Pulsar's names, so a wrong name would make replication lag look like divergence and
// silence watch's backlog guard. The error (a *config.Error, exit 2) names both names and
// the fix. When the name cannot be read (the runtime configuration needs super-user
// rights; the admin API may be down) nothing is refused: the config's name is used as given.
func CheckPulsarName(ctx context.Context, a ClusterNamer, cl config.Cluster, path string) error {
	got, err := a.ClusterName(ctx)
	if err != nil && (ctx.Err() != nil || pulsarx.TimedOut(err)) {
		// No answer within the timeout: the caller marks the cluster down (NoAnswer) so that
		// nothing waits on it again. The call's own timeout is the same --timeout as ctx's and
		// may fire a moment before it, so a timed-out error counts even while ctx is live.
		return &NoAnswer{Cluster: cl.Name, Err: err}
	}
	if err != nil || got == "" || got == cl.PulsarName() {
		return nil
	}
	msg := fmt.Sprintf("Pulsar calls this cluster %q (the brokers' clusterName) but the config expects %q", got, cl.PulsarName())
	if cl.PulsarCluster == "" {
		msg += fmt.Sprintf(": add `pulsarCluster: %s` to cluster %q (replication stats are keyed by Pulsar's names; with the wrong one, replication lag reads as diverged)", got, cl.Name)
	} else {
		msg += fmt.Sprintf(": set `pulsarCluster: %s` on cluster %q, or point its adminURL at the right cluster", got, cl.Name)
	}
	return &config.Error{Path: path, Cluster: cl.Name, Field: "pulsarCluster", Msg: msg}
}

// NoAnswer is a cluster whose admin API did not answer within the request timeout.
type NoAnswer struct {
	Cluster string
	Err     error
}

func (e *NoAnswer) Error() string {
	return fmt.Sprintf("cluster %s did not answer its admin API within the request timeout: %v", e.Cluster, e.Err)
}

func (e *NoAnswer) Unwrap() error { return e.Err }

// ReplicationNames checks cl's Pulsar name (CheckPulsarName, within timeout when > 0) and
// returns the Pulsar-name-to-config-name map of every cluster of cfg (config.PulsarNames),
// with which replication stats are translated. An ad-hoc config (one cluster from
// --admin-url and its peers, no file) is not checked: it has no other cluster to replicate to.
func ReplicationNames(a ClusterNamer, cl config.Cluster, cfg *config.Config, timeout time.Duration) (map[string]string, error) {
	if cfg == nil || cfg.Path == "" {
		return nil, nil
	}
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if err := CheckPulsarName(ctx, a, cl, cfg.Path); err != nil {
		return nil, err
	}
	return config.PulsarNames(cfg.Clusters), nil
}

// LoaderReader reads cl's offsets topic as KoP's loader does (pulsarx.LoaderView), naming
// the origins of replicated commits by config names (names: Pulsar name -> config name, from
// ReplicationNames), like everything else kop-offsets reports.
func LoaderReader(cl config.Cluster, pc pulsarx.ReaderClient, admin pulsarx.PartitionCounter, names map[string]string) *pulsarx.Reader {
	ro := pulsarx.LoaderView
	ro.ClusterNames = names
	if cl.ServiceURL != "" {
		pc = &dialFirst{ReaderClient: pc, serviceURL: cl.ServiceURL}
	}
	return pulsarx.NewReader(cl.Name, pc, admin, cl.Tenant, cl.MetadataNamespace, ro)
}

// dialFirst dials serviceURL before the first reader is created, until one dial succeeds:
// pulsar-client-go retries a refused port for its whole operation timeout and then reports a
// timeout, so a refused port would read as a hung one.
type dialFirst struct {
	pulsarx.ReaderClient
	serviceURL string
	ok         atomic.Bool
}

func (d *dialFirst) CreateReader(o pulsar.ReaderOptions) (pulsar.Reader, error) {
	if !d.ok.Load() {
		ctx, cancel := context.WithTimeout(context.Background(), connect.DefaultDialTimeout)
		defer cancel()
		if err := connect.DialService(ctx, d.serviceURL, connect.DefaultDialTimeout); err != nil {
			return nil, err
		}
		d.ok.Store(true)
	}
	return d.ReaderClient.CreateReader(o)
}
