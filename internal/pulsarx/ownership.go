package pulsarx

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// BundleOwner is the broker that owns a bundle, from the brokers' own ownership lists.
type BundleOwner struct {
	Broker string // broker id as the admin API lists it ("host:port" of its web service)
	Active bool   // the broker reports the ownership as active (not being unloaded)
}

// BrokerError is one broker whose ownership list could not be read.
type BrokerError struct {
	Broker string
	Err    error
}

// UnknownOwnerError is Owner's answer when no broker that answered owns the bundle but some
// brokers did not answer: one of them may own it.
type UnknownOwnerError struct {
	Cluster string
	Bundle  string
	Failed  []BrokerError // sorted by broker
}

func (e *UnknownOwnerError) Error() string {
	parts := make([]string, len(e.Failed))
	for i, f := range e.Failed {
		parts[i] = fmt.Sprintf("broker %s: %s", f.Broker, trimPrefix(f.Err.Error(), "cluster "+e.Cluster+": "))
	}
	return fmt.Sprintf("cluster %s: owner of %s unknown: no broker that answered owns it, and %d broker(s) did not list their bundles (%s)",
		e.Cluster, e.Bundle, len(e.Failed), strings.Join(parts, "; "))
}

// Unwrap returns the brokers' errors.
func (e *UnknownOwnerError) Unwrap() []error {
	out := make([]error, len(e.Failed))
	for i, f := range e.Failed {
		out[i] = f.Err
	}
	return out
}

func trimPrefix(s, p string) string {
	for strings.HasPrefix(s, p) {
		s = strings.TrimPrefix(s, p)
	}
	return s
}

// Owners answers bundle ownership of one cluster read-only, caching the brokers' lists.
//
// It never looks a topic up: a lookup (GET /lookup/v2/topic/..., and every admin call on a
// topic, such as its stats) makes a broker take the bundle when nobody owns it, and for KoP
// that loads every offsets partition of the bundle. Instead it lists the active brokers
// (GET /admin/v2/brokers/{cluster}) and the bundles each one owns
// (GET /admin/v2/brokers/{cluster}/{broker}/ownedNamespaces, which Pulsar 4.0.8 answers from
// the broker's ownership cache). Both need super-user permission.
//
// One broker that cannot list its bundles does not fail the others: a bundle one of the
// answering brokers owns is answered; only a bundle no answering broker owns is unknown
// (*UnknownOwnerError, naming the brokers that failed), because one of those may own it.
type Owners struct {
	admin   BrokerLister
	name    string // the configured cluster name, for errors
	cluster string // the Pulsar cluster name, resolved on first use
	owned   map[string]BundleOwner
	failed  []BrokerError
	loaded  bool
}

// BrokerLister is what Owners asks a cluster's admin API; *Admin implements it.
type BrokerLister interface {
	Clusters(ctx context.Context) ([]string, error)
	ActiveBrokers(ctx context.Context, cluster string) ([]string, error)
	OwnedBundles(ctx context.Context, cluster, broker string) (map[string]bool, error)
}

var _ BrokerLister = (*Admin)(nil)

// NewOwners answers ownership through admin. name is the configured cluster name; it is
// used as the Pulsar cluster name when the cluster knows it (with authorization off any name
// is accepted).
func NewOwners(admin BrokerLister, name string) *Owners {
	return &Owners{admin: admin, name: name, cluster: name}
}

func (o *Owners) load(ctx context.Context) error {
	if o.loaded {
		return nil
	}
	names, err := o.admin.Clusters(ctx)
	if err != nil {
		return fmt.Errorf("cluster %s: list clusters: %w", o.name, err)
	}
	if !slices.Contains(names, o.cluster) && len(names) == 1 {
		o.cluster = names[0]
	}
	brokers, err := o.admin.ActiveBrokers(ctx, o.cluster)
	if err != nil {
		return fmt.Errorf("cluster %s: list active brokers: %w", o.name, err)
	}
	owned := map[string]BundleOwner{}
	var failed []BrokerError
	lists := make([]map[string]bool, len(brokers))
	errs := make([]error, len(brokers))
	var wg sync.WaitGroup
	for i, b := range brokers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lists[i], errs[i] = o.admin.OwnedBundles(ctx, o.cluster, b)
		}()
	}
	wg.Wait()
	for i, b := range brokers {
		if errs[i] != nil {
			failed = append(failed, BrokerError{Broker: b, Err: errs[i]})
			continue
		}
		for bundle, active := range lists[i] {
			owned[bundle] = BundleOwner{Broker: b, Active: active}
		}
	}
	if len(brokers) > 0 && len(failed) == len(brokers) {
		return fmt.Errorf("cluster %s: no broker listed its bundles: %w", o.name, errors.Join((&UnknownOwnerError{Failed: failed}).Unwrap()...))
	}
	o.owned, o.failed, o.loaded = owned, failed, true
	return nil
}

// Owner returns the owner of bundle bundleRange of namespace ("tenant/ns"); ok is false
// when no broker owns it now (the next lookup or client connection will assign it). When
// some brokers did not list their bundles and none of the others owns it, the error is an
// *UnknownOwnerError.
func (o *Owners) Owner(ctx context.Context, namespace, bundleRange string) (BundleOwner, bool, error) {
	if err := o.load(ctx); err != nil {
		return BundleOwner{}, false, err
	}
	b, ok := o.owned[namespace+"/"+bundleRange]
	if !ok && len(o.failed) > 0 {
		return BundleOwner{}, false, &UnknownOwnerError{Cluster: o.name, Bundle: namespace + "/" + bundleRange, Failed: o.failed}
	}
	return b, ok, nil
}

// FailedBrokers lists the brokers whose ownership lists could not be read (after the first
// Owner call), sorted by broker.
func (o *Owners) FailedBrokers() []BrokerError { return slices.Clone(o.failed) }
