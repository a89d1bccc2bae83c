package commands

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kop-offsets/kop-offsets/internal/commands/factory"
	"github.com/kop-offsets/kop-offsets/internal/commands/root"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
)

type result struct {
	code        int
	out, errOut string
}

// run runs the CLI in-process with env as the whole environment.
func run(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	if env == nil {
		env = map[string]string{}
	}
	if _, ok := env["XDG_CONFIG_HOME"]; !ok {
		env["XDG_CONFIG_HOME"] = t.TempDir() // no config there
	}
	f := factory.NewWithEnv("1.2.3", ios, func(k string) string { return env[k] })
	code := Run(context.Background(), f, root.NewCmdRoot(f), args)
	return result{code, out.String(), errOut.String()}
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const twoClusters = `clusters:
  - name: scus
    adminURL: http://127.0.0.1:18080
    serviceURL: pulsar://127.0.0.1:16650
    kafkaBootstrap: [127.0.0.1:19092]
    pulsarAuth:
      token: very-secret-jwt
    kafkaAuth:
      sasl: {mechanism: plain, username: public, password: "token:very-secret-jwt"}
  - name: wus
    adminURL: http://127.0.0.1:28080
    tenant: kop
    pulsarAuth:
      token: env:PULSAR_TOKEN
`

func TestExitCodes(t *testing.T) {
	cfg := writeConfig(t, twoClusters)
	bad := writeConfig(t, "clusters:\n  - name: a\n    adminURL: http://h:1\n    colour: blue\n")
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		code    int
		stderr  string
		noHint  bool
		nothing bool // nothing on stdout
	}{
		{name: "help", args: []string{"--help"}, code: 0},
		{name: "unknown command", args: []string{"bogus"}, code: 2, stderr: `unknown command "bogus"`},
		{name: "unknown flag", args: []string{"version", "--bogus"}, code: 2, stderr: "unknown flag: --bogus"},
		{name: "unknown subcommand", args: []string{"config", "bogus"}, code: 2, stderr: `unknown command "bogus" for "kop-offsets config" (its commands: check, view)`, nothing: true},
		{name: "unknown sync subcommand", args: []string{"sync", "bogus"}, code: 2, stderr: `unknown command "bogus" for "kop-offsets sync"`, nothing: true},
		{name: "unknown help topic", args: []string{"help", "bogus"}, code: 2, stderr: `unknown command "bogus" for "kop-offsets"`, nothing: true},
		{name: "unknown nested help topic", args: []string{"help", "config", "bogus"}, code: 2, stderr: `unknown command "bogus" for "kop-offsets config"`, nothing: true},
		{name: "group without subcommand", args: []string{"config"}, code: 0},
		{name: "help topic", args: []string{"help", "config", "view"}, code: 0},
		{name: "repair-only flag without --repair", args: []string{"watch", "--cooldown", "1m"}, code: 2, stderr: "--cooldown only applies with --repair", nothing: true},
		// -o json: stdout is the error document (TestEveryCommand validates it).
		{name: "deprecation notice on stderr", args: []string{"--config", "/nonexistent/k.yaml", "check", "--verify-alignment", "-o", "json"}, code: 2,
			stderr: "--verify-alignment has been deprecated"},
		{name: "prometheus file in a missing directory", args: []string{"--config", cfg, "--cluster", "scus", "check", "--prometheus-file", "/nonexistent/dir/k.prom"}, code: 2,
			stderr: "nothing was contacted", nothing: true},
		{name: "named audit trail missing", args: []string{"history", "--file", "/nonexistent/audit.jsonl"}, code: 2, stderr: "does not exist (--file)", nothing: true},
		{name: "bad flag value", args: []string{"--timeout", "soon", "version"}, code: 2, stderr: `invalid argument "soon"`},
		{name: "zero timeout", args: []string{"--timeout", "0s", "version"}, code: 2, stderr: "--timeout must be positive"},
		{name: "extra argument", args: []string{"version", "extra"}, code: 2, stderr: `unexpected argument "extra"`},
		{name: "completion without shell", args: []string{"completion"}, code: 2, stderr: "completion needs one shell"},
		{name: "bad output format", args: []string{"version", "-o", "xml"}, code: 2, stderr: `invalid output format "xml"`},
		{name: "ndjson not for version", args: []string{"version", "-o", "ndjson"}, code: 2},
		{name: "missing config", args: []string{"config", "view"}, code: 2, stderr: "file not found", noHint: true},
		{name: "config from env", env: map[string]string{"KOP_OFFSETS_CONFIG": cfg}, args: []string{"config", "view", "-o", "json"}, code: 0},
		{name: "invalid config", args: []string{"--config", bad, "config", "view"}, code: 2, stderr: `cluster "a": line 4: unknown field "colour"`},
		{name: "unknown cluster", args: []string{"--config", cfg, "--cluster", "scus,eus", "config", "check"}, code: 2,
			stderr: `unknown cluster "eus" (known: scus, wus)`, nothing: true},
		{name: "config and ad-hoc", args: []string{"--config", cfg, "--admin-url", "http://h:1", "config", "view"}, code: 2,
			stderr: "--config cannot be combined"},
		{name: "bad ad-hoc url", args: []string{"--admin-url", "h:1", "config", "view"}, code: 2, stderr: `cluster "default": adminURL`},
		{name: "unresolvable secret", args: []string{"--config", cfg, "--cluster", "wus", "config", "check"}, code: 2,
			stderr: `cluster "wus": pulsarAuth.token: secret cannot be resolved: environment variable PULSAR_TOKEN is not set`, nothing: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, tt.env, tt.args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.code, r.out, r.errOut)
			}
			if tt.stderr != "" && !strings.Contains(r.errOut, tt.stderr) {
				t.Errorf("stderr %q lacks %q", r.errOut, tt.stderr)
			}
			if tt.noHint && strings.Contains(r.errOut, "--help") {
				t.Errorf("config error with usage hint: %q", r.errOut)
			}
			if tt.nothing && r.out != "" {
				t.Errorf("stdout not empty: %q", r.out)
			}
		})
	}
}

