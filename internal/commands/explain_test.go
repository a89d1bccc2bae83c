package commands

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

// downConfig is two clusters whose every endpoint is a closed port.
func downConfig(t *testing.T) (cfg string, admin map[string]string) {
	t.Helper()
	admin = map[string]string{}
	body := "clusters:\n"
	for _, n := range []string{"scus", "wus"} {
		admin[n] = "http://" + fakes.ClosedAddr(t)
		body += "  - name: " + n + "\n    adminURL: " + admin[n] + "\n    serviceURL: pulsar://" + fakes.ClosedAddr(t) +
			"\n    kafkaBootstrap: [" + fakes.ClosedAddr(t) + "]\n"
	}
	return writeConfig(t, body), admin
}

type jsonErr struct{ Cluster, Endpoint, URL, Cause, Fix, Error string }

// checkErrs asserts that errs name each cluster's admin and kafka endpoint, their URL, the
// cause and a fix.
func checkErrs(t *testing.T, errs []jsonErr, admin map[string]string) {
	t.Helper()
	seen := map[string]bool{}
	for _, e := range errs {
		seen[e.Cluster+"/"+e.Endpoint] = true
		if e.Cause != "connection refused" || e.Fix == "" || e.URL == "" || !strings.HasPrefix(e.Error, "cluster "+e.Cluster+": "+e.Endpoint+" "+e.URL+": connection refused") {
			t.Errorf("error %+v", e)
		}
		if e.Endpoint == "admin" && e.URL != admin[e.Cluster] {
			t.Errorf("admin url %q, want %q", e.URL, admin[e.Cluster])
		}
	}
	for _, k := range []string{"scus/admin", "scus/kafka", "wus/admin", "wus/kafka"} {
		if !seen[k] {
			t.Errorf("no error of %s in %+v", k, errs)
		}
	}
}

// With every cluster down, check says that no cluster could be read, naming each, with the
// endpoint, cause and fix of every failure; never "no offsets found", never franz-go's
// shard count.
func TestCheckEveryClusterDown(t *testing.T) {
	cfg, admin := downConfig(t)
	r := run(t, nil, "--config", cfg, "--timeout", "5s", "check", "--group", "G")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3\n%s\n%s", r.code, r.out, r.errOut)
	}
	for _, want := range []string{"0 rows: no cluster could be read (scus, wus)",
		"error: cluster scus: admin " + admin["scus"] + ": connection refused (get partitioned metadata of persistent://public/__kafka/__consumer_offsets)\n  fix: start its brokers or correct its adminURL",
		"error: cluster wus: kafka ", "connection refused (ListGroups)\n  fix: load KoP on its brokers"} {
		if !strings.Contains(r.errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.errOut)
		}
	}
	for _, bad := range []string{"no offsets found", "shard errors", "pulsar: get partitioned"} {
		if strings.Contains(r.errOut, bad) {
			t.Errorf("stderr has %q:\n%s", bad, r.errOut)
		}
	}

	r = run(t, nil, "--config", cfg, "--timeout", "5s", "check", "--group", "G", "-o", "json")
	var doc struct {
		Unread   []string  `json:"unread"`
		Errors   []jsonErr `json:"errors"`
		ExitCode int       `json:"exitCode"`
	}
	if err := json.Unmarshal([]byte(r.out), &doc); err != nil || r.code != 3 || doc.ExitCode != 3 {
		t.Fatalf("exit %d, %v\n%s", r.code, err, r.out)
	}
	if strings.Join(doc.Unread, ",") != "scus,wus" {
		t.Errorf("unread %v", doc.Unread)
	}
	checkErrs(t, doc.Errors, admin)
}

// repair with its cluster unreachable names it and the cause: not "nothing to do".
func TestRepairClusterDown(t *testing.T) {
	cfg, admin := downConfig(t)
	args := []string{"--config", cfg, "--timeout", "5s", "repair", "--cluster", "wus", "--yes",
		"--lock-file", filepath.Join(t.TempDir(), "lock"), "--audit-file", ""}
	r := run(t, nil, args...)
	if r.code != 3 {
		t.Fatalf("exit %d, want 3\n%s\n%s", r.code, r.out, r.errOut)
	}
	if !strings.Contains(r.out, "stale_cache rows: 0 before, 0 after (not read: wus)") {
		t.Errorf("stdout: %s", r.out)
	}
	for _, want := range []string{"nothing repaired: wus could not be read",
		"first check: cluster wus: admin " + admin["wus"] + ": connection refused"} {
		if !strings.Contains(r.errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.errOut)
		}
	}
	if strings.Contains(r.errOut, "nothing to do") {
		t.Errorf("stderr says nothing to do:\n%s", r.errOut)
	}

	r = run(t, nil, append(args, "-o", "json")...)
	var doc struct {
		Unread      []string  `json:"unread"`
		Unreachable []jsonErr `json:"unreachable"`
		ExitCode    int       `json:"exitCode"`
	}
	if err := json.Unmarshal([]byte(r.out), &doc); err != nil || r.code != 3 || doc.ExitCode != 3 {
		t.Fatalf("exit %d, %v\n%s", r.code, err, r.out)
	}
	if strings.Join(doc.Unread, ",") != "wus" {
		t.Errorf("unread %v", doc.Unread)
	}
	checkErrs(t, doc.Unreachable, admin)
}

