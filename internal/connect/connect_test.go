package connect

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kop-offsets/kop-offsets/internal/config"
)

func TestNotConfigured(t *testing.T) {
	cl := config.Cluster{Name: "a"}
	_, err1 := PulsarClientOptions(cl, Options{})
	_, err2 := NewAdminClient(cl, Options{})
	_, err3 := KafkaOpts(cl, Options{})
	for i, err := range []error{err1, err2, err3} {
		var ce *config.Error
		if !errors.As(err, &ce) || !errors.Is(err, ErrNotConfigured) || ce.Cluster != "a" {
			t.Errorf("%d: %v", i, err)
		}
	}
	if !strings.Contains(err1.Error(), `cluster "a": serviceURL: is not configured`) {
		t.Errorf("message %q", err1)
	}
}

// TestNotConfiguredFlags: the ad-hoc cluster lacks a flag, not a config field.
func TestNotConfiguredFlags(t *testing.T) {
	cl := config.Cluster{Name: "h:1", AdminURL: "http://h:1", FromFlags: true}
	_, err := PulsarClientOptions(cl, Options{})
	if !errors.Is(err, ErrNotConfigured) || err.Error() != "config: --service-url: is not given (the command needs it)" {
		t.Errorf("service: %v", err)
	}
	if _, err := KafkaOpts(cl, Options{}); err == nil || !strings.Contains(err.Error(), "--bootstrap: is not given") {
		t.Errorf("kafka: %v", err)
	}
}

func TestOptionsNormalize(t *testing.T) {
	o := Options{}.Normalize()
	if o.DialTimeout != 5*time.Second || o.RequestTimeout != 15*time.Second || o.Logger == nil {
		t.Errorf("%+v", o)
	}
	o = Options{RequestTimeout: 2 * time.Second}.Normalize()
	if o.DialTimeout != 2*time.Second {
		t.Errorf("dial timeout not capped: %v", o.DialTimeout)
	}
}

