//go:build e2e

package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// TestTenantStoryRepairedAlone is the user's story on a tenant other than public
// (KOP_LAB_TENANTS=2 make e2e-auth, with KOP_NAR): the same group name in two tenants, both
// served on wus; a newer commit of the first tenant replicates to wus past its KoP's cache.
// check names that tenant's row stale on wus and the other tenant's row OK; repair on wus
// unloads bundles of the first tenant's metadata namespace only, and wus then serves the new
// offset for it and the old one, untouched, for the other; `tenants: auto` finds both.
func TestTenantStoryRepairedAlone(t *testing.T) {
	l := authLab(t)
	if !l.KoP.Enabled {
		t.Skip("needs KoP (KOP_NAR)")
	}
	if len(l.State.Tenants) < 2 {
		t.Skip("needs two tenants: KOP_LAB_TENANTS=2 make e2e-auth")
	}
	stale, healthy := l.State.Tenants[0], l.State.Tenants[1]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	scus, wus := l.Cluster("scus"), l.Cluster("wus")
	topic := labtest.Name("tenant-orders")
	group := labtest.Name("orders")
	p := loader.PartitionFor(group, lab.OffsetsTopicPartitions)

	for _, tn := range []string{stale, healthy} {
		labtest.CreateTopic(t, l, tn, topic)
		labtest.ProduceAs(t, scus, tn, topic, 120)
		if err := lab.CommitThroughKoPAs(ctx, scus, tn, group, topic, 0, 50); err != nil {
			t.Fatal(err)
		}
		labtest.WaitReplicatedTenant(t, l, tn, "scus", "wus", p)
		// wus's KoP loaded the partition before the commit arrived: load it again so that
		// both tenants start served, at 50.
		if err := lab.ReloadOffsetsPartitionOf(ctx, wus, tn, p); err != nil {
			t.Fatal(err)
		}
		if got := labtest.ServedAs(t, l, tn, "wus", group, topic); got != "50" {
			t.Fatalf("tenant %s: wus serves %s after the reload, want 50", tn, got)
		}
	}
	if err := lab.CommitThroughKoPAs(ctx, scus, stale, group, topic, 0, 110); err != nil {
		t.Fatal(err)
	}
	labtest.WaitReplicatedTenant(t, l, stale, "scus", "wus", p)
	if got := labtest.ServedAs(t, l, stale, "wus", group, topic); got != "50" {
		t.Fatalf("tenant %s: wus serves %s, want the stale 50 (the story did not happen)", stale, got)
	}

	rep, code := checkJSON(t, l.ConfigPath, "--group", group)
	if code != 1 {
		t.Errorf("check: exit %d, want 1 (drift)", code)
	}
	if want := fmt.Sprint(l.State.Tenants); fmt.Sprint(rep.Tenants) != want {
		t.Errorf("check: tenants %v, want %v", rep.Tenants, want)
	}
	assertTenantStatus(t, rep, group, stale, "wus", verdict.StatusStaleCache)
	assertTenantStatus(t, rep, group, healthy, "wus", verdict.StatusOK)

	code, out, _ := runCLI(t, l.ConfigPath, "--timeout", "30s", "--cluster", "wus", "repair", "--group", group, "--yes", "-o", "json")
	if code != 0 {
		t.Errorf("repair: exit %d, want 0", code)
	}
	var doc struct {
		Clusters []struct {
			Tenant, Cluster string
			Plan            *struct{ Namespace string }
			Execution       *struct{ Unloaded []string }
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("repair: not a document: %v", err)
	}
	unloaded := 0
	for _, c := range doc.Clusters {
		if c.Execution == nil || len(c.Execution.Unloaded) == 0 {
			continue
		}
		if c.Tenant != stale || c.Plan == nil || c.Plan.Namespace != lab.TenantMetadataNamespace(stale) {
			t.Errorf("repair unloaded %v for tenant %s (plan %+v): only %s's metadata namespace may be touched", c.Execution.Unloaded, c.Tenant, c.Plan, stale)
		}
		unloaded += len(c.Execution.Unloaded)
	}
	if unloaded == 0 {
		t.Errorf("repair unloaded nothing: %s", out)
	}
	if got := labtest.ServedAs(t, l, stale, "wus", group, topic); got != "110" {
		t.Errorf("tenant %s: wus serves %s after repair, want 110", stale, got)
	}
	if got := labtest.ServedAs(t, l, healthy, "wus", group, topic); got != "50" {
		t.Errorf("tenant %s: wus serves %s after repair, want 50 (untouched)", healthy, got)
	}

	auto := editedConfig(t, l, filepath.Join(t.TempDir(), "auto.yaml"), func(c *config.Cluster) {
		c.Tenants = &config.Tenants{Auto: true}
	})
	rep, code = checkJSON(t, auto, "--group", group)
	if code != 0 {
		t.Errorf("check with tenants: auto after repair: exit %d, want 0", code)
	}
	for _, tn := range []string{stale, healthy} {
		if !strings.Contains(" "+strings.Join(rep.Tenants, " ")+" ", " "+tn+" ") {
			t.Errorf("tenants: auto found %v, want %s among them", rep.Tenants, tn)
		}
		assertTenantStatus(t, rep, group, tn, "wus", verdict.StatusOK)
	}
}

// assertTenantStatus checks the status of tenant tn's row of group on cluster.
func assertTenantStatus(t *testing.T, rep survey.Report, group, tn, cluster string, want verdict.Status) {
	t.Helper()
	for _, r := range rep.Rows {
		if r.Group != group || r.Tenant != tn {
			continue
		}
		for _, c := range r.Cells {
			if c.Cluster == cluster {
				if c.Status != want {
					t.Errorf("tenant %s, %s: %s is %s, want %s", tn, cluster, group, c.Status, want)
				}
				return
			}
		}
	}
	t.Errorf("tenant %s: no row of %s on %s", tn, group, cluster)
}
