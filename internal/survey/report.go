package survey

import (
	"slices"
	"sync"

	"github.com/kop-offsets/kop-offsets/internal/explain"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// Report is the document `check -o json` prints (cli.md: "A check row").
type Report struct {
	SchemaVersion int `json:"schemaVersion"`
	// Tenants are the tenants of a multi-tenant report, each compared on its own clusters.
	Tenants  []string       `json:"tenants,omitempty"`
	Clusters []string       `json:"clusters"`
	Source   *string        `json:"source"`
	Rows     []verdict.Row  `json:"rows"`
	Errors   []ClusterError `json:"errors,omitempty"`
	// Unread are the clusters nothing could be read from (neither the offsets topic nor
	// KoP): their rows are missing, not in agreement.
	Unread []string `json:"unread,omitempty"`
	// Unserved are the offsets partitions KoP does not serve on a cluster (every group of
	// them gets NOT_COORDINATOR or "loading" for the whole --coordinator-wait), apart from
	// the rows they leave coordinator_unavailable.
	Unserved []UnservedPartition `json:"unserved,omitempty"`
	Warnings []string            `json:"warnings,omitempty"`
	Summary  map[string]int      `json:"summary"`
	ExitCode outcome.Outcome     `json:"exitCode"`
	// Sides counts the (tenant, cluster) pairs of a merged report (Merge); 0: one per cluster.
	Sides int `json:"-"`
}

// UnservedPartition is an offsets partition KoP does not serve on one cluster.
type UnservedPartition struct {
	Tenant           string `json:"tenant,omitempty"`
	Cluster          string `json:"cluster"`
	OffsetsPartition int32  `json:"offsetsPartition"`
	// Answer is what KoP kept answering for a probe group of the partition.
	Answer string `json:"answer"`
	// Owner is the broker that owns the partition's bundle (none: no broker owns it; the
	// next lookup assigns it), when it could be read.
	Owner string `json:"owner,omitempty"`
	Fix   string `json:"fix"`
}

// AllUnread reports whether nothing could be read at all.
func (r *Report) AllUnread() bool {
	return len(r.Unread) > 0 && len(r.Unread) == r.sides()
}

func (r *Report) sides() int {
	if r.Sides > 0 {
		return r.Sides
	}
	return len(r.Clusters)
}

// Merge adds rep, the report of tenant's scope, to r, the report of every tenant: its
// errors, unread clusters, unserved partitions and warnings name the tenant; the summary
// adds up and the exit code is the worse. r's rows are not touched (check streams them).
func (r *Report) Merge(tenant string, rep *Report) {
	if r.Summary == nil {
		r.Summary = map[string]int{}
	}
	if !slices.Contains(r.Tenants, tenant) {
		r.Tenants = append(r.Tenants, tenant)
	}
	for _, c := range rep.Clusters {
		if !slices.Contains(r.Clusters, c) {
			r.Clusters = append(r.Clusters, c)
		}
	}
	for k, n := range rep.Summary {
		r.Summary[k] += n
	}
	prefix := "tenant " + tenant + ": "
	for _, e := range rep.Errors {
		e.Tenant, e.Error, e.Fix = tenant, prefix+explain.WithTenant(e.Error, tenant), explain.WithTenant(e.Fix, tenant)
		r.Errors = append(r.Errors, e)
	}
	for _, u := range rep.Unread {
		r.Unread = append(r.Unread, tenant+"/"+u)
	}
	for _, u := range rep.Unserved {
		u.Tenant, u.Fix = tenant, explain.WithTenant(u.Fix, tenant)
		r.Unserved = append(r.Unserved, u)
	}
	for _, w := range rep.Warnings {
		r.Warnings = append(r.Warnings, prefix+explain.WithTenant(w, tenant))
	}
	r.Sides += rep.sides()
	r.ExitCode = outcome.Worst(r.ExitCode, rep.ExitCode)
}

var reportMu sync.Mutex

func (r *Report) addErr(e ClusterError) {
	reportMu.Lock()
	defer reportMu.Unlock()
	r.Errors = append(r.Errors, e)
}

func (r *Report) addWarning(w string) {
	reportMu.Lock()
	defer reportMu.Unlock()
	r.Warnings = append(r.Warnings, w)
	slices.Sort(r.Warnings)
}
