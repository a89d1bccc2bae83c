package watch

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Handler serves /metrics (Prometheus), /healthz (liveness: the cycle loop is not stuck)
// and /readyz (readiness: the initial replay is done on every cluster that answers, and
// at least one cluster answers: with every cluster down there is nothing to export).
func Handler(w *Watcher) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(rw http.ResponseWriter, r *http.Request) { serveMetrics(rw, r, w) })
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

// serveMetrics writes the text exposition, gzipped when the scraper accepts it (Prometheus
// does). It streams the report's series (Metrics.WriteText) rather than gathering them in a
// registry, which at 100,000 keys held about 22 KB per key for the length of a scrape; a
// failure once the body started can only end it, and is logged.
func serveMetrics(rw http.ResponseWriter, r *http.Request, w *Watcher) {
	rw.Header().Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	out := io.Writer(rw)
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		rw.Header().Set("Content-Encoding", "gzip")
		gz := gzip.NewWriter(rw)
		defer func() { _ = gz.Close() }()
		out = gz
	}
	if err := w.m.WriteText(out); err != nil {
		w.log.Warn("/metrics: exposition cut short", "err", err.Error())
	}
}
