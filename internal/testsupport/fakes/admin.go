package fakes

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/rest"

	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// Admin is one cluster's Pulsar admin API in memory. It implements reload.BundleAdmin and,
// but for TopicActivity (a doctor type, added by doctor's tests), doctor.Admin. Fields are
// set before use; NewAdmin answers as a healthy lab cluster's metadata namespace would.
// Every call is recorded (Calls) and guarded by one mutex.
type Admin struct {
	Name string // the cluster, named in errors
	// Down fails every call as an unreachable admin URL, with DownErr when set.
	Down    bool
	DownErr error

	// OffsetsPartitions of the offsets topic; 0: it does not exist (not found).
	OffsetsPartitions int32
	PartitionsErr     error
	// BundleList is the metadata namespace's bundles (all owned by a broker at first).
	BundleList []pulsarx.Bundle
	BundlesErr error
	UnloadErr  map[string]error // by bundle range
	LookupErr  map[string]error // by topic
	// OnUnload and OnLookup run after a successful unload or lookup (KoP's reaction).
	OnUnload func(bundleRange string)
	OnLookup func(topic string)
	// LookupBroker names the broker a lookup of topic answers (the bundle's owner, which
	// may change with every unload); nil: always broker-1.
	LookupBroker func(topic string) string

	Version      string
	Runtime      map[string]string
	ClusterNames []string
	// PerBroker is each active broker of the cluster by id ("host:port"), answering its own
	// Version and Runtime (Down: its address does not answer); nil: the cluster lists no
	// brokers.
	PerBroker map[string]*Admin
	// NamespaceRepl holds the replication clusters by namespace; absent: not found.
	NamespaceRepl    map[string][]string
	NamespaceReplErr error
	Policies         map[string]pulsarx.NamespacePolicy // absent: not found
	Tenants          map[string][]string                // allowed clusters; absent: not found
	Topics           map[string]int32                   // full name -> partitions (0: non-partitioned)
	Repl             map[string]map[string]pulsarx.Replication
	StatsErr         error
	ReplCalls        int // ReplicationStats calls

	mu    sync.Mutex
	owned map[string]bool
	calls []string
}

// LabBoundaries are the bundle boundaries of the lab's metadata namespace: 4 bundles.
var LabBoundaries = []string{"0x00000000", "0x40000000", "0x80000000", "0xc0000000", "0xffffffff"}

// NewAdmin returns the admin of cluster name with the lab's offsets layout: 8 offsets
// partitions in 4 bundles, every bundle owned.
func NewAdmin(name string) *Admin {
	b, err := pulsarx.BundlesFromBoundaries(LabBoundaries)
	if err != nil {
		panic(err)
	}
	return &Admin{Name: name, OffsetsPartitions: 8, BundleList: b, UnloadErr: map[string]error{}, LookupErr: map[string]error{}}
}

// NotFound is the error pulsarx returns for a missing target.
func NotFound(cluster, target string) error {
	return &pulsarx.AdminError{Cluster: cluster, Op: "get", Target: target, Status: http.StatusNotFound,
		Err: rest.Error{Code: http.StatusNotFound, Reason: "Tenant, namespace or topic not found: " + target}} // as Pulsar names it
}

// Call records a call and fails it as the HTTP client would: on a done ctx (the call is
// still recorded, as a request sent without its answer) or a Down admin. A test that adds
// a method (one whose types the fake cannot name) calls it first.
func (f *Admin) Call(ctx context.Context, s string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
	if err := ctx.Err(); err != nil {
		return &pulsarx.AdminError{Cluster: f.Name, Op: "call", Err: err}
	}
	if f.Down && f.DownErr != nil {
		return f.DownErr
	}
	if f.Down {
		return &pulsarx.AdminError{Cluster: f.Name, Op: "call", Err: errors.New("dial tcp: connection refused")}
	}
	return nil
}

// Calls returns the calls so far: "partitions <tenant>/<ns>", "bundles <ns>", "unload
// <ns>/<range>", "lookup <topic>", and the name of each read method for the others.
func (f *Admin) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// Writes returns the calls that change or trigger bundle ownership: unloads and lookups.
func (f *Admin) Writes() []string {
	return slices.DeleteFunc(f.Calls(), func(c string) bool {
		return !strings.HasPrefix(c, "unload ") && !strings.HasPrefix(c, "lookup ")
	})
}

