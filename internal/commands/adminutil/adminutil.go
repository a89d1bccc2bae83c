// Package adminutil builds a pulsarx.Admin for a configured cluster, and answers which
// broker owns a namespace bundle without making any broker take it.
package adminutil

import (
	"context"
	"fmt"
	"slices"
	"time"

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

// BundleOwner is the broker that owns a bundle, from the brokers' own ownership lists.
type BundleOwner struct {
	Broker string // broker id as the admin API lists it ("host:port" of its web service)
	Active bool   // the broker reports the ownership as active (not being unloaded)
}

// Owners answers bundle ownership of one cluster read-only, caching the brokers' lists.
//
// It never looks a topic up: a lookup (GET /lookup/v2/topic/..., and every admin call on a
// topic, such as its stats) makes a broker take the bundle when nobody owns it, and for KoP
// that loads every offsets partition of the bundle. Instead it lists the active brokers
// (GET /admin/v2/brokers/{cluster}) and the bundles each one owns
// (GET /admin/v2/brokers/{cluster}/{broker}/ownedNamespaces, which Pulsar 4.0.8 answers from
// the broker's ownership cache). Both need super-user permission.
type Owners struct {
	admin   *pulsarx.Admin
	cluster string // the Pulsar cluster name, resolved on first use
	owned   map[string]BundleOwner
	loaded  bool
}

// NewOwners answers ownership through admin. name is the configured cluster name; it is
// used as the Pulsar cluster name when the cluster knows it (with authorization off any name
// is accepted).
func NewOwners(admin *pulsarx.Admin, name string) *Owners {
	return &Owners{admin: admin, cluster: name}
}

func (o *Owners) load(ctx context.Context) error {
	if o.loaded {
		return nil
	}
	c := o.admin.Client()
	names, err := c.Clusters().ListWithContext(ctx)
	if err != nil {
		return fmt.Errorf("cluster %s: list clusters: %w", o.admin.Cluster(), err)
	}
	if !slices.Contains(names, o.cluster) && len(names) == 1 {
		o.cluster = names[0]
	}
	brokers, err := c.Brokers().GetActiveBrokersWithContext(ctx, o.cluster)
	if err != nil {
		return fmt.Errorf("cluster %s: list active brokers: %w", o.admin.Cluster(), err)
	}
	owned := map[string]BundleOwner{}
	for _, b := range brokers {
		m, err := c.Brokers().GetOwnedNamespacesWithContext(ctx, o.cluster, b)
		if err != nil {
			return fmt.Errorf("cluster %s: bundles owned by broker %s: %w", o.admin.Cluster(), b, err)
		}
		for bundle, st := range m {
			owned[bundle] = BundleOwner{Broker: b, Active: st.IsActive}
		}
	}
	o.owned, o.loaded = owned, true
	return nil
}

// Owner returns the owner of bundle bundleRange of namespace ("tenant/ns"); ok is false
// when no broker owns it now (the next lookup or client connection will assign it).
func (o *Owners) Owner(ctx context.Context, namespace, bundleRange string) (BundleOwner, bool, error) {
	if err := o.load(ctx); err != nil {
		return BundleOwner{}, false, err
	}
	b, ok := o.owned[namespace+"/"+bundleRange]
	return b, ok, nil
}
