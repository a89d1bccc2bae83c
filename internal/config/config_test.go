package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseDocsExample(t *testing.T) {
	// The example of docs/config.md shows every field, including the three alternative
	// Pulsar credentials (token, tokenFile, oauth2) at once: that is ambiguous and rejected.
	b, err := os.ReadFile("testdata/docs-example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Parse(b, "docs")
	if err == nil || !strings.Contains(err.Error(), `cluster "scus": pulsarAuth: token, tokenFile and oauth2 are mutually exclusive`) {
		t.Fatalf("docs example: %v", err)
	}
	// With one credential kind it is valid as written.
	var kept []string
	skip := 0
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		indent := len(line) - len(strings.TrimLeft(line, " "))
		if skip > 0 && indent > skip {
			continue
		}
		skip = 0
		if strings.HasPrefix(trimmed, "tokenFile:") {
			continue
		}
		if strings.HasPrefix(trimmed, "oauth2:") {
			skip = indent
			continue
		}
		kept = append(kept, line)
	}
	cfg, err := Parse([]byte(strings.Join(kept, "\n")), "docs")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(Names(cfg.Clusters), ","); got != "scus,wus" {
		t.Fatalf("names %q", got)
	}
	scus, wus := cfg.Clusters[0], cfg.Clusters[1]
	if scus.PulsarAuth == nil || scus.PulsarAuth.Token != "env:PULSAR_TOKEN" || scus.PulsarAuth.TLS.CAFile != "/etc/pulsar/ca.pem" ||
		scus.KafkaAuth.SASL.Mechanism != "PLAIN" || scus.KafkaAuth.SASL.Password != "env:KOP_PASSWORD" || scus.KafkaAuth.TLS == nil {
		t.Fatalf("auth not parsed: %+v", scus)
	}
	if wus.Tenant != "public" || wus.MetadataNamespace != "__kafka" || wus.KafkaNamespace != "public/default" {
		t.Fatalf("defaults not applied: %+v", wus)
	}
	if got := wus.OffsetsTopic(); got != "persistent://public/__kafka/__consumer_offsets" {
		t.Fatalf("offsets topic %q", got)
	}
	if got := wus.OffsetsPartitionTopic(7); got != "persistent://public/__kafka/__consumer_offsets-partition-7" {
		t.Fatalf("partition topic %q", got)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // substrings of the error
	}{
		{"empty", ``, []string{"file is empty"}},
		{"no clusters", "clusters: []\n", []string{"no clusters defined"}},
		{"unknown top-level field", "clusters: []\ncontexts: []\n", []string{`unknown field "contexts"`}},
		{"unknown cluster field", "clusters:\n  - name: a\n    adminURL: http://h:1\n  - name: b\n    adminUrl: http://h:1\n",
			[]string{`cluster "b"`, `line 5: unknown field "adminUrl"`}},
		{"unknown nested field", "clusters:\n  - name: a\n    adminURL: http://h:1\n    pulsarAuth:\n      tokn: x\n",
			[]string{`cluster "a"`, `unknown field "tokn"`}},
		{"wrong type", "clusters:\n  - name: a\n    kafkaBootstrap: h:1\n", []string{`cluster "a"`, "line 3"}},
		{"missing name", "clusters:\n  - adminURL: http://h:1\n", []string{`cluster #1: name: is required`}},
		{"bad name", "clusters:\n  - name: Bad_Name\n    adminURL: http://h:1\n", []string{`cluster #1: name: "Bad_Name" must match`}},
		{"duplicate names", "clusters:\n  - name: a\n    adminURL: http://h:1\n  - name: a\n    adminURL: http://h:2\n",
			[]string{`cluster "a": name: duplicate name (also cluster #1)`}},
		{"bad pulsarCluster", "clusters:\n  - name: a\n    adminURL: http://h:1\n    pulsarCluster: 'a b'\n", []string{`cluster "a": pulsarCluster: "a b" is not a Pulsar cluster name`}},
		{"duplicate Pulsar names", "clusters:\n  - name: a\n    adminURL: http://h:1\n    pulsarCluster: b\n  - name: b\n    adminURL: http://h:2\n",
			[]string{`cluster "b": pulsarCluster: Pulsar cluster name "b" is also cluster #1's`}},
		{"no endpoint", "clusters:\n  - name: a\n", []string{`cluster "a": needs at least one of adminURL`}},
		{"bad admin url", "clusters:\n  - name: a\n    adminURL: pulsar://h:1\n", []string{`cluster "a": adminURL: "pulsar://h:1" must start with http:// or https://`}},
		// yaml.v3 numbers its parser's lines from 0: each is the line the problem is on.
		{"flow sequence without a comma", "clusters: [\n  {name: a},\n  {name: b}\n  {name: c}\n]\n",
			[]string{"line 4: did not find expected ',' or ']'"}},
		{"flow sequence not closed", "clusters: [ {name: a},\n  {name: b},\n  {name: c}\n",
			[]string{"line 4: did not find expected ',' or ']'"}},
		{"flow mapping not closed", "clusters: [ {name: a},\n  {name: b},\n  {name: c, adminURL: http://h:1\n]\n",
			[]string{"line 3: did not find expected ',' or '}'"}},
		{"scanner error", "clusters: [ {name: a},\n  {name: b},\n  {name: \"c}\n]\n", []string{"line 3: found unexpected end of stream"}},
		{"unknown field in a flow sequence", "clusters: [ {name: a, adminURL: http://h:1},\n  {name: b, adminUrl: http://h:1} ]\n",
			[]string{`cluster "b": line 2: unknown field "adminUrl"`}},
		{"admin url without scheme", "clusters:\n  - name: a\n    adminURL: 127.0.0.1:8080\n",
			[]string{`cluster "a": adminURL: "127.0.0.1:8080" has no scheme: write http://127.0.0.1:8080`}},
		{"admin host without scheme", "clusters:\n  - name: a\n    adminURL: broker:8080\n",
			[]string{`cluster "a": adminURL: "broker:8080" has no scheme: write http://broker:8080`}},
		{"service url without scheme", "clusters:\n  - name: a\n    serviceURL: 127.0.0.1:6650\n",
			[]string{`cluster "a": serviceURL: "127.0.0.1:6650" has no scheme: write pulsar://127.0.0.1:6650`}},
		{"bad service url", "clusters:\n  - name: a\n    serviceURL: http://h:1\n", []string{`serviceURL: "http://h:1" must start with pulsar:// or pulsar+ssl://`}},
		{"bad bootstrap", "clusters:\n  - name: a\n    kafkaBootstrap: [h, 'h:x']\n", []string{`kafkaBootstrap[0]: "h" must be host:port`, `kafkaBootstrap[1]: "h:x" has an invalid port`}},
		{"bad kafka namespace", "clusters:\n  - name: a\n    adminURL: http://h:1\n    kafkaNamespace: default\n", []string{`kafkaNamespace: "default" must be <tenant>/<namespace>`}},
		{"bad metadata namespace", "clusters:\n  - name: a\n    adminURL: http://h:1\n    metadataNamespace: public/__kafka\n", []string{`metadataNamespace: "public/__kafka" must be a namespace name`}},
		{"bad env ref", "clusters:\n  - name: a\n    adminURL: http://h:1\n    pulsarAuth: {token: 'env:'}\n", []string{`pulsarAuth.token: invalid secret reference "env:"`}},
		{"bad env name", "clusters:\n  - name: a\n    adminURL: http://h:1\n    pulsarAuth: {token: 'env:A-B'}\n", []string{`invalid secret reference "env:A-B"`}},
		{"bad file ref", "clusters:\n  - name: a\n    kafkaBootstrap: [h:1]\n    kafkaAuth: {sasl: {mechanism: PLAIN, username: u, password: 'file:'}}\n", []string{`kafkaAuth.sasl.password: invalid secret reference "file:"`}},
		{"exclusive auth", "clusters:\n  - name: a\n    adminURL: http://h:1\n    pulsarAuth: {token: x, tokenFile: /t}\n", []string{`pulsarAuth: token, tokenFile and oauth2 are mutually exclusive`}},
		{"oauth2 incomplete", "clusters:\n  - name: a\n    adminURL: http://h:1\n    pulsarAuth: {oauth2: {audience: x}}\n", []string{`pulsarAuth.oauth2.issuerURL: is required`, `pulsarAuth.oauth2.privateKey: is required`}},
		{"bad mechanism", "clusters:\n  - name: a\n    kafkaBootstrap: [h:1]\n    kafkaAuth: {sasl: {mechanism: GSSAPI, username: u, password: p}}\n", []string{`kafkaAuth.sasl.mechanism: "GSSAPI" must be PLAIN`}},
		{"sasl incomplete", "clusters:\n  - name: a\n    kafkaBootstrap: [h:1]\n    kafkaAuth: {sasl: {mechanism: plain}}\n", []string{`kafkaAuth.sasl.username: is required`, `kafkaAuth.sasl.password: is required`}},
		{"tls half pair", "clusters:\n  - name: a\n    kafkaBootstrap: [h:1]\n    kafkaAuth: {tls: {certFile: /c}}\n", []string{`kafkaAuth.tls: certFile and keyFile go together`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), "/etc/k.yaml")
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error does not match ErrInvalid: %T %v", err, err)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Errorf("not a *config.Error: %T", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\n does not contain %q", err, w)
				}
			}
			if !strings.HasPrefix(err.Error(), "config /etc/k.yaml") {
				t.Errorf("error does not name the file: %q", err)
			}
		})
	}
}