func TestConfigViewGolden(t *testing.T) {
	cfg := writeConfig(t, twoClusters)
	for _, format := range []string{"yaml", "json", "table"} {
		r := run(t, nil, "--config", cfg, "config", "view", "-o", format)
		if r.code != 0 {
			t.Fatalf("%s: exit %d: %s", format, r.code, r.errOut)
		}
		if strings.Contains(r.out, "very-secret-jwt") {
			t.Fatalf("%s: secret printed:\n%s", format, r.out)
		}
		clitest.Golden(t, "testdata/config-view."+format+".golden", []byte(r.out))
	}
	// Default yaml; the selection applies.
	r := run(t, nil, "--config", cfg, "--cluster", "wus", "config", "view")
	if !strings.HasPrefix(r.out, "clusters:\n  - name: wus\n") || strings.Contains(r.out, "scus") {
		t.Errorf("selection/default format:\n%s", r.out)
	}
}

func TestVersion(t *testing.T) {
	r := run(t, nil, "version", "-o", "json")
	var v struct {
		Version   string `json:"version"`
		GoVersion string `json:"goVersion"`
	}
	if err := json.Unmarshal([]byte(r.out), &v); err != nil || v.Version == "" || v.GoVersion == "" {
		t.Fatalf("%q %v", r.out, err)
	}
	r = run(t, nil, "version")
	if !strings.HasPrefix(r.out, "kop-offsets version ") {
		t.Errorf("%q", r.out)
	}
	// --version prints the line `version` prints (issue 32: they differed).
	if f := run(t, nil, "--version"); f.out != r.out || f.code != 0 {
		t.Errorf("--version %q (exit %d), version %q", f.out, f.code, r.out)
	}
}

func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		r := run(t, nil, "completion", sh)
		if r.code != 0 || !strings.Contains(r.out, "kop-offsets") {
			t.Errorf("%s: exit %d, %d bytes", sh, r.code, len(r.out))
		}
	}
	r := run(t, nil, "completion", "tcsh")
	if r.code != 2 {
		t.Errorf("tcsh: exit %d", r.code)
	}
}

