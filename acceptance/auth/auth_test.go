//go:build e2e

// Package auth runs kop-offsets end to end on the lab with token auth and TLS
// (KOP_LAB_AUTH=token, `make e2e-auth`): the commands with the lab's config.yaml, anonymous
// and no-permission clients refused, and with KoP a SASL/PLAIN client's commit seen, checked
// and reloaded. Without KOP_LAB_AUTH=token every test skips: the other e2e packages expect the
// lab without auth, and a run that mixed them would restart the lab between packages.
package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v3"

	"github.com/kop-offsets/kop-offsets/internal/commands"
	"github.com/kop-offsets/kop-offsets/internal/commands/factory"
	"github.com/kop-offsets/kop-offsets/internal/commands/root"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/connect"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

func TestMain(m *testing.M) { labtest.Main(m) }

// authLab returns the auth lab of the run, or skips the test when the run is not for it.
func authLab(t *testing.T) *lab.Lab {
	t.Helper()
	if m, err := lab.ParseAuthMode(os.Getenv("KOP_LAB_AUTH")); err != nil || m != lab.AuthToken {
		t.Skip("the auth lab's tests: run with KOP_LAB_AUTH=token (make e2e-auth)")
	}
	l := labtest.Lab(t)
	if l.Auth != lab.AuthToken {
		t.Fatalf("lab runs auth %s, want token", l.Auth)
	}
	return l
}

// runCLI runs kop-offsets in-process with --config cfg and logs what it did.
func runCLI(t *testing.T, cfg string, args ...string) (int, string, string) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	f := factory.NewWithEnv("e2e", ios, func(string) string { return "" })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	args = append([]string{"--config", cfg}, args...)
	code := commands.Run(ctx, f, root.NewCmdRoot(f), args)
	t.Logf("$ kop-offsets %s -> exit %d in %s\n%s%s", strings.Join(args, " "), code, time.Since(start).Round(time.Millisecond), out, errOut)
	return code, out.String(), errOut.String()
}

// checkJSON runs `check -o json` and decodes the report.
func checkJSON(t *testing.T, cfg string, args ...string) (survey.Report, int) {
	t.Helper()
	code, out, _ := runCLI(t, cfg, append([]string{"--timeout", "20s", "check", "-o", "json"}, args...)...)
	var rep survey.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("check: exit %d, not a report: %v", code, err)
	}
	return rep, code
}

func TestConfigNamesTLSAndToken(t *testing.T) {
	l := authLab(t)
	cfg, err := config.Load(l.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		if !strings.HasPrefix(c.AdminURL, "https://") || !strings.HasPrefix(c.ServiceURL, "pulsar+ssl://") ||
			c.PulsarAuth == nil || c.PulsarAuth.TokenFile == "" || c.PulsarAuth.TLS == nil || c.PulsarAuth.TLS.CAFile == "" ||
			c.KafkaAuth == nil || c.KafkaAuth.SASL == nil || c.KafkaAuth.SASL.Mechanism != config.MechanismPlain {
			t.Errorf("%s: %+v", c.Name, c)
		}
	}
}

