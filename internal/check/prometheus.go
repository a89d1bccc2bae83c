package check

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/kop-offsets/kop-offsets/internal/offsets"
)

// Metric names written by WriteTextfile.
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

// Registry returns a prometheus registry holding the gauges of rep, per
// cluster/group/topic/partition:
//   - kop_offsets_cached_offset, kop_offsets_persisted_offset, kop_offsets_consumer_lag,
//     kop_offsets_translated_offset (a replicated value in this cluster's numbering)
//     (only where known);
//   - kop_offsets_drift: cached - persisted on that cluster (only where both are known);
//   - kop_offsets_status{status=...}: 1 for the cell's status, 0 for the others;
//
// and kop_offsets_check_exit_code.
func Registry(rep *Report) (*prometheus.Registry, error) {
	labels := []string{"cluster", "group", "topic", "partition"}
	cached := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricCached, Help: "Offset KoP serves (OffsetFetch)."}, labels)
	persisted := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricPersisted, Help: "Offset the cluster's offsets topic holds."}, labels)
	lag := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricLag, Help: "Log-end offset minus the committed offset."}, labels)
	translated := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricTranslated, Help: "Persisted offset replicated from another cluster, translated into this cluster's numbering (the first message not consumed)."}, labels)
	drift := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricDrift, Help: "Cached minus persisted offset on the cluster."}, labels)
	status := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricStatus, Help: "1 for the status of the cell (cli.md statuses), 0 otherwise."},
		append(labels, "status"))
	unserved := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricUnserved, Help: "1 for an offsets partition KoP does not serve on the cluster (NOT_COORDINATOR or loading for the whole coordinator wait)."},
		[]string{"cluster", "offsets_partition"})
	exit := prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricExitCode, Help: "Exit code of the check (0 ok, 1 drift, 3 unreachable)."})
	reg := prometheus.NewPedanticRegistry()
	for _, c := range []prometheus.Collector{cached, persisted, translated, lag, drift, status, unserved, exit} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	exit.Set(float64(rep.ExitCode))
	for _, u := range rep.Unserved {
		unserved.WithLabelValues(u.Cluster, fmt.Sprint(u.OffsetsPartition)).Set(1)
	}
	for _, r := range rep.Rows {
		for _, cl := range rep.Clusters {
			cell, ok := r.Lookup(cl)
			if !ok {
				continue
			}
			lv := []string{cl, r.Group, r.Topic, fmt.Sprint(r.Partition)}
			if cell.Cached != nil {
				cached.WithLabelValues(lv...).Set(float64(*cell.Cached))
			}
			if cell.Persisted != nil {
				persisted.WithLabelValues(lv...).Set(float64(*cell.Persisted))
			}
			if cell.Lag != nil {
				lag.WithLabelValues(lv...).Set(float64(*cell.Lag))
			}
			if cell.Translated != nil {
				translated.WithLabelValues(lv...).Set(float64(*cell.Translated))
			}
			if cell.Cached != nil && cell.Persisted != nil {
				drift.WithLabelValues(lv...).Set(float64(*cell.Cached - *cell.Persisted))
			}
			for _, st := range statusNames() {
				v := 0.0
				if string(cell.Status) == st {
					v = 1
				}
				status.WithLabelValues(append(lv, st)...).Set(v)
			}
		}
	}
	return reg, nil
}

// WriteTextfile writes rep for node_exporter's textfile collector: into a temporary file in
// the same directory, then renamed over path, so the collector never reads half a file.
func WriteTextfile(path string, rep *Report) error {
	reg, err := Registry(rep)
	if err != nil {
		return err
	}
	mfs, err := reg.Gather()
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

func statusNames() []string {
	var out []string
	for _, s := range offsetsStatuses() {
		out = append(out, string(s))
	}
	return out
}
func offsetsStatuses() []offsets.Status { return offsets.Statuses }
