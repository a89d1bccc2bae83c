package watch

import (
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// Handler serves /metrics (Prometheus), /healthz (liveness: the cycle loop is not stuck)
// and /readyz (readiness: the initial replay is done on every cluster that answers, and
// at least one cluster answers: with every cluster down there is nothing to export).
func Handler(w *Watcher) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(w.m.Gatherer(), promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	// A cycle does at most a few bounded calls per cluster, a reload included: three
	// intervals plus the reload's own bounds without one means the loop is stuck.
	stuck := 3*w.o.Interval + 5*w.o.CallTimeout + 2*time.Minute
	if w.o.Repair {
		stuck += time.Duration(w.o.MaxBundles) * (w.o.RepairWait + 3*w.o.CallTimeout)
	}
	started := w.o.Now()
	mux.HandleFunc("/healthz", func(rw http.ResponseWriter, _ *http.Request) {
		last := w.LastCycle()
		if last.IsZero() {
			last = started
		}
		if age := w.o.Now().Sub(last); age > stuck {
			http.Error(rw, fmt.Sprintf("no cycle for %s (more than %s)", age.Round(time.Second), stuck), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(rw, "ok")
	})
	mux.HandleFunc("/readyz", func(rw http.ResponseWriter, _ *http.Request) {
		if !w.Ready() {
			http.Error(rw, "initial replay of the offsets topics not finished", http.StatusServiceUnavailable)
			return
		}
		if !anyClusterUp(w) {
			http.Error(rw, "every cluster is down", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(rw, "ready")
	})
	return mux
}

// anyClusterUp reads kop_offsets_watch_cluster_up, which each cycle sets per cluster: the
// gauge is safe to read from the HTTP goroutines.
func anyClusterUp(w *Watcher) bool {
	for _, c := range w.clusters {
		g, err := w.m.up.GetMetricWithLabelValues(c.Name)
		if err != nil {
			continue
		}
		var m dto.Metric
		if g.Write(&m) == nil && m.GetGauge().GetValue() == 1 {
			return true
		}
	}
	return false
}