// Owned reports whether a broker owns the bundle of range r: every bundle at first, none
// after its unload until a topic of it is looked up.
func (f *Admin) Owned(r string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.owned[r]
	return !ok || v
}

func (f *Admin) setOwned(r string, v bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.owned == nil {
		f.owned = map[string]bool{}
	}
	f.owned[r] = v
}

// OffsetsTopicPartitions implements reload.BundleAdmin and doctor.Admin.
func (f *Admin) OffsetsTopicPartitions(ctx context.Context, tenant, ns string) (int32, error) {
	if err := f.Call(ctx, "partitions "+tenant+"/"+ns); err != nil {
		return 0, err
	}
	if f.PartitionsErr != nil {
		return 0, f.PartitionsErr
	}
	if f.OffsetsPartitions == 0 {
		return 0, NotFound(f.Name, tenant+"/"+ns)
	}
	return f.OffsetsPartitions, nil
}

// Bundles implements reload.BundleAdmin.
func (f *Admin) Bundles(ctx context.Context, ns string) ([]pulsarx.Bundle, error) {
	if err := f.Call(ctx, "bundles "+ns); err != nil {
		return nil, err
	}
	return f.BundleList, f.BundlesErr
}

// UnloadBundle implements reload.BundleAdmin.
func (f *Admin) UnloadBundle(ctx context.Context, ns, r string) error {
	if err := f.Call(ctx, "unload "+ns+"/"+r); err != nil {
		return err
	}
	if err := f.UnloadErr[r]; err != nil {
		return err
	}
	if !f.hasBundle(r) {
		// Pulsar's answer for a range that is not one of the namespace's bundles (one split
		// since it was read): 412 "Bundle is not part of the namespace bundles".
		return &pulsarx.AdminError{Cluster: f.Name, Op: "unload bundle", Target: ns + "/" + r, Status: http.StatusPreconditionFailed,
			Err: errors.New("bundle is not part of the namespace bundles")}
	}
	f.setOwned(r, false)
	if f.OnUnload != nil {
		f.OnUnload(r)
	}
	return nil
}

func (f *Admin) hasBundle(r string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.ContainsFunc(f.BundleList, func(b pulsarx.Bundle) bool { return b.Range == r })
}

// Split splits the bundle of range r in two halves, as pulsar-admin namespaces split-bundle
// does with its default range_equally_divide, and returns the two new ranges. The broker
// that owned r owns both (no unload: split-bundle without --unload).
func (f *Admin) Split(r string) (lo, hi string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.IndexFunc(f.BundleList, func(b pulsarx.Bundle) bool { return b.Range == r })
	if i < 0 {
		return "", "", NotFound(f.Name, "bundle "+r)
	}
	b := f.BundleList[i]
	mid := b.Lo + (b.Hi-b.Lo)/2
	halves := []pulsarx.Bundle{{Range: pulsarx.FormatBundleRange(b.Lo, mid), Lo: b.Lo, Hi: mid}, {Range: pulsarx.FormatBundleRange(mid, b.Hi), Lo: mid, Hi: b.Hi}}
	f.BundleList = slices.Concat(f.BundleList[:i], halves, f.BundleList[i+1:])
	return halves[0].Range, halves[1].Range, nil
}

// LookupOwner implements reload.BundleAdmin: a broker takes the topic's bundle.
func (f *Admin) LookupOwner(ctx context.Context, topic string) (pulsarx.Owner, error) {
	if err := f.Call(ctx, "lookup "+topic); err != nil {
		return pulsarx.Owner{}, err
	}
	if err := f.LookupErr[topic]; err != nil {
		return pulsarx.Owner{}, err
	}
	b, err := pulsarx.FindBundle(f.BundleList, topic)
	if err != nil {
		return pulsarx.Owner{}, err
	}
	f.setOwned(b.Range, true)
	if f.OnLookup != nil {
		f.OnLookup(topic)
	}
	broker := "broker-1"
	if f.LookupBroker != nil {
		broker = f.LookupBroker(topic)
	}
	return pulsarx.Owner{BrokerURL: "pulsar://" + broker + ":6650", HTTPURL: "http://" + broker + ":8080"}, nil
}