func TestMechanismNormalised(t *testing.T) {
	cfg, err := Parse([]byte("clusters:\n  - name: a\n    kafkaBootstrap: [h:1]\n    kafkaAuth: {sasl: {mechanism: scram-sha-512, username: u, password: p}}\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	if m := cfg.Clusters[0].KafkaAuth.SASL.Mechanism; m != MechanismScramSHA512 {
		t.Fatalf("mechanism %q", m)
	}
}

func TestLoadNotFound(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, ErrNotFound) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("err %v", err)
	}
}

func TestLocate(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	env["HOME"] = "/home/u"
	if got := Locate("", getenv); got != "/home/u/.config/kop-offsets/config.yaml" {
		t.Errorf("home default: %q", got)
	}
	env["XDG_CONFIG_HOME"] = "/xdg"
	if got := Locate("", getenv); got != "/xdg/kop-offsets/config.yaml" {
		t.Errorf("xdg: %q", got)
	}
	env[EnvConfig] = "/env.yaml"
	if got := Locate("", getenv); got != "/env.yaml" {
		t.Errorf("env: %q", got)
	}
	if got := Locate("/flag.yaml", getenv); got != "/flag.yaml" {
		t.Errorf("flag: %q", got)
	}
}

func TestSelect(t *testing.T) {
	cfg := &Config{Path: "/c.yaml", Clusters: []Cluster{{Name: "a"}, {Name: "b"}, {Name: "c"}}}
	tests := []struct {
		in   []string
		want string
		err  string
	}{
		{nil, "a,b,c", ""},
		{[]string{"c"}, "c", ""},
		{[]string{"c,a", "b"}, "c,a,b", ""},
		{[]string{"a", "a,a"}, "a", ""},
		{[]string{" b , "}, "b", ""},
		{[]string{"a,x"}, "", `unknown cluster "x" (known: a, b, c)`},
	}
	for _, tt := range tests {
		got, err := cfg.Select(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, ErrUnknownCluster) {
				t.Errorf("Select(%q) err %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || strings.Join(Names(got), ",") != tt.want {
			t.Errorf("Select(%q) = %q, %v; want %q", tt.in, Names(got), err, tt.want)
		}
	}
}

func TestAdHoc(t *testing.T) {
	cfg, err := AdHoc("http://h:8080", "", []string{"k1:9092,k2:9092"})
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Clusters[0]
	// Named after what the user typed, and still selected by its former name "default".
	if c.Name != "h:8080" || len(c.KafkaBootstrap) != 2 || c.Tenant != "public" || cfg.Path != "" {
		t.Fatalf("%+v", c)
	}
	if got, err := cfg.Select([]string{"h:8080,default"}); err != nil || len(got) != 1 {
		t.Errorf("select: %v, %v", got, err)
	}
	for _, tt := range []struct {
		admin, service string
		bootstrap      []string
		want           string
	}{
		{"", "pulsar://p:6650", []string{"k:9092"}, "p:6650"},
		{"", "", []string{"k1:9092,k2:9092"}, "k1:9092"},
	} {
		cfg, err := AdHoc(tt.admin, tt.service, tt.bootstrap)
		if err != nil || cfg.Clusters[0].Name != tt.want {
			t.Errorf("AdHoc(%q, %q, %q): %v, %v; want %s", tt.admin, tt.service, tt.bootstrap, cfg, err, tt.want)
		}
	}
	// A bad value is named by its flag, not by a cluster the user never named.
	_, err = AdHoc("localhost:8080", "", nil)
	if err == nil || !strings.Contains(err.Error(), `--admin-url: "localhost:8080"`) || strings.Contains(err.Error(), "default") {
		t.Fatalf("err %v", err)
	}
}

func TestSecrets(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "s")
	if err := os.WriteFile(f, []byte("  file-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	_ = os.WriteFile(empty, nil, 0o600)
	t.Setenv("KOP_T_SET", "env-secret")
	t.Setenv("KOP_T_EMPTY", "")
	tests := []struct {
		s    Secret
		want string
		err  string
	}{
		{"literal", "literal", ""},
		{"token:eyJ", "token:eyJ", ""},
		{"env:KOP_T_SET", "env-secret", ""},
		{"env:KOP_T_UNSET_X", "", "environment variable KOP_T_UNSET_X is not set"},
		{"env:KOP_T_EMPTY", "", "is empty"},
		{"env:", "", "invalid secret reference"},
		{Secret("file:" + f), "file-secret", ""},
		{Secret("file:" + empty), "", "is empty"},
		{Secret("file:" + filepath.Join(dir, "none")), "", "no such file"},
		{"file:", "", "invalid secret reference"},
	}
	for _, tt := range tests {
		got, err := tt.s.Resolve()
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: err %v, want %q", tt.s, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q: %q, %v", tt.s, got, err)
		}
	}
	if s := Secret("hunter2"); s.String() != RedactedValue || strings.Contains(strings.ToLower(s.GoString()), "hunter2") {
		t.Errorf("secret printed: %s %#v", s, s)
	}
}

