package reload

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/offsets"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// fakeAdmin is an in-memory BundleAdmin with the lab's layout: 8 offsets partitions in 4
// bundles. It records every call and tracks which bundles a broker owns.
type fakeAdmin struct {
	mu         sync.Mutex
	parts      int32
	bundles    []pulsarx.Bundle
	partsErr   error
	bundlesErr error
	unloadErr  map[string]error // by bundle range
	lookupErr  map[string]error // by topic
	owned      map[string]bool
	calls      []string
	onUnload   func(bundleRange string)
	onLookup   func(topic string)
}

func newFakeAdmin(t *testing.T) *fakeAdmin {
	t.Helper()
	b, err := pulsarx.BundlesFromBoundaries([]string{"0x00000000", "0x40000000", "0x80000000", "0xc0000000", "0xffffffff"})
	if err != nil {
		t.Fatal(err)
	}
	owned := map[string]bool{}
	for _, x := range b {
		owned[x.Range] = true
	}
	return &fakeAdmin{parts: 8, bundles: b, unloadErr: map[string]error{}, lookupErr: map[string]error{}, owned: owned}
}

func (f *fakeAdmin) record(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
}

func (f *fakeAdmin) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeAdmin) OffsetsTopicPartitions(_ context.Context, tenant, ns string) (int32, error) {
	f.record("partitions " + tenant + "/" + ns)
	return f.parts, f.partsErr
}

func (f *fakeAdmin) Bundles(_ context.Context, ns string) ([]pulsarx.Bundle, error) {
	f.record("bundles " + ns)
	return f.bundles, f.bundlesErr
}

func (f *fakeAdmin) UnloadBundle(_ context.Context, ns, r string) error {
	f.record("unload " + ns + "/" + r)
	if err := f.unloadErr[r]; err != nil {
		return err
	}
	f.mu.Lock()
	f.owned[r] = false
	f.mu.Unlock()
	if f.onUnload != nil {
		f.onUnload(r)
	}
	return nil
}

func (f *fakeAdmin) LookupOwner(_ context.Context, topic string) (pulsarx.Owner, error) {
	f.record("lookup " + topic)
	if err := f.lookupErr[topic]; err != nil {
		return pulsarx.Owner{}, err
	}
	b, err := pulsarx.FindBundle(f.bundles, topic)
	if err != nil {
		return pulsarx.Owner{}, err
	}
	f.mu.Lock()
	f.owned[b.Range] = true
	f.mu.Unlock()
	if f.onLookup != nil {
		f.onLookup(topic)
	}
	return pulsarx.Owner{BrokerURL: "pulsar://broker-1:6650", HTTPURL: "http://broker-1:8080"}, nil
}

func (f *fakeAdmin) Owned(r string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.owned[r]
}

// adminErr is what pulsarx returns for a failed call.
func adminErr(status int, op string) error {
	return &pulsarx.AdminError{Cluster: "scus", Op: op, Target: "public/__kafka", Status: status, Err: fmt.Errorf("status %d", status)}
}

var errUnreachable = adminErr(0, "unload bundle")

var _ = http.StatusNotFound

// groupIn returns a group name that KoP puts into offsets partition p of n.
func groupIn(prefix string, p, n int32) string {
	for i := 0; ; i++ {
		g := fmt.Sprintf("%s-%d", prefix, i)
		if offsets.PartitionFor(g, n) == p {
			return g
		}
	}
}

// staticDescriber answers DescribeGroups from a map; err fails the whole call.
type staticDescriber struct {
	groups map[string]GroupActivity
	err    error
	asked  [][]string
	mu     sync.Mutex
}

func (d *staticDescriber) DescribeGroups(_ context.Context, groups []string) (map[string]GroupActivity, error) {
	d.mu.Lock()
	d.asked = append(d.asked, groups)
	d.mu.Unlock()
	if d.err != nil {
		return nil, d.err
	}
	out := map[string]GroupActivity{}
	for _, g := range groups {
		if a, ok := d.groups[g]; ok {
			out[g] = a
		} else {
			out[g] = GroupActivity{State: "Dead"}
		}
	}
	return out, nil
}