// BrokerVersion implements doctor.Admin.
func (f *Admin) BrokerVersion(ctx context.Context) (string, error) {
	return f.Version, f.Call(ctx, "BrokerVersion")
}

// RuntimeConfig implements doctor.Admin.
func (f *Admin) RuntimeConfig(ctx context.Context) (map[string]string, error) {
	return f.Runtime, f.Call(ctx, "RuntimeConfig")
}

// ActiveBrokers implements doctor.Brokers: the ids of PerBroker, sorted.
func (f *Admin) ActiveBrokers(ctx context.Context, cluster string) ([]string, error) {
	if err := f.Call(ctx, "ActiveBrokers "+cluster); err != nil {
		return nil, err
	}
	if f.PerBroker == nil {
		return nil, nil
	}
	ids := make([]string, 0, len(f.PerBroker))
	for id := range f.PerBroker {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

// BrokerVersionOf implements doctor.Brokers.
func (f *Admin) BrokerVersionOf(ctx context.Context, broker string) (string, error) {
	b, err := f.broker(ctx, broker)
	if err != nil {
		return "", err
	}
	return b.BrokerVersion(ctx)
}

// RuntimeConfigOf implements doctor.Brokers.
func (f *Admin) RuntimeConfigOf(ctx context.Context, broker string) (map[string]string, error) {
	b, err := f.broker(ctx, broker)
	if err != nil {
		return nil, err
	}
	return b.RuntimeConfig(ctx)
}

func (f *Admin) broker(ctx context.Context, id string) (*Admin, error) {
	f.mu.Lock()
	b := f.PerBroker[id]
	f.mu.Unlock()
	if b == nil {
		return nil, NotFound(f.Name, "broker "+id)
	}
	return b, ctx.Err()
}

// Clusters implements doctor.Admin.
func (f *Admin) Clusters(ctx context.Context) ([]string, error) {
	return f.ClusterNames, f.Call(ctx, "Clusters")
}

// PartitionedTopicPartitions implements doctor.Admin.
func (f *Admin) PartitionedTopicPartitions(ctx context.Context, topic string) (int32, error) {
	if err := f.Call(ctx, "PartitionedTopicPartitions "+topic); err != nil {
		return 0, err
	}
	n, ok := f.Topics[topic]
	if !ok {
		return 0, NotFound(f.Name, topic)
	}
	return n, nil
}

// TopicExists implements doctor.Admin.
func (f *Admin) TopicExists(ctx context.Context, topic string) (bool, error) {
	_, ok := f.Topics[topic]
	return ok, f.Call(ctx, "TopicExists "+topic)
}

// ReplicationStats implements doctor.Admin.
func (f *Admin) ReplicationStats(ctx context.Context, topic string) (map[string]pulsarx.Replication, error) {
	err := f.Call(ctx, "ReplicationStats "+topic)
	f.mu.Lock()
	f.ReplCalls++
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if f.StatsErr != nil {
		return nil, f.StatsErr
	}
	return f.Repl[topic], nil
}

// NamespaceReplicationClusters implements doctor.Admin.
func (f *Admin) NamespaceReplicationClusters(ctx context.Context, ns string) ([]string, error) {
	if err := f.Call(ctx, "NamespaceReplicationClusters "+ns); err != nil {
		return nil, err
	}
	if f.NamespaceReplErr != nil {
		return nil, f.NamespaceReplErr
	}
	rc, ok := f.NamespaceRepl[ns]
	if !ok {
		return nil, NotFound(f.Name, ns)
	}
	return slices.Clone(rc), nil
}

// NamespacePolicies implements doctor.Admin.
func (f *Admin) NamespacePolicies(ctx context.Context, ns string) (pulsarx.NamespacePolicy, error) {
	if err := f.Call(ctx, "NamespacePolicies "+ns); err != nil {
		return pulsarx.NamespacePolicy{}, err
	}
	p, ok := f.Policies[ns]
	if !ok {
		return p, NotFound(f.Name, ns)
	}
	return p, nil
}

// TenantAllowedClusters implements doctor.Admin.
func (f *Admin) TenantAllowedClusters(ctx context.Context, t string) ([]string, error) {
	if err := f.Call(ctx, "TenantAllowedClusters "+t); err != nil {
		return nil, err
	}
	a, ok := f.Tenants[t]
	if !ok {
		return nil, NotFound(f.Name, t)
	}
	return a, nil
}