func TestRedacted(t *testing.T) {
	cfg, err := Parse([]byte(`clusters:
  - name: a
    adminURL: http://h:1
    kafkaBootstrap: [h:2]
    pulsarAuth: {token: supersecret, tls: {caFile: /ca}}
    kafkaAuth: {sasl: {mechanism: PLAIN, username: public, password: "token:jwt"}}
  - name: b
    adminURL: http://h:1
    kafkaBootstrap: [h:2]
    pulsarAuth: {token: "env:PULSAR_TOKEN"}
    kafkaAuth: {sasl: {mechanism: PLAIN, username: public, password: "file:/p"}}
`), "")
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Redacted()
	b, _ := r.Marshal()
	out := string(b)
	for _, bad := range []string{"supersecret", "token:jwt"} {
		if strings.Contains(out, bad) {
			t.Errorf("redacted config contains %q:\n%s", bad, out)
		}
	}
	for _, want := range []string{"token: <redacted>", "password: <redacted>", "token: env:PULSAR_TOKEN", "password: file:/p", "caFile: /ca"} {
		if !strings.Contains(out, want) {
			t.Errorf("redacted config lacks %q:\n%s", want, out)
		}
	}
	// The original is untouched (deep copy).
	if cfg.Clusters[0].PulsarAuth.Token != "supersecret" || cfg.Clusters[0].KafkaAuth.SASL.Password != "token:jwt" {
		t.Error("Redacted modified the original")
	}
}

