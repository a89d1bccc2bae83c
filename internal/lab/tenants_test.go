package lab

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/kop-offsets/kop-offsets/internal/config"
)

func TestTenantNamesAndCount(t *testing.T) {
	if got := TenantNames(3); !slices.Equal(got, []string{"tenant1", "tenant2", "tenant3"}) {
		t.Errorf("TenantNames(3) = %v", got)
	}
	if got := TenantNames(0); len(got) != 0 {
		t.Errorf("TenantNames(0) = %v", got)
	}
	for _, tc := range []struct {
		in   string
		want int
	}{{"", 0}, {" 2 ", 2}, {"1", 1}} {
		in, want := tc.in, tc.want
		if n, err := ParseTenantCount(in); err != nil || n != want {
			t.Errorf("ParseTenantCount(%q) = %d, %v; want %d", in, n, err, want)
		}
	}
	for _, in := range []string{"0", "-1", "two"} {
		if _, err := ParseTenantCount(in); err == nil || !strings.Contains(err.Error(), "KOP_LAB_TENANTS") {
			t.Errorf("ParseTenantCount(%q): %v, want an error naming KOP_LAB_TENANTS", in, err)
		}
	}
}

func TestTenantsNeedTokenAuth(t *testing.T) {
	if err := CheckTenants(0, AuthNone); err != nil {
		t.Errorf("no tenants without auth: %v", err)
	}
	if err := CheckTenants(2, AuthToken); err != nil {
		t.Errorf("tenants with token auth: %v", err)
	}
	for _, m := range []AuthMode{"", AuthNone} {
		err := CheckTenants(2, m)
		if err == nil || !strings.Contains(err.Error(), "--auth token") || !strings.Contains(err.Error(), "SASL username") {
			t.Errorf("tenants with auth %q: %v, want the reason and the fix", m, err)
		}
	}
}

// Up refuses tenants without token auth before it takes the lock or touches lab/run: a
// running lab stays as it is.
func TestUpRefusesTenantsWithoutAuth(t *testing.T) {
	t.Setenv("KOP_LAB_AUTH", "")
	for name, o := range map[string]Options{
		"option": {Tenants: 2},
		"env":    {},
	} {
		t.Run(name, func(t *testing.T) {
			if name == "env" {
				t.Setenv("KOP_LAB_TENANTS", "2")
			}
			o.Root, o.KoP = t.TempDir(), KoPOff
			_, err := Up(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), "needs --auth token") {
				t.Fatalf("Up: %v, want the tenants error", err)
			}
			if _, serr := os.Stat(Paths{Root: o.Root}.RunDir()); serr == nil {
				t.Errorf("Up wrote %s before refusing", Paths{Root: o.Root}.RunDir())
			}
		})
	}
	t.Setenv("KOP_LAB_TENANTS", "0")
	if _, err := (Options{Root: t.TempDir()}).resolve(); err == nil {
		t.Error("KOP_LAB_TENANTS=0 resolved, want an error")
	}
}

func TestTenantConfigAndNames(t *testing.T) {
	t.Setenv("KOP_LAB_PORT_OFFSET", "")
	c := withAuth(DefaultClusters(), Paths{Root: "/repo"}, AuthToken)[0]
	tc := c.TenantConfig("tenant1")
	if tc.Tenant != "tenant1" || tc.KafkaNamespace != "tenant1/default" || tc.MetadataNamespacePath() != "tenant1/__kafka" {
		t.Errorf("tenant1 config: tenant %q, kafkaNamespace %q, metadata %q", tc.Tenant, tc.KafkaNamespace, tc.MetadataNamespacePath())
	}
	if s := tc.KafkaAuth.SASL; s.Username != "tenant1" || s.Password != "file:/repo/lab/run/auth/tenant1-client.kafka-password" || s.Mechanism != "PLAIN" {
		t.Errorf("tenant1 SASL %+v", s)
	}
	// The superuser's admin and Pulsar credentials stay: they read every tenant's topics.
	if tc.PulsarAuth == nil || tc.PulsarAuth.TokenFile != "/repo/lab/run/auth/lab-admin.token" {
		t.Errorf("tenant1 pulsarAuth %+v", tc.PulsarAuth)
	}
	for _, pub := range []string{"", Tenant} {
		if got := c.TenantConfig(pub); got.Tenant != Tenant || got.KafkaAuth.SASL.Username != Tenant {
			t.Errorf("TenantConfig(%q) = tenant %q, username %q; want the lab's own", pub, got.Tenant, got.KafkaAuth.SASL.Username)
		}
	}
	if DefaultClusters()[0].TenantKafkaAuth("tenant1") != nil {
		t.Error("a lab without auth has tenant credentials")
	}
	for _, tc := range []struct{ tenant, full, short string }{
		{"", "persistent://public/default/topic-1", "topic-1"},
		{"tenant1", "persistent://tenant1/default/topic-1", "topic-1"},
		{"tenant1", "persistent://public/default/topic-1", "public/default/topic-1"},
	} {
		if got := KafkaTopicOf(tc.tenant, tc.full); got != tc.short {
			t.Errorf("KafkaTopicOf(%q, %q) = %q, want %q", tc.tenant, tc.full, got, tc.short)
		}
		if got := fullTopicOf(tc.tenant, tc.short); got != tc.full {
			t.Errorf("fullTopicOf(%q, %q) = %q, want %q", tc.tenant, tc.short, got, tc.full)
		}
	}
	if OffsetsTopicOf("") != OffsetsTopic || OffsetsTopicOf("tenant2") != "persistent://tenant2/__kafka/__consumer_offsets" {
		t.Errorf("offsets topics %q %q", OffsetsTopicOf(""), OffsetsTopicOf("tenant2"))
	}
}