func TestPulsarClientOptions(t *testing.T) {
	t.Setenv("KOP_T_TOKEN", "jwt")
	cl := config.Cluster{Name: "a", ServiceURL: "pulsar+ssl://h:6651",
		PulsarAuth: &config.PulsarAuth{Token: "env:KOP_T_TOKEN", TLS: &config.TLS{CAFile: "/ca.pem", CertFile: "/c", KeyFile: "/k"}}}
	o, err := PulsarClientOptions(cl, Options{RequestTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if o.URL != cl.ServiceURL || o.Authentication == nil || o.TLSTrustCertsFilePath != "/ca.pem" || !o.TLSValidateHostname ||
		o.TLSCertificateFile != "/c" || o.ConnectionTimeout != 3*time.Second || o.OperationTimeout != 3*time.Second {
		t.Errorf("%+v", o)
	}
	cl.PulsarAuth.Token = "env:KOP_T_UNSET_TOKEN"
	_, err = PulsarClientOptions(cl, Options{})
	if !errors.Is(err, config.ErrSecret) || !strings.Contains(err.Error(), `cluster "a": pulsarAuth.token`) {
		t.Errorf("err %v", err)
	}
	// Client certificate alone: Pulsar TLS authentication.
	cl.PulsarAuth = &config.PulsarAuth{TLS: &config.TLS{CertFile: "/c", KeyFile: "/k"}}
	o, err = PulsarClientOptions(cl, Options{})
	if err != nil || o.Authentication == nil || o.TLSCertificateFile != "" {
		t.Errorf("tls auth: %+v %v", o, err)
	}
	// OAuth2 client credentials.
	cl.PulsarAuth = &config.PulsarAuth{OAuth2: &config.OAuth2{IssuerURL: "https://issuer", PrivateKey: "/key.json", Audience: "aud"}}
	o, err = PulsarClientOptions(cl, Options{})
	if err != nil || o.Authentication == nil {
		t.Errorf("oauth2: %+v %v", o, err)
	}
}

func adminServer(t *testing.T, wantAuth string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != wantAuth {
			http.Error(w, "bad auth "+got, http.StatusUnauthorized)
			return
		}
		if r.URL.Path != "/admin/v2/clusters" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`["scus","wus"]`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestAdminToken(t *testing.T) {
	srv := adminServer(t, "Bearer literal-jwt")
	cl := config.Cluster{Name: "a", AdminURL: srv.URL + "/", PulsarAuth: &config.PulsarAuth{Token: "literal-jwt"}}
	c, err := NewAdminClient(cl, Options{})
	if err != nil {
		t.Fatal(err)
	}
	names, err := c.Clusters().ListWithContext(context.Background())
	if err != nil || strings.Join(names, ",") != "scus,wus" {
		t.Fatalf("%v %v", names, err)
	}
}

func TestAdminTokenFileReadPerRequest(t *testing.T) {
	srv := adminServer(t, "Bearer second")
	path := filepath.Join(t.TempDir(), "token")
	_ = os.WriteFile(path, []byte("first\n"), 0o600)
	hc, base, err := AdminHTTPClient(config.Cluster{Name: "a", AdminURL: srv.URL, PulsarAuth: &config.PulsarAuth{TokenFile: path}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(base + "/admin/v2/clusters")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("first token accepted: %d", resp.StatusCode)
	}
	_ = os.WriteFile(path, []byte("second\n"), 0o600) // rotated
	resp, err = hc.Get(base + "/admin/v2/clusters")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("rotated token not used: %d", resp.StatusCode)
	}
}

func TestAdminBadCA(t *testing.T) {
	cl := config.Cluster{Name: "a", AdminURL: "https://h", PulsarAuth: &config.PulsarAuth{TLS: &config.TLS{CAFile: "/nonexistent/ca.pem"}}}
	_, err := NewAdminClient(cl, Options{})
	var ce *config.Error
	if !errors.As(err, &ce) || ce.Field != "pulsarAuth.tls.caFile" {
		t.Fatalf("err %v", err)
	}
}

func TestKafkaSASLPlainTokenPassword(t *testing.T) {
	// KoP's token authentication: PLAIN, username the tenant, password "token:<jwt>".
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("PLAIN", "public", "token:jwt"))
	if err != nil {
		t.Fatal(err)
	}
	defer kf.Close()
	t.Setenv("KOP_T_PW", "token:jwt")
	cl := config.Cluster{Name: "a", KafkaBootstrap: kf.ListenAddrs(),
		KafkaAuth: &config.KafkaAuth{SASL: &config.SASL{Mechanism: config.MechanismPlain, Username: "public", Password: "env:KOP_T_PW"},
			TLS: &config.TLS{}}} // an all-empty tls block leaves TLS off
	c, err := NewKafkaClient(cl, Options{RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(c).BrokerMetadata(ctx); err != nil {
		t.Fatalf("metadata with SASL PLAIN: %v", err)
	}

	// A wrong password fails.
	cl.KafkaAuth.SASL.Password = "token:other"
	c2, err := NewKafkaClient(cl, Options{RequestTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := kadm.NewClient(c2).BrokerMetadata(ctx); err == nil {
		t.Fatal("wrong password accepted")
	}
}

func TestKafkaScramOpts(t *testing.T) {
	for _, m := range []string{config.MechanismScramSHA256, config.MechanismScramSHA512} {
		cl := config.Cluster{Name: "a", KafkaBootstrap: []string{"h:1"},
			KafkaAuth: &config.KafkaAuth{SASL: &config.SASL{Mechanism: m, Username: "u", Password: "p"}, TLS: &config.TLS{InsecureSkipVerify: true}}}
		opts, err := KafkaOpts(cl, Options{})
		if err != nil || len(opts) < 8 {
			t.Errorf("%s: %d opts, %v", m, len(opts), err)
		}
	}
}
