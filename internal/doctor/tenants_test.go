package doctor

import (
	"strings"
	"testing"
)

func TestMergeTenants(t *testing.T) {
	scus, wus := &Cluster{Name: "scus", MetadataNamespace: "__kafka"}, &Cluster{Name: "wus", MetadataNamespace: "__kafka"}
	brokers := Finding{Severity: SeverityWarning, Check: CheckBrokerSettings, Cluster: "wus", Message: "brokers disagree"}
	ns := Finding{Severity: SeverityError, Check: CheckMetadataNamespace, Cluster: "scus", Peer: "wus", Message: "not replicated"}
	reps := []TenantReport{
		{Tenant: "acme", Clusters: []*Cluster{scus, wus}, Report: &Report{Findings: []Finding{brokers, ns}}},
		{Tenant: "billing", Clusters: []*Cluster{scus, wus}, Report: &Report{Findings: []Finding{brokers}, Unreachable: []string{"wus"}}},
		{Tenant: "ops", Clusters: []*Cluster{scus}, Report: &Report{Findings: []Finding{brokers}}},
	}
	rep := MergeTenants(reps, []string{"scus", "wus"})
	var got []string
	for _, f := range rep.Findings {
		got = append(got, f.Tenant+"/"+f.Check+"/"+f.Cluster)
	}
	// Errors first: acme's namespace, ops missing on wus; the brokers' warning once, unnamed.
	if strings.Join(got, " ") != "acme/metadata-namespace-replication/scus ops/tenant-clusters/wus /broker-settings/wus" {
		t.Fatalf("findings %v", got)
	}
	if rep.Summary[SeverityError] != 2 || rep.Summary[SeverityWarning] != 1 || rep.Errors() != 2 {
		t.Errorf("summary %v", rep.Summary)
	}
	if strings.Join(rep.Unreachable, ",") != "wus" {
		t.Errorf("unreachable %v", rep.Unreachable)
	}
	if m := rep.Findings[1].Message; !strings.Contains(m, "tenant ops has an offsets topic on scus but is not configured (or, with tenants: auto, has none) on wus") {
		t.Errorf("message %q", m)
	}
}
