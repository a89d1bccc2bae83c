// Package promexport is the Prometheus export of check's rows: the series `check
// --prometheus-file` writes (a node_exporter textfile) and `watch` serves, with the same names
// and labels.
package promexport

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/kop-offsets/kop-offsets/internal/check"
	"github.com/kop-offsets/kop-offsets/internal/offsets"
)

// Metric names of the Series.
const (
	MetricCached    = "kop_offsets_cached_offset"
	MetricPersisted = "kop_offsets_persisted_offset"
	// MetricTranslated is the persisted offset in the cluster's own numbering, where it
	// was replicated from another cluster (package align).
	MetricTranslated = "kop_offsets_translated_offset"
	// MetricUnserved marks offsets partitions KoP does not serve.
	MetricUnserved = "kop_offsets_offsets_partition_unserved"
	MetricLag      = "kop_offsets_consumer_lag"
	MetricDrift    = "kop_offsets_drift"
	MetricStatus   = "kop_offsets_status"
	MetricExitCode = "kop_offsets_check_exit_code"
)

// Series are the gauges of a check report, per cluster/group/topic/partition:
//   - kop_offsets_cached_offset, kop_offsets_persisted_offset, kop_offsets_consumer_lag,
//     kop_offsets_translated_offset (a replicated value in this cluster's numbering)
//     (only where known);
//   - kop_offsets_drift: cached - persisted on that cluster (only where both are known);
//   - kop_offsets_status{status=...}: 1 for the cell's status, 0 for the others;
//
// and kop_offsets_offsets_partition_unserved and kop_offsets_check_exit_code. Rows are added
// one at a time (check streams them), the rest of the report at the end.
type Series struct {
	reg                                       *prometheus.Registry
	cached, persisted, lag, translated, drift *prometheus.GaugeVec
	status, unserved                          *prometheus.GaugeVec
	exit                                      prometheus.Gauge
}

// New registers the gauges in a new registry.
func New() (*Series, error) {
	labels := []string{"cluster", "group", "topic", "partition"}
	s := &Series{
		reg:        prometheus.NewPedanticRegistry(),
		cached:     prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricCached, Help: "Offset KoP serves (OffsetFetch)."}, labels),
		persisted:  prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricPersisted, Help: "Offset the cluster's offsets topic holds."}, labels),
		lag:        prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricLag, Help: "Log-end offset minus the committed offset."}, labels),
		translated: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricTranslated, Help: "Persisted offset replicated from another cluster, translated into this cluster's numbering (the first message not consumed)."}, labels),
		drift:      prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricDrift, Help: "Cached minus persisted offset on the cluster."}, labels),
		status: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricStatus, Help: "1 for the status of the cell (cli.md statuses), 0 otherwise."},
			append(labels, "status")),
		unserved: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricUnserved, Help: "1 for an offsets partition KoP does not serve on the cluster (NOT_COORDINATOR or loading for the whole coordinator wait)."},
			[]string{"cluster", "offsets_partition"}),
		exit: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricExitCode, Help: "Exit code of the check (0 ok, 1 drift, 3 unreachable)."}),
	}
	for _, c := range []prometheus.Collector{s.cached, s.persisted, s.translated, s.lag, s.drift, s.status, s.unserved, s.exit} {
		if err := s.reg.Register(c); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// AddRow adds the gauges of one row.
func (s *Series) AddRow(r *check.Row) {
	part := strconv.Itoa(int(r.Partition))
	for i := range r.Cells {
		cell := &r.Cells[i]
		lv := []string{cell.Cluster, r.Group, r.Topic, part}
		if cell.Cached != nil {
			s.cached.WithLabelValues(lv...).Set(float64(*cell.Cached))
		}
		if cell.Persisted != nil {
			s.persisted.WithLabelValues(lv...).Set(float64(*cell.Persisted))
		}
		if cell.Lag != nil {
			s.lag.WithLabelValues(lv...).Set(float64(*cell.Lag))
		}
		if cell.Translated != nil {
			s.translated.WithLabelValues(lv...).Set(float64(*cell.Translated))
		}
		if cell.Cached != nil && cell.Persisted != nil {
			s.drift.WithLabelValues(lv...).Set(float64(*cell.Cached - *cell.Persisted))
		}
		for _, st := range offsets.Statuses {
			v := 0.0
			if cell.Status == st {
				v = 1
			}
			s.status.WithLabelValues(append(lv, string(st))...).Set(v)
		}
	}
}

// Finish adds what the report says beside its rows (the exit code, the unserved offsets
// partitions) and returns the registry.
func (s *Series) Finish(rep *check.Report) *prometheus.Registry {
	s.exit.Set(float64(rep.ExitCode))
	for _, u := range rep.Unserved {
		s.unserved.WithLabelValues(u.Cluster, strconv.Itoa(int(u.OffsetsPartition))).Set(1)
	}
	return s.reg
}

// Registry returns a registry holding the Series of rep.
func Registry(rep *check.Report) (*prometheus.Registry, error) {
	s, err := New()
	if err != nil {
		return nil, err
	}
	for i := range rep.Rows {
		s.AddRow(&rep.Rows[i])
	}
	return s.Finish(rep), nil
}

// WriteTextfile writes what g gathers for node_exporter's textfile collector: into a
// temporary file in the same directory, then renamed over path, so the collector never reads
// half a file.
func WriteTextfile(path string, g prometheus.Gatherer) error {
	mfs, err := g.Gather()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("prometheus textfile: %w", err)
	}
	// After the rename the temporary name no longer exists; removing it is only cleanup on
	// the error paths, so its error is of no interest.
	defer func() { _ = os.Remove(tmp.Name()) }()
	enc := expfmt.NewEncoder(tmp, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			_ = tmp.Close()
			return fmt.Errorf("prometheus textfile: %w", err)
		}
	}
	if err := tmp.Chmod(0o644); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("prometheus textfile: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("prometheus textfile: %w", err)
	}
	return nil
}
