package doctor

import (
	"context"
	"sync"

	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// memoAdmin caches the answers (and errors) of an Admin for one Run, so rules can ask for
// what they need without repeating calls. Replication stats and topic activity are not
// cached: a rule may look twice on purpose.
type memoAdmin struct {
	Admin
	mu sync.Mutex
	m  map[string]memoEntry
}

type memoEntry struct {
	v   any
	err error
}

func newMemoAdmin(a Admin) *memoAdmin {
	if m, ok := a.(*memoAdmin); ok {
		return m
	}
	return &memoAdmin{Admin: a, m: map[string]memoEntry{}}
}

func memo[T any](m *memoAdmin, key string, fn func() (T, error)) (T, error) {
	m.mu.Lock()
	if e, ok := m.m[key]; ok {
		m.mu.Unlock()
		v, _ := e.v.(T)
		return v, e.err
	}
	m.mu.Unlock()
	v, err := fn()
	m.mu.Lock()
	m.m[key] = memoEntry{v: v, err: err}
	m.mu.Unlock()
	return v, err
}

func (m *memoAdmin) BrokerVersion(ctx context.Context) (string, error) {
	return memo(m, "version", func() (string, error) { return m.Admin.BrokerVersion(ctx) })
}

func (m *memoAdmin) RuntimeConfig(ctx context.Context) (map[string]string, error) {
	return memo(m, "runtime", func() (map[string]string, error) { return m.Admin.RuntimeConfig(ctx) })
}

func (m *memoAdmin) Clusters(ctx context.Context) ([]string, error) {
	return memo(m, "clusters", func() ([]string, error) { return m.Admin.Clusters(ctx) })
}

func (m *memoAdmin) OffsetsTopicPartitions(ctx context.Context, tenant, namespace string) (int32, error) {
	return memo(m, "offsets:"+tenant+"/"+namespace, func() (int32, error) { return m.Admin.OffsetsTopicPartitions(ctx, tenant, namespace) })
}

func (m *memoAdmin) PartitionedTopicPartitions(ctx context.Context, topic string) (int32, error) {
	return memo(m, "parts:"+topic, func() (int32, error) { return m.Admin.PartitionedTopicPartitions(ctx, topic) })
}

func (m *memoAdmin) TopicExists(ctx context.Context, topic string) (bool, error) {
	return memo(m, "exists:"+topic, func() (bool, error) { return m.Admin.TopicExists(ctx, topic) })
}

func (m *memoAdmin) NamespaceReplicationClusters(ctx context.Context, namespace string) ([]string, error) {
	return memo(m, "nsrepl:"+namespace, func() ([]string, error) { return m.Admin.NamespaceReplicationClusters(ctx, namespace) })
}

func (m *memoAdmin) NamespacePolicies(ctx context.Context, namespace string) (pulsarx.NamespacePolicy, error) {
	return memo(m, "policies:"+namespace, func() (pulsarx.NamespacePolicy, error) { return m.Admin.NamespacePolicies(ctx, namespace) })
}

func (m *memoAdmin) TenantAllowedClusters(ctx context.Context, tenant string) ([]string, error) {
	return memo(m, "tenant:"+tenant, func() ([]string, error) { return m.Admin.TenantAllowedClusters(ctx, tenant) })
}
