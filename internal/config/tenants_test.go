package config

import (
	"errors"
	"strings"
	"testing"
)

const tenantsDoc = `
clusters:
  - name: scus
    adminURL: http://127.0.0.1:18080
    kafkaBootstrap: [127.0.0.1:19092]
    kafkaAuth:
      sasl: {mechanism: plain, username: admin, password: "token:super"}
    tenants:
      - acme
      - name: billing
        kafkaNamespace: billing/kafka
        kafkaAuth:
          sasl: {mechanism: PLAIN, username: billing, password: "token:billing-only"}
  - name: wus
    adminURL: http://127.0.0.1:28080
    kafkaNamespace: public/apps
    tenants: auto
  - name: east
    adminURL: http://127.0.0.1:38080
    tenant: acme
`

func TestTenantsParse(t *testing.T) {
	cfg, err := Parse([]byte(tenantsDoc), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	scus, wus, east := cfg.Clusters[0], cfg.Clusters[1], cfg.Clusters[2]
	if scus.Tenant != "" || scus.Tenants == nil || len(scus.Tenants.List) != 2 || scus.Tenants.List[0].Name != "acme" || scus.Tenants.List[1].KafkaNamespace != "billing/kafka" {
		t.Fatalf("scus tenants: %+v %+v", scus.Tenant, scus.Tenants)
	}
	if scus.Tenants.List[1].KafkaAuth.SASL.Mechanism != "PLAIN" || scus.KafkaAuth.SASL.Mechanism != "PLAIN" {
		t.Fatalf("mechanisms not normalised")
	}
	if wus.Tenants == nil || !wus.Tenants.Auto || east.Tenant != "acme" || east.Tenants != nil {
		t.Fatalf("wus %+v east %+v", wus.Tenants, east)
	}
	if !cfg.MultiTenant() {
		t.Fatal("MultiTenant false")
	}
	// config view's form round-trips, with the tenant's literal password redacted.
	b, err := cfg.Redacted().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "billing-only") || strings.Contains(string(b), "super") || !strings.Contains(string(b), "tenants: auto") || !strings.Contains(string(b), "- acme") {
		t.Fatalf("marshalled:\n%s", b)
	}
	if cfg.Clusters[0].Tenants.List[1].KafkaAuth.SASL.Password != "token:billing-only" {
		t.Fatal("Redacted changed the original")
	}
}

func TestTenantsInvalid(t *testing.T) {
	for name, tc := range map[string]struct{ doc, want string }{
		"both":      {"tenant: acme\n    tenants: [b]", `cluster "a": tenants: tenant and tenants are alternatives`},
		"empty":     {"tenants: []", `cluster "a": tenants: is empty`},
		"dup":       {"tenants: [x, x]", `tenants[1].name: duplicate tenant "x"`},
		"bad name":  {"tenants: [\"a b\"]", `tenants[0].name: "a b" is not a valid tenant name`},
		"scalar":    {"tenants: some", `tenants: "some" must be "auto" or a list of tenants`},
		"typo":      {"tenants: [{name: x, kafkaAuht: {}}]", `unknown field "kafkaAuht"`},
		"bad auth":  {"tenants: [{name: x, kafkaAuth: {sasl: {mechanism: GSSAPI, username: u, password: p}}}]", `tenants[0].kafkaAuth.sasl.mechanism`},
		"bad kafns": {"tenants: [{name: x, kafkaNamespace: nope}]", `tenants[0].kafkaNamespace: "nope" must be <tenant>/<namespace>`},
	} {
		t.Run(name, func(t *testing.T) {
			doc := "clusters:\n  - name: a\n    adminURL: http://h:1\n    " + tc.doc + "\n"
			_, err := Parse([]byte(doc), "t.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestScopes(t *testing.T) {
	cfg, err := Parse([]byte(tenantsDoc), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	discover := func(cl Cluster) ([]string, error) {
		if cl.Name != "wus" {
			t.Fatalf("discover called for %s", cl.Name)
		}
		return []string{"acme", "ops"}, nil
	}
	scopes, errs := Scopes(cfg.Clusters, nil, discover)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	var got []string
	for _, s := range scopes {
		got = append(got, s.Tenant+":"+strings.Join(Names(s.Clusters), ","))
	}
	if strings.Join(got, " ") != "acme:scus,wus,east billing:scus ops:wus" {
		t.Fatalf("scopes %v", got)
	}
	if !scopes[0].Named || !scopes[2].Named {
		t.Fatal("scopes of a tenants: config are not Named")
	}
	acmeScus, acmeWus := scopes[0].Clusters[0], scopes[0].Clusters[1]
	// The super-user credentials with the tenant as username: KoP picks the tenant from it.
	if acmeScus.Tenant != "acme" || acmeScus.KafkaAuth.SASL.Username != "acme" || acmeScus.KafkaAuth.SASL.Password != "token:super" || acmeScus.KafkaNamespace != "acme/default" {
		t.Fatalf("acme on scus: %+v %+v", acmeScus, acmeScus.KafkaAuth.SASL)
	}
	if acmeScus.OffsetsTopic() != "persistent://acme/__kafka/__consumer_offsets" || acmeScus.Tenants != nil {
		t.Fatalf("offsets topic %s", acmeScus.OffsetsTopic())
	}
	if cfg.Clusters[0].KafkaAuth.SASL.Username != "admin" {
		t.Fatal("ForTenant changed the config's cluster")
	}
	if acmeWus.KafkaNamespace != "acme/apps" || acmeWus.KafkaAuth != nil {
		t.Fatalf("acme on wus: %+v", acmeWus)
	}
	billing := scopes[1].Clusters[0]
	if billing.KafkaAuth.SASL.Username != "billing" || billing.KafkaAuth.SASL.Password != "token:billing-only" || billing.KafkaNamespace != "billing/kafka" {
		t.Fatalf("billing: %+v", billing.KafkaAuth.SASL)
	}
	// A one-tenant cluster is its tenant's, unchanged.
	if east := scopes[0].Clusters[2]; east.KafkaNamespace != "public/default" || east.Tenant != "acme" {
		t.Fatalf("east: %+v", east)
	}

	// --tenant selects by glob; a failing discovery leaves its cluster out, the rest go on.
	scopes, errs = Scopes(cfg.Clusters, []string{"a*", "ops"}, func(Cluster) ([]string, error) { return nil, errors.New("403 Forbidden") })
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "cluster wus: list its tenants (tenants: auto): 403 Forbidden") {
		t.Fatalf("errs %v", errs)
	}
	if strings.Join(ScopeNames(scopes), ",") != "acme" || strings.Join(Names(scopes[0].Clusters), ",") != "scus,east" {
		t.Fatalf("selected %v", ScopeNames(scopes))
	}
}

func TestScopesOneTenantConfig(t *testing.T) {
	cfg, err := Parse([]byte("clusters:\n  - name: a\n    adminURL: http://h:1\n  - name: b\n    adminURL: http://h:2\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MultiTenant() {
		t.Fatal("a config without tenants: is not multi-tenant")
	}
	scopes, errs := Scopes(cfg.Clusters, nil, nil)
	if len(errs) != 0 || len(scopes) != 1 || scopes[0].Tenant != "public" || len(scopes[0].Clusters) != 2 || scopes[0].Named {
		t.Fatalf("scopes %+v %v", scopes, errs)
	}
	if scopes[0].Clusters[0].KafkaNamespace != "public/default" || scopes[0].Clusters[0].OffsetsTopic() != cfg.Clusters[0].OffsetsTopic() {
		t.Fatalf("view differs: %+v", scopes[0].Clusters[0])
	}
}
