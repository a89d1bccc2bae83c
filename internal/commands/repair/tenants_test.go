package repair

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/commands/scope"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// TestRepairPerTenant: acme has the user's stale cache on wus, billing's group of the same
// name is healthy. Each tenant is checked on its own clusters; only acme's metadata
// namespace has a bundle unloaded, and every row names its tenant.
func TestRepairPerTenant(t *testing.T) {
	h := newHarness(t)
	stale := h.opts.Check
	var checked []string
	h.opts.Check = func(ctx context.Context, all []config.Cluster, scope Scope, down map[string]error) (*survey.Report, error) {
		checked = append(checked, all[0].Tenant)
		if all[0].Tenant == "acme" {
			return stale(ctx, all, scope, down)
		}
		return &survey.Report{SchemaVersion: 1, Rows: []verdict.Row{{Group: "G", Topic: "topic-1", Status: "ok",
			Cells: []verdict.Cell{{Cluster: "wus", Status: "ok"}, {Cluster: "scus", Status: "ok"}}}}}, nil
	}
	view := func(tenant, name string) config.Cluster {
		return config.Cluster{Name: name, Tenant: tenant, MetadataNamespace: "__kafka", KafkaNamespace: "public/default"} // the harness's data topic
	}
	h.opts.Tenants = func() ([]scope.TenantTarget, error) {
		var out []scope.TenantTarget
		for _, tn := range []string{"acme", "billing"} {
			out = append(out, scope.TenantTarget{Scope: config.Scope{Tenant: tn, Named: true, Clusters: []config.Cluster{view(tn, "wus")}},
				All: []config.Cluster{view(tn, "scus"), view(tn, "wus")}})
		}
		return out, nil
	}
	h.opts.Format = output.JSON
	if err := repairRun(context.Background(), h.opts); err != nil {
		t.Fatalf("%v\n%s", err, h.errb)
	}
	if u := h.unloads(); len(u) != 1 || !strings.HasPrefix(u[0], "unload acme/__kafka/0x") {
		t.Errorf("unloads %v, want acme's bundle only", u)
	}
	// acme: a check, the repair, a second check; billing: one check, nothing to do.
	if strings.Join(checked, ",") != "acme,acme,billing" {
		t.Errorf("checks %v", checked)
	}
	var doc Document
	if err := json.Unmarshal(h.out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if strings.Join(doc.Tenants, ",") != "acme,billing" || len(doc.Stale) != 1 || doc.Stale[0].Tenant != "acme" ||
		len(doc.Clusters) != 1 || doc.Clusters[0].Tenant != "acme" || doc.ExitCode != 0 {
		t.Fatalf("doc: tenants %v stale %+v clusters %+v exit %d", doc.Tenants, doc.Stale, doc.Clusters, doc.ExitCode)
	}
	for _, l := range doc.Left {
		if l.Tenant != "acme" {
			t.Errorf("left row without its tenant: %+v", l)
		}
	}
	if !strings.Contains(h.errb.String(), "tenant billing: nothing stale or unserved: nothing to do") ||
		!strings.Contains(h.errb.String(), "tenant acme: cluster wus: unloaded bundles: 0x") {
		t.Errorf("stderr:\n%s", h.errb)
	}

	// The table names the tenant in its own column.
	h.out.Reset()
	h.kop.stale = true
	h.opts.Format = output.Table
	if err := repairRun(context.Background(), h.opts); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.out.String(), "TENANT\tCLUSTER\tGROUP") || !strings.Contains(h.out.String(), "acme\twus\tL\ttopic-1") {
		t.Errorf("table:\n%s", h.out)
	}
}

// TestRepairPerTenantDryRun: a dry run that plans a reload in one tenant has no second
// check, so the whole run reports none (no "0 after" from the tenant with nothing to do).
func TestRepairPerTenantDryRun(t *testing.T) {
	h := newHarness(t)
	stale := h.opts.Check
	h.opts.Check = func(ctx context.Context, all []config.Cluster, scope Scope, down map[string]error) (*survey.Report, error) {
		if all[0].Tenant == "acme" {
			return stale(ctx, all, scope, down)
		}
		return &survey.Report{SchemaVersion: 1}, nil
	}
	h.opts.Tenants = func() ([]scope.TenantTarget, error) {
		var out []scope.TenantTarget
		for _, tn := range []string{"acme", "billing"} {
			cl := config.Cluster{Name: "wus", Tenant: tn, MetadataNamespace: "__kafka", KafkaNamespace: "public/default"}
			out = append(out, scope.TenantTarget{Scope: config.Scope{Tenant: tn, Named: true, Clusters: []config.Cluster{cl}}, All: []config.Cluster{cl}})
		}
		return out, nil
	}
	h.opts.DryRun = true
	if err := repairRun(context.Background(), h.opts); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(h.out.String(), "after") || len(h.unloads()) != 0 {
		t.Errorf("dry run: unloads %v, stdout:\n%s", h.unloads(), h.out)
	}
}