// The config.yaml of a lab with tenants is what kop-offsets loads: one scope per tenant on
// both clusters, each with the tenant's own Kafka credentials and the superuser's admin ones.
func TestRenderCLIConfigTenants(t *testing.T) {
	t.Setenv("KOP_LAB_PORT_OFFSET", "")
	cs := withAuth(DefaultClusters(), Paths{Root: "/repo"}, AuthToken)
	out, err := RenderCLIConfig(cs, DefaultPulsarVersion, KoPStatus{Enabled: true, Version: "3.1.1.1"}, TenantNames(2)...)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "tenant: public") || !strings.Contains(string(out), "# Tenants tenant1, tenant2 (kop-lab up --tenants 2)") {
		t.Errorf("config.yaml:\n%s", out)
	}
	cfg, err := config.Parse(out, "config.yaml")
	if err != nil {
		t.Fatalf("kop-offsets rejects the tenants lab's config.yaml: %v\n%s", err, out)
	}
	if !cfg.MultiTenant() {
		t.Error("config is not multi-tenant")
	}
	scopes, errs := config.Scopes(cfg.Clusters, nil, nil)
	if len(errs) > 0 || len(scopes) != 2 {
		t.Fatalf("scopes %+v, errors %v", scopes, errs)
	}
	for i, sc := range scopes {
		want := TenantNames(2)[i]
		if sc.Tenant != want || len(sc.Clusters) != 2 {
			t.Errorf("scope %d: tenant %q on %d clusters, want %s on 2", i, sc.Tenant, len(sc.Clusters), want)
			continue
		}
		for _, cl := range sc.Clusters {
			sasl := cl.KafkaAuth.SASL
			if cl.Tenant != want || cl.KafkaNamespace != want+"/default" || sasl.Username != want ||
				sasl.Password != config.Secret("file:/repo/lab/run/auth/"+want+"-client.kafka-password") {
				t.Errorf("%s on %s: tenant %q, kafkaNamespace %q, sasl %+v", want, cl.Name, cl.Tenant, cl.KafkaNamespace, sasl)
			}
			if cl.PulsarAuth == nil || cl.PulsarAuth.TokenFile != "/repo/lab/run/auth/lab-admin.token" {
				t.Errorf("%s on %s: pulsarAuth %+v, want the superuser's", want, cl.Name, cl.PulsarAuth)
			}
		}
	}

	// Without tenants the file is the lab's as always: tenant public, no tenants key.
	plain, err := RenderCLIConfig(cs, DefaultPulsarVersion, KoPStatus{Enabled: true, Version: "3.1.1.1"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(plain), "tenant: public") || strings.Contains(string(plain), "tenants:") || strings.Contains(string(plain), "# Tenants") {
		t.Errorf("config.yaml without tenants:\n%s", plain)
	}
}

// Each tenant's token is a JWT of its own role under the lab's key, written once and kept.
func TestEnsureTenantTokens(t *testing.T) {
	f := authFiles(Paths{Root: t.TempDir()})
	if err := GenerateAuthFiles(f, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := ensureTenantTokens(f, TenantNames(2)); err != nil {
		t.Fatal(err)
	}
	key, _ := os.ReadFile(f.SecretKey)
	first := map[string]string{}
	for _, tn := range TenantNames(2) {
		tf := tenantFiles(f, tn)
		if tf.Token != filepath.Join(f.Dir, tn+"-client.token") {
			t.Errorf("%s token file %s", tn, tf.Token)
		}
		for _, path := range []string{tf.Token, tf.KafkaPassword} {
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: %v %v", path, fi, err)
			}
		}
		tok, _ := os.ReadFile(tf.Token)
		pw, _ := os.ReadFile(tf.KafkaPassword)
		if string(pw) != "token:"+string(tok) {
			t.Errorf("%s: kafka password is not token:<jwt>", tn)
		}
		var claims jwt.RegisteredClaims
		parsed, err := jwt.ParseWithClaims(string(tok), &claims, func(*jwt.Token) (any, error) { return key, nil },
			jwt.WithValidMethods([]string{"HS256"}))
		if err != nil || !parsed.Valid || claims.Subject != TenantRole(tn) {
			t.Errorf("%s token: %+v %v", tn, claims, err)
		}
		first[tn] = string(tok)
	}
	// A second Up keeps them (a running lab's clients hold them).
	if err := ensureTenantTokens(f, TenantNames(3)); err != nil {
		t.Fatal(err)
	}
	for tn, tok := range first {
		if b, _ := os.ReadFile(tenantFiles(f, tn).Token); string(b) != tok {
			t.Errorf("%s token replaced", tn)
		}
	}
	if _, err := os.Stat(tenantFiles(f, "tenant3").Token); err != nil {
		t.Errorf("tenant3 token: %v", err)
	}
}

func TestStateKeepsTenants(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	if err := WriteState(path, &State{PulsarVersion: "4.0.8", Auth: AuthToken, Tenants: TenantNames(2)}); err != nil {
		t.Fatal(err)
	}
	st, err := ReadState(path)
	if err != nil || !slices.Equal(st.Tenants, TenantNames(2)) {
		t.Errorf("state tenants %v, %v", st.Tenants, err)
	}
}
