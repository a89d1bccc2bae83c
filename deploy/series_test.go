// Package deploy holds the tests of what operators deploy beside the binary: the Grafana
// dashboard and the Prometheus rules (this file, in make unit), the Helm chart and the
// container image (-tags deploy, make deploy-ci).
package deploy

import (
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"

	"github.com/kop-offsets/kop-offsets/internal/promexport"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/watch"
)

const (
	dashboardFile = "grafana/kop-offsets.json"
	rulesFile     = "prometheus/kop-offsets.rules.yml"
)

// seriesName matches the names of the series this project exports (and the Go and process
// collectors watch registers) in a PromQL expression.
var seriesName = regexp.MustCompile(`\b(?:kop_offsets|go|process)_[a-z0-9_]+\b`)

// registered reports whether reg holds a collector named name: registering a probe
// collector of that name fails exactly when one exists (same name, other help or labels).
func registered(reg prometheus.Registerer, name string) bool {
	probe := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "probe from deploy/series_test.go"})
	if err := reg.Register(probe); err != nil {
		var dup prometheus.AlreadyRegisteredError
		return errors.As(err, &dup) || strings.Contains(err.Error(), "previously registered descriptor")
	}
	reg.Unregister(probe)
	return false
}

// exported returns a func telling whether a series name is exported by watch (its own
// registry, and check's series it serves) or by check --prometheus-file. A histogram's
// _bucket, _sum and _count series count under its name.
func exported(t *testing.T) func(string) bool {
	t.Helper()
	checkReg, err := promexport.Registry(&survey.Report{})
	if err != nil {
		t.Fatal(err)
	}
	regs := []prometheus.Registerer{watch.NewMetrics().Registry, checkReg}
	return func(name string) bool {
		base := name
		for _, s := range []string{"_bucket", "_sum", "_count"} {
			base = strings.TrimSuffix(base, s)
		}
		for _, reg := range regs {
			if registered(reg, name) || (base != name && registered(reg, base)) {
				return true
			}
		}
		return false
	}
}

func TestRegisteredProbe(t *testing.T) {
	// The probe itself: a name watch registers is found, a made-up one is not, and probing
	// leaves nothing behind.
	reg := watch.NewMetrics().Registry
	if !registered(reg, watch.MetricStaleness) {
		t.Errorf("%s not found in watch's registry", watch.MetricStaleness)
	}
	for range 2 {
		if registered(reg, "kop_offsets_no_such_series") {
			t.Error("kop_offsets_no_such_series found in watch's registry")
		}
	}
	is := exported(t)
	for _, name := range []string{promexport.MetricStatus, watch.MetricStalenessServed + "_bucket", "go_goroutines", "process_resident_memory_bytes"} {
		if !is(name) {
			t.Errorf("%s not exported", name)
		}
	}
	if is("kop_offsets_no_such_histogram_bucket") {
		t.Error("kop_offsets_no_such_histogram_bucket exported")
	}
}

// dashboardExprs returns every PromQL expression of the dashboard: the panels' targets and
// the template variables' queries.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	var d struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Type       string `json:"type"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	decodeFile(t, dashboardFile, json.Unmarshal, &d)
	var exprs []string
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q has an empty query", p.Title)
			}
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			exprs = append(exprs, v.Definition)
		}
	}
	return exprs
}

// decodeFile decodes the file at path into v with unmarshal (json's or yaml's); the test
// stops when it cannot be read or decoded.
func decodeFile(t *testing.T, path string, unmarshal func([]byte, any) error, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// ruleExprs returns the expression of every alert in the rules file, by alert name.
func ruleExprs(t *testing.T) map[string]string {
	t.Helper()
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	decodeFile(t, rulesFile, yaml.Unmarshal, &f)
	out := map[string]string{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			out[r.Alert] = r.Expr
		}
	}
	return out
}

// assertExported fails for every series named in exprs that the code does not export,
// and when exprs name none at all.
func assertExported(t *testing.T, what string, exprs []string) {
	t.Helper()
	is := exported(t)
	seen := map[string]bool{}
	for _, e := range exprs {
		for _, name := range seriesName.FindAllString(e, -1) {
			if !seen[name] && !is(name) {
				t.Errorf("%s names %s, which neither watch nor check exports (renamed?): %s", what, name, e)
			}
			seen[name] = true
		}
	}
	if len(seen) == 0 {
		t.Fatalf("%s names no series", what)
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	t.Logf("%s: %d series: %s", what, len(names), strings.Join(names, " "))
}

func TestDashboardSeriesExist(t *testing.T) {
	assertExported(t, dashboardFile, dashboardExprs(t))
}

func TestAlertRuleSeriesExist(t *testing.T) {
	rules := ruleExprs(t)
	exprs := make([]string, 0, len(rules))
	for _, e := range rules {
		exprs = append(exprs, e)
	}
	assertExported(t, rulesFile, exprs)
}

// The list of what the rules must catch, by the series each alert rests on.
func TestAlertRulesCover(t *testing.T) {
	rules := ruleExprs(t)
	want := map[string]string{
		"KoPOffsetsStaleCache":         `status="stale_cache"`,             // drift that persists
		"KoPOffsetsStale":              watch.MetricStaleness,              // replicated commits not served
		"KoPOffsetsPartitionUnserved":  promexport.MetricUnserved,          // unserved offsets partitions
		"KoPOffsetsWatchDown":          watch.MetricCycles,                 // watch down
		"KoPOffsetsWatchNotReady":      watch.MetricClusterUp,              // watch not ready
		"KoPOffsetsReplicationBacklog": `status="replication_lag"`,         // replication backlog
		"KoPOffsetsRepairRefused":      watch.MetricReloadsRefused,         // repair refusals
		"KoPOffsetsReloadFailed":       watch.MetricReloads,                // reloads not verified
		"KoPOffsetsWatchStuck":         watch.MetricLastCycle,              // the loop is stuck
		"KoPOffsetsCheckFailing":       promexport.MetricExitCode,          // unreachable clusters
		"KoPOffsetsDiverged":           `status="diverged"`,                // persisted values differ
		"KoPOffsetsMisaligned":         `status="misaligned"`,              // needs failover
		"KoPOffsetsWatchClusterDown":   watch.MetricClusterUp,              // one cluster down
		"KoPOffsetsWatchKoPDown":       watch.MetricKoPUp,                  // KoP does not answer
		"KoPOffsetsStaleCritical":      watch.MetricStaleness + ") > 3600", // an hour behind
	}
	for alert, frag := range want {
		expr, ok := rules[alert]
		switch {
		case !ok:
			t.Errorf("%s: no alert %s", rulesFile, alert)
		case !strings.Contains(expr, frag):
			t.Errorf("%s: alert %s: expression %q does not use %s", rulesFile, alert, expr, frag)
		}
	}
	for alert := range rules {
		if _, ok := want[alert]; !ok {
			t.Errorf("%s: alert %s is not listed in TestAlertRulesCover", rulesFile, alert)
		}
	}
}