func TestPreflight(t *testing.T) {
	t.Setenv("KOP_T_PW", "pw")
	cl := Cluster{Name: "a", PulsarAuth: &PulsarAuth{Token: "env:KOP_T_MISSING", TokenFile: "/nonexistent/token",
		TLS: &TLS{CAFile: "/nonexistent/ca"}},
		KafkaAuth: &KafkaAuth{SASL: &SASL{Mechanism: "PLAIN", Username: "u", Password: "env:KOP_T_PW"}}}
	err := cl.Preflight("/c.yaml")
	if err == nil || !errors.Is(err, ErrSecret) {
		t.Fatalf("err %v", err)
	}
	for _, w := range []string{`cluster "a": pulsarAuth.token`, "KOP_T_MISSING is not set", "pulsarAuth.tokenFile", "pulsarAuth.tls.caFile"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q lacks %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "kafkaAuth") {
		t.Errorf("kafka auth is fine: %v", err)
	}
}

func TestPulsarNames(t *testing.T) {
	c, err := Parse([]byte("clusters:\n  - name: east\n    adminURL: http://h:1\n    pulsarCluster: scus\n  - name: wus\n    adminURL: http://h:2\n"), "k.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Clusters[0].PulsarName() != "scus" || c.Clusters[1].PulsarName() != "wus" {
		t.Errorf("%+v", c.Clusters)
	}
	if m := PulsarNames(c.Clusters); len(m) != 2 || m["scus"] != "east" || m["wus"] != "wus" {
		t.Errorf("%v", m)
	}
}
