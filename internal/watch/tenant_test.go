package watch

import (
	"strings"
	"testing"
)

// TestTenantLabels: a watch of one tenant of a multi-tenant KoP labels every series of its
// own, the rows' included, with the tenant; the Go and process collectors stay unlabelled.
func TestTenantLabels(t *testing.T) {
	e := newEnv(t, Options{Metrics: NewTenantMetrics("acme")})
	e.startWithOrders(500, 500)
	e.cycleUntil("initial", persistedIs("orders", "wus", 500))
	body := scrape(t, e.w, "/metrics")
	for _, want := range []string{
		`kop_offsets_cached_offset{cluster="wus",group="orders",partition="0",tenant="acme",topic="topic-1"} 500`,
		`kop_offsets_watch_cluster_up{cluster="scus",tenant="acme"} 1`,
		`kop_offsets_watch_rows{status="ok",tenant="acme"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "go_goroutines") && strings.Contains(l, "tenant") {
			t.Errorf("Go collector labelled: %s", l)
		}
	}
}