// A refused pulsar port fails in milliseconds, as admin and kafka do (pulsar-client-go alone
// retries it for the whole --timeout), and every endpoint says its cause and fix.
func TestConfigCheckRefusedFast(t *testing.T) {
	cfg, _ := downConfig(t)
	start := time.Now()
	r := run(t, nil, "--config", cfg, "--timeout", "20s", "config", "check", "-o", "json")
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s", took)
	}
	var doc struct {
		Endpoints []struct{ Cluster, Endpoint, Status, Cause, Fix, Error string } `json:"endpoints"`
	}
	if err := json.Unmarshal([]byte(r.out), &doc); err != nil || r.code != 3 || len(doc.Endpoints) != 6 {
		t.Fatalf("exit %d, %v\n%s", r.code, err, r.out)
	}
	fields := map[string]string{"admin": "adminURL", "pulsar": "serviceURL", "kafka": "kafkaBootstrap"}
	for _, e := range doc.Endpoints {
		if e.Status != "failed" || e.Cause != "connection refused" || !strings.Contains(e.Fix, fields[e.Endpoint]) ||
			!strings.HasPrefix(e.Error, "connection refused") {
			t.Errorf("%+v", e)
		}
	}
}

// doctor against a server that is not Pulsar's admin API says so, and suggests no topic to
// create.
func TestDoctorNotAnAdminAPI(t *testing.T) {
	s := httptest.NewServer(http.NotFoundHandler())
	defer s.Close()
	r := run(t, nil, "--admin-url", s.URL, "doctor")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3\n%s\n%s", r.code, r.out, r.errOut)
	}
	if !strings.Contains(r.out, "adminURL "+s.URL+" is not a Pulsar admin API (http 404") ||
		!strings.Contains(r.out, "\t--admin-url must be Pulsar's web service") || // piped: the fix is the last column
		!strings.Contains(r.out, "\tno --bootstrap given: whether KoP answers was not checked\tgive --bootstrap") { // ad-hoc: flags, not config fields
		t.Errorf("stdout:\n%s", r.out)
	}
	if strings.Contains(r.out, "create") {
		t.Errorf("suggests creating something:\n%s", r.out)
	}
}

// A config copied from `config view` is refused before anything is contacted.
func TestRedactedSecretRefused(t *testing.T) {
	cfg := writeConfig(t, "clusters:\n  - name: scus\n    adminURL: http://"+fakes.ClosedAddr(t)+"\n    pulsarAuth:\n      token: <redacted>\n")
	r := run(t, nil, "--config", cfg, "config", "check")
	if r.code != 2 || r.out != "" ||
		!strings.Contains(r.errOut, `cluster "scus": pulsarAuth.token: reads "<redacted>", as `+"`config view`"+` prints a literal secret`) {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s", r.code, r.out, r.errOut)
	}
}

// Commands whose errors end the run explain an admin API failure: its cause in words with the
// endpoint, and its fix on the next line (issue 48: no Go error chain without --verbose),
// and dump explains each cluster it could not read.
func TestAdminFailureExplained(t *testing.T) {
	cfg, admin := downConfig(t)
	r := run(t, nil, "--config", cfg, "--timeout", "5s", "reload", "--cluster", "wus", "--group", "G", "--dry-run")
	want := "error: cluster wus: plan: get partitioned metadata of persistent://public/__kafka/__consumer_offsets: unreachable at " + admin["wus"] +
		": connection refused (nothing was unloaded)\n  fix: start its brokers or correct its adminURL"
	if r.code != 3 || !strings.Contains(r.errOut, want) {
		t.Errorf("reload: exit %d, stderr lacks %q:\n%s", r.code, want, r.errOut)
	}
	r = run(t, nil, "--config", cfg, "--timeout", "5s", "dump", "--cluster", "wus")
	want = "error: cluster wus: admin " + admin["wus"] + ": connection refused (get partitioned metadata"
	if r.code != 3 || !strings.Contains(r.errOut, want) {
		t.Errorf("dump: exit %d, stderr lacks %q:\n%s", r.code, want, r.errOut)
	}
}

// A refused serviceURL under a live admin API is "connection refused" at once on the pulsar
// endpoint, not a timeout after --timeout (the Pulsar client retries a refused port).
func TestCheckRefusedServiceURL(t *testing.T) {
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/partitions") {
			_, _ = w.Write([]byte(`{"partitions":1}`))
			return
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	defer admin.Close()
	service := "pulsar://" + fakes.ClosedAddr(t)
	start := time.Now()
	r := run(t, nil, "--admin-url", admin.URL, "--service-url", service, "--timeout", "20s", "check", "--group", "G", "--persisted-only")
	// The ad-hoc cluster is named after the admin URL typed.
	name := strings.TrimPrefix(admin.URL, "http://")
	want := "error: cluster " + name + ": pulsar " + service + ": connection refused\n  fix: start its brokers or correct --service-url" +
		" (the broker service port, 6650 by default); then: kop-offsets --admin-url " + admin.URL + " --service-url " + service + " config check"
	if r.code != 3 || !strings.Contains(r.errOut, want) {
		t.Errorf("exit %d, stderr lacks %q:\n%s", r.code, want, r.errOut)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s", took)
	}
}
