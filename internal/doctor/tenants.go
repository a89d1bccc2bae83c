package doctor

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kop-offsets/kop-offsets/internal/explain"
)

// clusterChecks are the checks about a cluster itself (its admin API, brokers, peers): the
// same for every tenant, so a multi-tenant audit reports them once.
var clusterChecks = map[string]bool{
	CheckAdminReachable: true, CheckAdminAPI: true, CheckBrokerVersion: true, CheckClusterName: true,
	CheckBrokers: true, CheckBrokerKoP: true, CheckBrokerSettings: true, CheckPeerRegistered: true,
}

// TenantReport is the audit of one tenant on the clusters that have it.
type TenantReport struct {
	Tenant   string
	Clusters []*Cluster // the tenant's views of the clusters audited
	Report   *Report
}

// MergeTenants is the audit of every tenant of a multi-tenant KoP: each tenant's findings
// named by it, the findings about the clusters themselves once, and a tenant-clusters
// error for each tenant missing from one of the audited clusters (names: every cluster
// audited), whose groups then cannot be on the same offsets there.
func MergeTenants(reps []TenantReport, names []string) *Report {
	out := &Report{Findings: []Finding{}}
	seen := map[string]bool{}
	for _, tr := range reps {
		rep := tr.Report
		if out.Clusters == nil {
			out.Clusters, out.Topics, out.Groups = rep.Clusters, rep.Topics, rep.Groups
		}
		for _, u := range rep.Unreachable {
			if !slices.Contains(out.Unreachable, u) {
				out.Unreachable = append(out.Unreachable, u)
			}
		}
		out.APIErrors = out.APIErrors || rep.APIErrors
		for _, f := range rep.Findings {
			if clusterChecks[f.Check] {
				key := f.Check + "\x00" + f.Cluster + "\x00" + f.Peer + "\x00" + f.Message
				if seen[key] {
					continue
				}
				seen[key] = true
			} else {
				f.Tenant, f.Fix = tr.Tenant, explain.WithTenant(f.Fix, tr.Tenant)
			}
			out.Findings = append(out.Findings, f)
		}
		out.Findings = append(out.Findings, missingTenant(tr, names)...)
	}
	SortFindings(out.Findings)
	out.count()
	return out
}

// missingTenant finds the audited clusters tr's tenant is not on.
func missingTenant(tr TenantReport, names []string) []Finding {
	var have []string
	for _, c := range tr.Clusters {
		have = append(have, c.Name)
	}
	var out []Finding
	for _, n := range names {
		if slices.Contains(have, n) || len(tr.Clusters) == 0 {
			continue
		}
		src := tr.Clusters[0]
		out = append(out, Finding{Severity: SeverityError, Check: CheckTenantClusters, Tenant: tr.Tenant, Cluster: n, Subject: tr.Tenant,
			Message: fmt.Sprintf("tenant %s has an offsets topic on %s but is not configured (or, with tenants: auto, has none) on %s: its groups' offsets cannot follow them there",
				tr.Tenant, strings.Join(have, ", "), n),
			Evidence: map[string]any{"clusters": have},
			Fix: fmt.Sprintf("add %s to cluster %s's tenants: in the config; if the tenant is missing there: %s, then replicate %s/%s to %s",
				tr.Tenant, n, "pulsar-admin tenants create "+tr.Tenant+" --allowed-clusters "+strings.Join(append(have, n), ","), tr.Tenant, src.MetadataNamespace, n),
		})
	}
	return out
}
