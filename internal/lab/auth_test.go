package lab

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"go.yaml.in/yaml/v3"

	"github.com/kop-offsets/kop-offsets/internal/config"
)

func TestParseAuthMode(t *testing.T) {
	for in, want := range map[string]AuthMode{"": AuthNone, "none": AuthNone, "token": AuthToken, "Token": AuthToken} {
		if got, err := ParseAuthMode(in); err != nil || got != want {
			t.Errorf("%q: %q %v", in, got, err)
		}
	}
	if _, err := ParseAuthMode("oauth2"); err == nil || !strings.Contains(err.Error(), "KOP_LAB_AUTH") {
		t.Errorf("oauth2: %v", err)
	}
}

// authKeys are the broker.conf keys only an auth lab sets.
var authKeys = []string{"authenticationEnabled", "authenticationProviders", "tokenSecretKey", "authorizationEnabled",
	"superUserRoles", "brokerClientAuthenticationPlugin", "brokerClientAuthenticationParameters", "brokerClientTlsEnabled", "brokerClientTrustCertsFilePath",
	"webServicePortTls", "brokerServicePortTls", "tlsCertificateFilePath", "tlsKeyFilePath", "tlsTrustCertsFilePath",
	"saslAllowedMechanisms"}

func TestRenderBrokerConfAuth(t *testing.T) {
	t.Setenv("KOP_LAB_PORT_OFFSET", "200")
	p := repoPaths(t)
	tmpl := readTemplate(t, p.ConfTemplate())
	render := func(c Cluster) map[string]string {
		t.Helper()
		out, err := RenderBrokerConf(tmpl, p, c, DefaultPulsarVersion, KoPStatus{Version: "3.1.1.1"})
		if err != nil {
			t.Fatal(err)
		}
		return parseConf(t, out) // fails on a key set twice
	}
	// Without auth (KoP on and off): not one auth key, the Kafka listener in plain text.
	for _, kop := range []bool{false, true} {
		c := DefaultClusters()[0]
		c.KoP = kop
		m := render(c)
		for _, k := range authKeys {
			if v, ok := m[k]; ok {
				t.Errorf("no auth, KoP %v: %s=%s", kop, k, v)
			}
		}
		if kop && m["kafkaListeners"] != "PLAINTEXT://127.0.0.1:19292" {
			t.Errorf("no auth: kafkaListeners=%s", m["kafkaListeners"])
		}
	}

	// Token auth with KoP: every key, TLS ports moved by the offset like the others.
	cs := withAuth(DefaultClusters(), p, AuthToken)
	wus := cs[1]
	wus.KoP = true
	f := authFiles(p)
	m := render(wus)
	for k, v := range map[string]string{
		"authenticationEnabled":                "true",
		"authenticationProviders":              "org.apache.pulsar.broker.authentication.AuthenticationProviderToken",
		"tokenSecretKey":                       "file://" + f.SecretKey,
		"authorizationEnabled":                 "true",
		"superUserRoles":                       SuperuserRole,
		"brokerClientAuthenticationPlugin":     "org.apache.pulsar.client.impl.auth.AuthenticationToken",
		"brokerClientAuthenticationParameters": "file://" + f.SuperuserToken,
		"brokerClientTlsEnabled":               "true",
		"brokerClientTrustCertsFilePath":       f.CACert,
		"webServicePort":                       "28280",
		"webServicePortTls":                    "28279",
		"brokerServicePort":                    "26850",
		"brokerServicePortTls":                 "26849",
		"tlsCertificateFilePath":               f.ServerCert,
		"tlsKeyFilePath":                       f.ServerKey,
		"tlsTrustCertsFilePath":                f.CACert,
		"saslAllowedMechanisms":                "PLAIN",
		"kafkaListeners":                       "SASL_PLAINTEXT://127.0.0.1:29292",
		"kafkaAdvertisedListeners":             "SASL_PLAINTEXT://127.0.0.1:29292",
	} {
		if m[k] != v {
			t.Errorf("token auth: %s=%q, want %q", k, m[k], v)
		}
	}
	// Token auth without KoP: no SASL key (nothing reads it).
	wus.KoP = false
	if v, ok := render(wus)["saslAllowedMechanisms"]; ok {
		t.Errorf("KoP off: saslAllowedMechanisms=%s", v)
	}
}