func TestEveryCommandHasHelp(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	f := factory.NewWithEnv("x", ios, func(string) string { return "" })
	rootCmd := root.NewCmdRoot(f)
	for _, c := range append(rootCmd.Commands(), rootCmd) {
		cmds := append(c.Commands(), c)
		for _, c := range cmds {
			if c.Name() == "help" || c.Hidden {
				continue
			}
			if c.Short == "" || c.Long == "" || c.Example == "" {
				t.Errorf("%s: Short, Long and Example are required", c.CommandPath())
			}
			if strings.HasSuffix(c.Short, ".") || strings.Contains(c.Short, "\n") {
				t.Errorf("%s: Short is one line without a period", c.CommandPath())
			}
		}
	}
}

// TestConfigCheckEndpoints runs `config check` for real: admin against httptest, Kafka
// against kfake, the binary protocol against a closed port (the failure path).
func TestConfigCheckEndpoints(t *testing.T) {
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/admin/v2/clusters" || r.Header.Get("Authorization") != "Bearer jwt" {
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		_, _ = w.Write([]byte(`["scus","wus"]`))
	}))
	defer admin.Close()
	kf, err := kfake.NewCluster(kfake.NumBrokers(2), kfake.ClusterID("kfake-1"))
	if err != nil {
		t.Fatal(err)
	}
	defer kf.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	_ = l.Close()

	cfg := writeConfig(t, `clusters:
  - name: lab
    adminURL: `+admin.URL+`
    serviceURL: pulsar://`+closed+`
    kafkaBootstrap: [`+strings.Join(kf.ListenAddrs(), ", ")+`]
    pulsarAuth: {token: "env:T_TOKEN"}
  - name: adminonly
    adminURL: `+admin.URL+`
    pulsarAuth: {token: "jwt"}
`)
	env := map[string]string{}
	t.Setenv("T_TOKEN", "jwt")
	r := run(t, env, "--config", cfg, "--timeout", "2s", "config", "check", "-o", "json")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3\n%s\n%s", r.code, r.out, r.errOut)
	}
	var doc struct {
		SchemaVersion int `json:"schemaVersion"`
		Endpoints     []struct {
			Cluster, Endpoint, Status, Error, Detail string
			LatencyMs                                *float64
		} `json:"endpoints"`
		Summary  map[string]int `json:"summary"`
		ExitCode int            `json:"exitCode"`
	}
	if err := json.Unmarshal([]byte(r.out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, r.out)
	}
	got := map[string]string{}
	for _, e := range doc.Endpoints {
		got[e.Cluster+"/"+e.Endpoint] = e.Status
		if e.Status == "failed" && e.Error == "" {
			t.Errorf("%s/%s failed without an error", e.Cluster, e.Endpoint)
		}
		if e.Status != "not_configured" && e.LatencyMs == nil {
			t.Errorf("%s/%s has no latency", e.Cluster, e.Endpoint)
		}
		if e.Cluster == "lab" && e.Endpoint == "kafka" && e.Detail != "2 brokers, cluster id kfake-1" {
			t.Errorf("kafka detail %q", e.Detail)
		}
	}
	want := map[string]string{
		"lab/admin": "ok", "lab/pulsar": "failed", "lab/kafka": "ok",
		"adminonly/admin": "ok", "adminonly/pulsar": "not_configured", "adminonly/kafka": "not_configured",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	if doc.SchemaVersion != 1 || doc.ExitCode != 3 || doc.Summary["ok"] != 3 || doc.Summary["failed"] != 1 {
		t.Errorf("doc %+v", doc)
	}

	// Only the reachable endpoints: exit 0, table piped = tab-separated rows under the
	// header line; --no-headers drops it.
	r = run(t, env, "--config", cfg, "--cluster", "adminonly", "config", "check")
	if r.code != 0 || !strings.HasPrefix(r.out, "CLUSTER\tENDPOINT\tURL\tSTATUS\tLATENCY\tDETAIL\nadminonly\tadmin\t"+admin.URL+"\tok\t") {
		t.Errorf("exit %d\n%q\n%s", r.code, r.out, r.errOut)
	}
	r = run(t, env, "--config", cfg, "--cluster", "adminonly", "--no-headers", "config", "check")
	if r.code != 0 || !strings.HasPrefix(r.out, "adminonly\tadmin\t"+admin.URL+"\tok\t") {
		t.Errorf("--no-headers: exit %d\n%q\n%s", r.code, r.out, r.errOut)
	}
}
