package check

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/sources"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// tenantScenario: tenants acme (the user's story: wus serves 500, its topic holds 10900) and
// billing (healthy, the same group name) on scus and wus, and ops on scus only. Each
// (tenant, cluster) has its own offsets topic and KoP cache: one reader and fetcher each.
func tenantScenario(t *testing.T) ([]config.Scope, sources.ConnectFunc) {
	commit := func(tenant, group string, off int64) kop.OffsetCommit {
		return kop.OffsetCommit{Group: group, Topic: "persistent://" + tenant + "/default/topic-1", Offset: off, CommitTime: time.UnixMilli(1700000000000 + off)}
	}
	type side struct {
		persisted []kop.OffsetCommit
		cached    map[string]map[string]map[int32]int64
	}
	sides := map[string]side{
		"acme/scus":    {[]kop.OffsetCommit{commit("acme", "orders", 10900)}, map[string]map[string]map[int32]int64{"orders": {"topic-1": {0: 10900}}}},
		"acme/wus":     {[]kop.OffsetCommit{commit("acme", "orders", 10900)}, map[string]map[string]map[int32]int64{"orders": {"topic-1": {0: 500}}}},
		"billing/scus": {[]kop.OffsetCommit{commit("billing", "orders", 70)}, map[string]map[string]map[int32]int64{"orders": {"topic-1": {0: 70}}}},
		"billing/wus":  {[]kop.OffsetCommit{commit("billing", "orders", 70)}, map[string]map[string]map[int32]int64{"orders": {"topic-1": {0: 70}}}},
		"ops/scus":     {[]kop.OffsetCommit{commit("ops", "etl", 5)}, map[string]map[string]map[int32]int64{"etl": {"topic-1": {0: 5}}}},
	}
	cfg, err := config.Parse([]byte(`clusters:
  - {name: scus, adminURL: "http://127.0.0.1:1", tenants: [acme, billing, ops]}
  - {name: wus, adminURL: "http://127.0.0.1:2", tenants: [acme, billing]}
`), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	scopes, errs := config.Scopes(cfg.Clusters, nil, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	connect := func(cl config.Cluster, so sources.SourceOptions) (survey.Cluster, func(), error) {
		s, ok := sides[cl.Tenant+"/"+cl.Name]
		if !ok {
			t.Fatalf("no side %s/%s", cl.Tenant, cl.Name)
		}
		return survey.Cluster{Name: cl.Name, KafkaNamespace: cl.KafkaNamespace, Reader: fakes.NewMemReader(8).Commit(s.persisted...),
			Replication: survey.StaticReplication{},
			Fetcher:     memFetcher{cache: s.cached, leo: map[string]map[int32]int64{"topic-1": {0: 11000}}}}, nil, nil
	}
	return scopes, connect
}

func runTenants(t *testing.T, format output.Format, mutate func(*Options)) (string, string, int) {
	t.Helper()
	scopes, connect := tenantScenario(t)
	ios, _, out, errOut := iostreams.Test()
	opts := &Options{IO: ios, Format: format, Scopes: func() ([]config.Scope, error) { return scopes, nil }, Connect: connect,
		CoordinatorWait: time.Second, Concurrency: 2, Now: func() time.Time { return time.UnixMilli(1700000000000).Add(time.Hour) }}
	if mutate != nil {
		mutate(opts)
	}
	err := checkRun(context.Background(), opts)
	return out.String(), errOut.String(), cmdutil.ExitCode(err)
}

func TestCheckTenantsTable(t *testing.T) {
	out, errOut, code := runTenants(t, output.Table, nil)
	if code != 1 {
		t.Errorf("exit %d", code)
	}
	// Each tenant's group is compared on that tenant's clusters only: acme's stale cache is
	// found, billing's group of the same name is ok, ops (scus only) is n/a on wus.
	for _, want := range []string{"TENANT\tGROUP\tTOPIC",
		"acme\torders\ttopic-1\t0\t5\t10900/10900\t500/10900 STALE_CACHE\t",
		"billing\torders\ttopic-1\t0\t5\t70/70\t70/70\t",
		"ops\tetl\ttopic-1\t0\t"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "\tn/a\t") {
		t.Errorf("ops on wus is not n/a:\n%s", out)
	}
	for _, want := range []string{"3 rows: 1 STALE_CACHE, 2 OK (exit 1)", "hint: kop-offsets reload --tenant acme --cluster wus --group orders"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("footer lacks %q:\n%s", want, errOut)
		}
	}
}

func TestCheckTenantsJSONAndPrometheus(t *testing.T) {
	prom := filepath.Join(t.TempDir(), "kop.prom")
	out, _, code := runTenants(t, output.JSON, func(o *Options) { o.PrometheusFile = prom })
	if code != 1 {
		t.Errorf("exit %d", code)
	}
	var rep survey.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if strings.Join(rep.Tenants, ",") != "acme,billing,ops" || len(rep.Rows) != 3 || rep.Summary["stale_cache"] != 1 || rep.Summary["ok"] != 2 {
		t.Fatalf("report: tenants %v rows %d summary %v", rep.Tenants, len(rep.Rows), rep.Summary)
	}
	for _, r := range rep.Rows {
		want := map[string]verdict.Status{"acme": verdict.StatusStaleCache, "billing": verdict.StatusOK, "ops": verdict.StatusOK}[r.Tenant]
		if r.Status != want {
			t.Errorf("row %s/%s: %s, want %s", r.Tenant, r.Group, r.Status, want)
		}
	}
	b, err := os.ReadFile(prom)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`kop_offsets_cached_offset{cluster="wus",group="orders",partition="0",tenant="acme",topic="topic-1"} 500`,
		`kop_offsets_cached_offset{cluster="wus",group="orders",partition="0",tenant="billing",topic="topic-1"} 70`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("textfile lacks %s:\n%s", want, b)
		}
	}
}

func TestCheckOneTenantConfigUnchanged(t *testing.T) {
	// No tenants: in the config: no TENANT column, no tenant field, as always.
	out, _, _ := run(t, output.JSON, nil, false)
	if strings.Contains(out, "tenant") {
		t.Errorf("one-tenant report names a tenant:\n%s", out)
	}
}