func TestAuthClusterConfigAndCLIConfig(t *testing.T) {
	t.Setenv("KOP_LAB_PORT_OFFSET", "")
	p := Paths{Root: "/repo"}
	cs := withAuth(DefaultClusters(), p, AuthToken)
	scus := cs[0].Config()
	if scus.AdminURL != "https://127.0.0.1:18079" || scus.ServiceURL != "pulsar+ssl://127.0.0.1:16649" ||
		scus.PulsarAuth.TokenFile != "/repo/lab/run/auth/lab-admin.token" || scus.PulsarAuth.TLS.CAFile != "/repo/lab/run/auth/ca.pem" ||
		scus.KafkaAuth.SASL.Mechanism != "PLAIN" || scus.KafkaAuth.SASL.Username != "public" ||
		scus.KafkaAuth.SASL.Password != "file:/repo/lab/run/auth/lab-admin.kafka-password" || scus.KafkaTLSEnabled() {
		t.Errorf("scus config %+v %+v %+v", scus, scus.PulsarAuth, scus.KafkaAuth)
	}
	// The plain lab's cluster has no auth at all.
	if plain := DefaultClusters()[0].Config(); plain.PulsarAuth != nil || plain.KafkaAuth != nil || plain.AdminURL != "http://127.0.0.1:18080" {
		t.Errorf("plain config %+v", plain)
	}

	out, err := RenderCLIConfig(cs, DefaultPulsarVersion, KoPStatus{Enabled: true, Version: "3.1.1.1"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "# Auth: token.") {
		t.Errorf("header does not name the auth mode:\n%s", out)
	}
	// What the lab writes is what kop-offsets loads and validates.
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("kop-offsets rejects the auth lab's config.yaml: %v\n%s", err, out)
	}
	if got := cfg.Clusters[1]; got.AdminURL != "https://127.0.0.1:28079" || got.PulsarAuth == nil || got.KafkaAuth == nil {
		t.Errorf("wus loaded as %+v", got)
	}
	// No secret in the file, only where the secrets are: a token file and a file: reference.
	var raw struct {
		Clusters []struct {
			PulsarAuth map[string]any `yaml:"pulsarAuth"`
		} `yaml:"clusters"`
	}
	if err := yaml.Unmarshal(out, &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw.Clusters[0].PulsarAuth["token"]; ok || raw.Clusters[0].PulsarAuth["tokenFile"] == nil {
		t.Errorf("pulsarAuth %v: want tokenFile, no token", raw.Clusters[0].PulsarAuth)
	}
}

func TestClusterRegistrationCarriesAuth(t *testing.T) {
	t.Setenv("KOP_LAB_PORT_OFFSET", "")
	plain := clusterData(DefaultClusters()[1])
	if plain.AuthenticationPlugin != "" || plain.BrokerClientTLSEnabled || plain.ServiceURLTls != "" || plain.ServiceURL != "http://127.0.0.1:28080" {
		t.Errorf("plain registration %+v", plain)
	}
	wus := withAuth(DefaultClusters(), Paths{Root: "/repo"}, AuthToken)[1]
	d := clusterData(wus)
	if d.ServiceURL != "http://127.0.0.1:28080" || d.BrokerServiceURL != "pulsar://127.0.0.1:26650" ||
		d.ServiceURLTls != "https://127.0.0.1:28079" || d.BrokerServiceURLTls != "pulsar+ssl://127.0.0.1:26649" ||
		d.AuthenticationPlugin != tokenAuthPlugin || d.AuthenticationParameters != "file:///repo/lab/run/auth/lab-admin.token" ||
		!d.BrokerClientTLSEnabled || d.BrokerClientTrustCertsFilePath != "/repo/lab/run/auth/ca.pem" {
		t.Errorf("auth registration %+v", d)
	}
	if !sameRegistration(d, d) || sameRegistration(plain, d) {
		t.Error("sameRegistration")
	}
}

func TestReusableFollowsAuthMode(t *testing.T) {
	st := &State{PulsarVersion: DefaultPulsarVersion} // written before auth modes: none
	if !reusable(st, Options{PulsarVersion: DefaultPulsarVersion, KoP: KoPAuto}) {
		t.Error("plain lab not reused for no auth")
	}
	if reusable(st, Options{PulsarVersion: DefaultPulsarVersion, KoP: KoPAuto, Auth: AuthToken}) {
		t.Error("plain lab reused for token auth")
	}
	st.Auth = AuthToken
	if !reusable(st, Options{PulsarVersion: DefaultPulsarVersion, KoP: KoPAuto, Auth: AuthToken}) {
		t.Error("token lab not reused for token auth")
	}
	if reusable(st, Options{PulsarVersion: DefaultPulsarVersion, KoP: KoPAuto, Auth: AuthNone}) {
		t.Error("token lab reused for no auth")
	}
}

func TestGenerateAuthFiles(t *testing.T) {
	f := authFiles(Paths{Root: t.TempDir()})
	now := time.Now()
	if err := GenerateAuthFiles(f, now); err != nil {
		t.Fatal(err)
	}
	if !f.complete() {
		t.Fatal("files missing")
	}
	for _, path := range f.all() {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", path, fi.Mode(), err)
		}
	}
	key, err := os.ReadFile(f.SecretKey)
	if err != nil || len(key) != 32 {
		t.Fatalf("secret key: %d bytes, %v", len(key), err)
	}
	// Each token is an HS256 JWT of its role under the secret key; the Kafka password is
	// "token:" and the same JWT.
	for role, files := range map[string][2]string{SuperuserRole: {f.SuperuserToken, f.SuperuserKafkaPassword}, UserRole: {f.UserToken, f.UserKafkaPassword}} {
		tok, _ := os.ReadFile(files[0])
		pw, _ := os.ReadFile(files[1])
		if string(pw) != "token:"+string(tok) {
			t.Errorf("%s: kafka password is not token:<jwt>", role)
		}
		var claims jwt.RegisteredClaims
		parsed, err := jwt.ParseWithClaims(string(tok), &claims, func(*jwt.Token) (any, error) { return key, nil },
			jwt.WithValidMethods([]string{"HS256"}))
		if err != nil || !parsed.Valid || claims.Subject != role || claims.ExpiresAt != nil {
			t.Errorf("%s token: %+v %v", role, claims, err)
		}
	}

	// The server certificate chains to the CA for 127.0.0.1, and a TLS server with it is
	// trusted by a client that trusts only the CA.
	caPEM, _ := os.ReadFile(f.CACert)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("CA: no certificate")
	}
	pair, err := tls.LoadX509KeyPair(f.ServerCert, f.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: Host, CurrentTime: now}); err != nil {
		t.Errorf("server certificate for %s: %v", Host, err)
	}
	if leaf.NotAfter.Before(now.Add(300 * 24 * time.Hour)) {
		t.Errorf("server certificate expires %s", leaf.NotAfter)
	}
	keyPEM, _ := os.ReadFile(f.ServerKey)
	if b, _ := pem.Decode(keyPEM); b == nil || b.Type != "PRIVATE KEY" {
		t.Error("server key is not PKCS#8 PEM (what Pulsar reads)")
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	_ = srv.Listener.Close()
	l, err := net.Listen("tcp", Host+":0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = l
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.StartTLS()
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := hc.Get(srv.URL)
	if err != nil {
		t.Fatalf("https with the lab's CA: %v", err)
	}
	_ = resp.Body.Close()

	// prepareAuth keeps complete files (a running lab's tokens stay valid).
	before, _ := os.ReadFile(f.SuperuserToken)
	if err := prepareAuth(Paths{Root: filepath.Dir(filepath.Dir(filepath.Dir(f.Dir)))}, AuthToken, os.Stderr); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(f.SuperuserToken); string(after) != string(before) {
		t.Error("prepareAuth replaced complete files")
	}
}

// TestRenderAuthBrokersOfTwoBrokerCluster: each broker of a 2-broker auth cluster has its
// own plain, TLS and SASL Kafka ports; every broker authenticates to the others (and to
// itself) with the superuser token over TLS with the lab's CA; the ZooKeeper and bookie
// keys stay the multi-broker layout's.
func TestRenderAuthBrokersOfTwoBrokerCluster(t *testing.T) {
	t.Setenv("KOP_LAB_PORT_OFFSET", "200")
	p := repoPaths(t)
	wus := withAuth(ClustersFor(Shape{Clusters: 2, Brokers: 2}), p, AuthToken)[1]
	wus.KoP = true
	f := authFiles(p)
	tmpl := readTemplate(t, p.ConfTemplate())
	for i, ports := range []struct{ web, webTLS, broker, brokerTLS, kafka int }{
		{28280, 28279, 26850, 26849, 29292},
		{28281, 28278, 26851, 26848, 29293},
	} {
		out, err := RenderBrokerConfFor(tmpl, p, wus, i, DefaultPulsarVersion, KoPStatus{Version: "3.1.1.1", HandlerDir: "/nars"})
		if err != nil {
			t.Fatal(err)
		}
		kafka := fmt.Sprintf("SASL_PLAINTEXT://127.0.0.1:%d", ports.kafka)
		want(t, fmt.Sprintf("broker-%d", i), parseConf(t, out), map[string]string{
			"clusterName":                          "wus",
			"metadataStoreUrl":                     "zk:127.0.0.1:22381",
			"loadBalancerEnabled":                  "true",
			"webServicePort":                       fmt.Sprint(ports.web),
			"webServicePortTls":                    fmt.Sprint(ports.webTLS),
			"brokerServicePort":                    fmt.Sprint(ports.broker),
			"brokerServicePortTls":                 fmt.Sprint(ports.brokerTLS),
			"authenticationEnabled":                "true",
			"authenticationProviders":              "org.apache.pulsar.broker.authentication.AuthenticationProviderToken",
			"tokenSecretKey":                       "file://" + f.SecretKey,
			"authorizationEnabled":                 "true",
			"superUserRoles":                       SuperuserRole,
			"brokerClientAuthenticationPlugin":     tokenAuthPlugin,
			"brokerClientAuthenticationParameters": "file://" + f.SuperuserToken,
			"brokerClientTlsEnabled":               "true",
			"brokerClientTrustCertsFilePath":       f.CACert,
			"tlsCertificateFilePath":               f.ServerCert,
			"tlsKeyFilePath":                       f.ServerKey,
			"tlsTrustCertsFilePath":                f.CACert,
			"saslAllowedMechanisms":                "PLAIN",
			"kafkaListeners":                       kafka,
			"kafkaAdvertisedListeners":             kafka,
			"narExtractionDirectory":               filepath.Join(p.ProcessTmp("wus", fmt.Sprintf("broker-%d", i)), "nar"),
		})
	}
}

// TestTwoBrokerAuthEndpoints: the views of each broker, the registration the other clusters
// (and the replicator) use, the cluster's own registration from PulsarClusterMetadataSetup,
// and the kop-offsets config name every broker's TLS endpoint; no port is used twice in a
// 2x2 auth lab.
func TestTwoBrokerAuthEndpoints(t *testing.T) {
	t.Setenv("KOP_LAB_PORT_OFFSET", "")
	p := Paths{Root: "/repo"}
	cs := withAuth(ClustersFor(Shape{Clusters: 2, Brokers: 2}), p, AuthToken)
	scus := cs[0]
	for i, w := range []struct{ admin, service string }{
		{"https://127.0.0.1:18079", "pulsar+ssl://127.0.0.1:16649"},
		{"https://127.0.0.1:18078", "pulsar+ssl://127.0.0.1:16648"},
	} {
		v := scus.Broker(i)
		if c := v.Config(); c.AdminURL != w.admin || c.ServiceURL != w.service || v.Auth.WebTLS == 0 {
			t.Errorf("broker %d view: %s %s, want %s %s", i, c.AdminURL, c.ServiceURL, w.admin, w.service)
		}
	}
	if scus.Auth.AdminURLTLS != "https://127.0.0.1:18079" {
		t.Errorf("the cluster's view changed with a broker's: %s", scus.Auth.AdminURLTLS)
	}

	d := clusterData(scus)
	if d.ServiceURL != "http://127.0.0.1:18080,127.0.0.1:18081" || d.BrokerServiceURL != "pulsar://127.0.0.1:16650,127.0.0.1:16651" ||
		d.ServiceURLTls != "https://127.0.0.1:18079,127.0.0.1:18078" || d.BrokerServiceURLTls != "pulsar+ssl://127.0.0.1:16649,127.0.0.1:16648" ||
		d.AuthenticationPlugin != tokenAuthPlugin || !d.BrokerClientTLSEnabled || d.BrokerClientTrustCertsFilePath != "/repo/lab/run/auth/ca.pem" {
		t.Errorf("registration of a 2-broker auth cluster: %+v", d)
	}
	args := strings.Join(MetadataSetupArgs(p, scus, DefaultPulsarVersion), " ")
	if !strings.Contains(args, "--web-service-url-tls https://127.0.0.1:18079,127.0.0.1:18078 --broker-service-url-tls pulsar+ssl://127.0.0.1:16649,127.0.0.1:16648") {
		t.Errorf("metadata setup without the TLS URLs: %s", args)
	}
	if plain := strings.Join(MetadataSetupArgs(p, ClustersFor(Shape{Clusters: 2, Brokers: 2})[0], DefaultPulsarVersion), " "); strings.Contains(plain, "-tls") {
		t.Errorf("metadata setup of a plain cluster names TLS URLs: %s", plain)
	}

	cfg, _ := parsedCLIConfig(t, cs, "the 2x2 auth lab's")
	w := cfg.Clusters[1]
	if w.AdminURL != "https://127.0.0.1:28079" || w.ServiceURL != "pulsar+ssl://127.0.0.1:26649,127.0.0.1:26648" ||
		strings.Join(w.KafkaBootstrap, ",") != "127.0.0.1:29092,127.0.0.1:29093" || w.PulsarAuth == nil || w.KafkaAuth == nil {
		t.Errorf("wus in config.yaml: %+v", w)
	}

	seen := map[int]string{}
	for _, c := range cs {
		for _, port := range c.AllPorts() {
			if o, ok := seen[port]; ok {
				t.Errorf("port %d of %s is also %s's", port, c.Name, o)
			}
			seen[port] = c.Name
		}
		if n := len(c.AllPorts()); n != 2+2*5 { // bookie, ZooKeeper; per broker web, binary, Kafka and two TLS
			t.Errorf("%s: %d ports %v", c.Name, n, c.AllPorts())
		}
		for i := 0; i < 2; i++ {
			if ps := processPorts(c, RoleBroker, i); len(ps) != 5 {
				t.Errorf("%s broker-%d: ports %v, want its TLS ports too", c.Name, i, ps)
			}
		}
	}
}

// TestAuthLabOfSeveralBrokersIsAccepted: resolving the options of --auth token --brokers 2
// keeps both (the refusal is gone) and gives every broker its TLS ports.
func TestAuthLabOfSeveralBrokersIsAccepted(t *testing.T) {
	t.Setenv("KOP_LAB_PORT_OFFSET", "")
	o, err := Options{Root: t.TempDir(), Auth: AuthToken, Shape: Shape{Clusters: 2, Brokers: 2}}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	if o.Auth != AuthToken || o.Shape.Brokers != 2 || len(o.Clusters) != 2 {
		t.Fatalf("resolved %v %v %d clusters", o.Auth, o.Shape, len(o.Clusters))
	}
	for _, b := range o.Clusters[1].Brokers {
		if b.WebTLS == 0 || b.ServiceTLS == 0 {
			t.Errorf("wus broker %d without TLS ports: %+v", b.Index, b)
		}
	}
}

func TestAuthPortsInAllPorts(t *testing.T) {
	t.Setenv("KOP_LAB_PORT_OFFSET", "")
	scus := withAuth(DefaultClusters(), Paths{Root: "/repo"}, AuthToken)[0]
	ports := map[int]bool{}
	for _, p := range scus.AllPorts() {
		ports[p] = true
	}
	if !ports[18079] || !ports[16649] || !ports[18080] || !ports[16650] {
		t.Errorf("AllPorts %v: want the TLS ports 18079, 16649 beside 18080, 16650", scus.AllPorts())
	}
	if plain := DefaultClusters()[0].AllPorts(); len(plain) != len(scus.AllPorts())-2 {
		t.Errorf("plain AllPorts %v", plain)
	}
}
