package audit

import "testing"

func TestFilterByTenant(t *testing.T) {
	unload := Record{Cluster: "wus", Action: "unload", Namespace: "tenant1/__kafka", Bundle: "0x40000000_0x80000000"}
	lookup := Record{Cluster: "wus", Action: "lookup", Topic: "persistent://tenant2/__kafka/__consumer_offsets-partition-5"}
	if unload.Tenant() != "tenant1" || lookup.Tenant() != "tenant2" {
		t.Fatalf("tenants %q %q", unload.Tenant(), lookup.Tenant())
	}
	f := Filter{Tenants: []string{"tenant1"}}
	if !f.Match(unload) || f.Match(lookup) {
		t.Error("--tenant tenant1 does not select tenant1's records only")
	}
	if !(Filter{Tenants: []string{"tenant*"}}).Match(lookup) || !(Filter{}).Match(lookup) {
		t.Error("glob or no filter does not match")
	}
}