// TestAnonymousRefused: without a token the admin API answers 401, on the https port (the
// lab's CA trusted) and on the plain one; a client that does not trust the CA fails the
// handshake; the no-permission token is refused an admin read.
func TestAnonymousRefused(t *testing.T) {
	l := authLab(t)
	for _, c := range l.Clusters {
		ca, err := os.ReadFile(c.Auth.Files.CACert)
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca)
		trusting := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		for _, url := range []string{c.Auth.AdminURLTLS, c.AdminURL} {
			resp, err := trusting.Get(url + "/admin/v2/clusters")
			if err != nil {
				t.Fatalf("%s: anonymous GET %s: %v", c.Name, url, err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s: anonymous GET %s/admin/v2/clusters: %s, want 401", c.Name, url, resp.Status)
			}
		}
		resp, err := (&http.Client{Timeout: 20 * time.Second}).Get(c.Auth.AdminURLTLS + "/admin/v2/clusters")
		if err == nil {
			_ = resp.Body.Close()
			t.Errorf("%s: a client without the lab's CA got %s, want a certificate error", c.Name, resp.Status)
		} else if !strings.Contains(err.Error(), "certificate") {
			t.Errorf("%s: a client without the lab's CA: %v, want a certificate error", c.Name, err)
		}
		user := c.Config()
		user.PulsarAuth.TokenFile = c.Auth.Files.UserToken
		hc, base, err := connect.AdminHTTPClient(user, connect.Options{RequestTimeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		resp, err = hc.Get(base + "/admin/v2/namespaces/public")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %s token lists namespaces of public: %s", c.Name, lab.UserRole, resp.Status)
		}
	}
}

// TestCommandsWithConfig: doctor, dump and check --persisted-only work with the auth lab's
// config.yaml (https admin, pulsar+ssl readers, the token from its file).
func TestCommandsWithConfig(t *testing.T) {
	l := authLab(t)
	// Right after a start KoP has not loaded its offsets partitions yet, and doctor rightly
	// says so (seen: all 8 unserved on both clusters); wait as the KoP suite does.
	waitKoPServesAll(t, l)
	code, out, errOut := runCLI(t, publicConfig(t, l), "--timeout", "60s", "doctor", "-o", "json")
	var doc struct {
		Findings []struct{ Check, Cluster, Severity, Message string }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("doctor: exit %d, %v: %s", code, err, errOut)
	}
	for _, f := range doc.Findings {
		m := strings.ToLower(f.Message)
		if strings.Contains(m, "401") || strings.Contains(m, "403") || strings.Contains(m, "not authorized") ||
			strings.Contains(m, "certificate") || strings.Contains(m, "sasl") {
			t.Errorf("doctor: auth finding on the auth lab: %+v", f)
		}
		if l.KoP.Enabled && f.Severity == "error" {
			t.Errorf("doctor on the auth lab with KoP: %+v", f)
		}
		// Every broker is read at its own TLS address: a broker id names the plain web port,
		// and https there was "server gave HTTP response to HTTPS client" until doctor asked
		// Pulsar for the broker's address (a warning, so exit 0 did not show it).
		if f.Check == "brokers" && f.Severity != "info" {
			t.Errorf("doctor could not read a broker of the auth lab: %+v", f)
		}
	}
	if l.KoP.Enabled && code != 0 {
		t.Errorf("doctor: exit %d, want 0", code)
	}

	code, out, _ = runCLI(t, publicConfig(t, l), "--timeout", "60s", "dump", "--cluster", "scus", "--limit", "5", "-o", "ndjson")
	if code != 0 {
		t.Errorf("dump: exit %d", code)
	}
	t.Logf("dump: %d lines", strings.Count(out, "\n"))

	rep, code := checkJSON(t, publicConfig(t, l), "--persisted-only")
	if code != 0 {
		t.Errorf("check --persisted-only: exit %d, %d rows", code, len(rep.Rows))
	}
}

// TestNoPermissionTokenNamesCluster: a config whose token is valid but has no permission
// makes check and doctor fail with exit 3 (docs/troubleshooting.md), naming the cluster and
// the refusal.
func TestNoPermissionTokenNamesCluster(t *testing.T) {
	l := authLab(t)
	cfg := userConfig(t, l)
	code, _, errOut := runCLI(t, cfg, "--timeout", "20s", "--cluster", "wus", "check", "--persisted-only")
	if code != 3 {
		t.Errorf("check with the %s token: exit %d, want 3", lab.UserRole, code)
	}
	refused := strings.Contains(errOut, "401") || strings.Contains(errOut, "403") || strings.Contains(errOut, "not authorized")
	if !strings.Contains(errOut, "wus") || !refused {
		t.Errorf("check with the %s token: the error does not name the cluster and the refusal:\n%s", lab.UserRole, errOut)
	}
	// doctor: every admin read refused, each finding saying so (the table shows the message).
	code, out, _ := runCLI(t, cfg, "--timeout", "20s", "--cluster", "scus", "doctor")
	if code != 3 || !strings.Contains(out, "the admin API of scus refused the credentials (http 401)") {
		t.Errorf("doctor with the %s token: exit %d, want 3 and the refusal named", lab.UserRole, code)
	}
}

// waitKoPServesAll waits until KoP serves every offsets partition on every cluster (through
// SASL/PLAIN with the token), when the lab runs KoP.
func waitKoPServesAll(t *testing.T, l *lab.Lab) {
	t.Helper()
	if !l.KoP.Enabled {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, c := range l.Clusters {
		for p := int32(0); p < lab.OffsetsTopicPartitions; p++ {
			if err := lab.WaitKoPServes(ctx, c, p, 3*time.Minute); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// userConfig writes a copy of the lab's config whose Pulsar token and Kafka password are the
// no-permission role's.
func userConfig(t *testing.T, l *lab.Lab) string {
	t.Helper()
	return editedConfig(t, l, filepath.Join(t.TempDir(), "user.yaml"), func(c *config.Cluster) {
		a := l.Cluster(c.Name).Auth
		c.PulsarAuth.TokenFile = a.Files.UserToken
		c.KafkaAuth.SASL.Password = config.Secret("file:" + a.Files.UserKafkaPassword)
	})
}

// publicConfig is the lab's config for tenant public: the lab's config.yaml itself, or, on a
// lab with tenants (KOP_LAB_TENANTS), a copy without them (its clusters' own credentials are
// public's). The tests of one tenant run on it; TestTenantStoryRepairedAlone uses the tenants.
func publicConfig(t *testing.T, l *lab.Lab) string {
	t.Helper()
	if len(l.State.Tenants) == 0 {
		return l.ConfigPath
	}
	return editedConfig(t, l, filepath.Join(t.TempDir(), "public.yaml"), func(*config.Cluster) {})
}

// editedConfig writes to path a copy of the lab's config with edit applied to each cluster.
func editedConfig(t *testing.T, l *lab.Lab, path string, edit func(c *config.Cluster)) string {
	t.Helper()
	cfg, err := config.Load(l.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cfg.Clusters {
		cfg.Clusters[i].Tenants = nil // public's config (publicConfig)
		edit(&cfg.Clusters[i])
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestKoPSASLCommitCheckReload: a franz-go client with SASL/PLAIN and the token commits on
// scus; check sees the offset cached and persisted there; the commit replicates to wus
// (over pulsar+ssl with the token of the cluster registration); reload makes wus's KoP serve
// it; a client without credentials, or with a wrong token, is refused by KoP.
func TestKoPSASLCommitCheckReload(t *testing.T) {
	l := authLab(t)
	if !l.KoP.Enabled {
		t.Skip("needs KoP (KOP_NAR)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	scus, wus := l.Cluster("scus"), l.Cluster("wus")
	group := labtest.Name("auth-g")
	const offset = 42
	if err := lab.CommitThroughKoP(ctx, scus, group, lab.Topic1, 0, offset); err != nil {
		t.Fatalf("commit through KoP with SASL/PLAIN: %v", err)
	}
	if got, ok, err := lab.FetchThroughKoP(ctx, scus, group, lab.Topic1, 0); err != nil || !ok || got != offset {
		t.Fatalf("scus serves %d %v %v, want %d", got, ok, err, offset)
	}

	rep, code := checkJSON(t, publicConfig(t, l), "--group", group, "--source", "scus", "--cluster", "scus")
	cell := cellOf(t, rep, group, "scus")
	if code != 0 || val(cell.Cached) != "42" || val(cell.Persisted) != "42" {
		t.Errorf("check on scus: exit %d, cached %s persisted %s, want 42/42", code, val(cell.Cached), val(cell.Persisted))
	}

	// wus has the record once it replicated; KoP there serves it after a reload.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		rep, _ = checkJSON(t, publicConfig(t, l), "--group", group, "--persisted-only")
		if val(cellOf(t, rep, group, "wus").Persisted) == "42" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the commit did not replicate to wus in 2 minutes")
		}
		time.Sleep(2 * time.Second)
	}
	code, _, _ = runCLI(t, publicConfig(t, l), "--timeout", "30s", "--cluster", "wus", "reload", "--group", group, "--yes")
	if code != 0 {
		t.Errorf("reload on wus: exit %d", code)
	}
	if got, ok, err := lab.FetchThroughKoP(ctx, wus, group, lab.Topic1, 0); err != nil || !ok || got != offset {
		t.Errorf("wus serves %d %v %v after reload, want %d", got, ok, err, offset)
	}
	rep, code = checkJSON(t, publicConfig(t, l), "--group", group, "--source", "scus")
	if code != 0 {
		t.Errorf("check after reload: exit %d: %+v", code, rep.Rows)
	}

	// Refused by KoP: no SASL at all, and PLAIN with a token signed by another key.
	for name, opts := range map[string][]kgo.Opt{
		"no SASL":     {kgo.SeedBrokers(scus.KafkaBootstrap)},
		"wrong token": wrongTokenOpts(t, scus),
	} {
		cl, err := kgo.NewClient(append(opts, kgo.RequestRetries(0), kgo.DialTimeout(5*time.Second))...)
		if err != nil {
			t.Fatal(err)
		}
		rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
		_, err = kadm.NewClient(cl).FetchOffsets(rctx, group)
		rcancel()
		cl.Close()
		if err == nil {
			t.Errorf("%s: KoP served OffsetFetch", name)
		} else {
			t.Logf("%s: refused: %v", name, err)
		}
	}
}

// wrongTokenOpts are the lab's Kafka options with a token signed by a key KoP does not know.
func wrongTokenOpts(t *testing.T, c lab.Cluster) []kgo.Opt {
	t.Helper()
	tok, err := lab.SignToken([]byte(strings.Repeat("k", 32)), lab.SuperuserRole)
	if err != nil {
		t.Fatal(err)
	}
	cc := c.Config()
	cc.KafkaAuth.SASL.Password = config.Secret("token:" + tok)
	opts, err := connect.KafkaOpts(cc, connect.Options{RequestTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return opts
}

func cellOf(t *testing.T, rep survey.Report, group, cluster string) verdict.Cell {
	t.Helper()
	for _, r := range rep.Rows {
		if r.Group != group {
			continue
		}
		for _, c := range r.Cells {
			if c.Cluster == cluster {
				return c
			}
		}
	}
	t.Fatalf("check has no %s cell for %s: %+v", cluster, group, rep.Rows)
	return verdict.Cell{}
}

func val(p *int64) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}
