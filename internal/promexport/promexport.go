// Package promexport is the Prometheus export of check's rows: the series `check
// --prometheus-file` writes (a node_exporter textfile) and `watch` serves, with the same names
// and labels.
package promexport

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
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
	tenants          bool // a multi-tenant report: every series has a tenant label
	reg              *prometheus.Registry
	cells            map[string]*prometheus.GaugeVec // by name: cellGauges
	status, unserved *prometheus.GaugeVec
	exit             prometheus.Gauge
}

// helps of the series, by name.
var helps = map[string]string{
	MetricCached:     "Offset KoP serves (OffsetFetch).",
	MetricPersisted:  "Offset the cluster's offsets topic holds.",
	MetricLag:        "Log-end offset minus the committed offset.",
	MetricTranslated: "Persisted offset replicated from another cluster, translated into this cluster's numbering (the first message not consumed).",
	MetricDrift:      "Cached minus persisted offset on the cluster.",
	MetricStatus:     "1 for the status of the cell (cli.md statuses), 0 otherwise.",
	MetricUnserved:   "1 for an offsets partition KoP does not serve on the cluster (NOT_COORDINATOR or loading for the whole coordinator wait).",
	MetricExitCode:   "Exit code of the check (0 ok, 1 drift, 3 unreachable).",
}

// cellGauge is a series with one value per cell, where the cell has it.
type cellGauge struct {
	name  string
	value func(c *verdict.Cell) (float64, bool)
}

// cellGauges are the series of a cell but kop_offsets_status, in the order they are written.
var cellGauges = []cellGauge{
	{MetricCached, func(c *verdict.Cell) (float64, bool) { return num(c.Cached) }},
	{MetricPersisted, func(c *verdict.Cell) (float64, bool) { return num(c.Persisted) }},
	{MetricTranslated, func(c *verdict.Cell) (float64, bool) { return num(c.Translated) }},
	{MetricLag, func(c *verdict.Cell) (float64, bool) { return num(c.Lag) }},
	{MetricDrift, func(c *verdict.Cell) (float64, bool) {
		if c.Cached == nil || c.Persisted == nil {
			return 0, false
		}
		return float64(*c.Cached - *c.Persisted), true
	}},
}

func num(v *int64) (float64, bool) {
	if v == nil {
		return 0, false
	}
	return float64(*v), true
}

// New registers the gauges in a new registry; tenants adds the tenant label (a multi-tenant
// report: the same group may be in several tenants).
func New(tenants bool) (*Series, error) {
	labels := []string{"cluster", "group", "topic", "partition"}
	unservedLabels := []string{"cluster", "offsets_partition"}
	if tenants {
		labels = append([]string{"tenant"}, labels...)
		unservedLabels = append([]string{"tenant"}, unservedLabels...)
	}
	gauge := func(name string, labels []string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: helps[name]}, labels)
	}
	s := &Series{
		tenants:  tenants,
		reg:      prometheus.NewPedanticRegistry(),
		cells:    map[string]*prometheus.GaugeVec{},
		status:   gauge(MetricStatus, append(labels, "status")),
		unserved: gauge(MetricUnserved, unservedLabels),
		exit:     prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricExitCode, Help: helps[MetricExitCode]}),
	}
	cs := []prometheus.Collector{s.status, s.unserved, s.exit}
	for _, g := range cellGauges {
		s.cells[g.name] = gauge(g.name, labels)
		cs = append(cs, s.cells[g.name])
	}
	for _, c := range cs {
		if err := s.reg.Register(c); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// AddRow adds the gauges of one row.
func (s *Series) AddRow(r *verdict.Row) {
	part := strconv.Itoa(int(r.Partition))
	for i := range r.Cells {
		cell := &r.Cells[i]
		lv := []string{cell.Cluster, r.Group, r.Topic, part}
		if s.tenants {
			lv = append([]string{r.Tenant}, lv...)
		}
		for _, g := range cellGauges {
			if v, ok := g.value(cell); ok {
				s.cells[g.name].WithLabelValues(lv...).Set(v)
			}
		}
		for _, st := range verdict.Statuses {
			s.status.WithLabelValues(append(lv, string(st))...).Set(b2f(cell.Status == st))
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Finish adds what the report says beside its rows (the exit code, the unserved offsets
// partitions) and returns the registry.
func (s *Series) Finish(rep *survey.Report) *prometheus.Registry {
	s.exit.Set(float64(rep.ExitCode))
	for _, u := range rep.Unserved {
		lv := []string{u.Cluster, strconv.Itoa(int(u.OffsetsPartition))}
		if s.tenants {
			lv = append([]string{u.Tenant}, lv...)
		}
		s.unserved.WithLabelValues(lv...).Set(1)
	}
	return s.reg
}

// Registry returns a registry holding the Series of rep.
func Registry(rep *survey.Report) (*prometheus.Registry, error) {
	s, err := New(len(rep.Tenants) > 0)
	if err != nil {
		return nil, err
	}
	for i := range rep.Rows {
		s.AddRow(&rep.Rows[i])
	}
	return s.Finish(rep), nil
}

// EncodeText writes what g gathers in the text format (version 0.0.4). When the gather fails
// in part, what it gathered is written and its error returned.
func EncodeText(w io.Writer, g prometheus.Gatherer) error {
	mfs, gatherErr := g.Gather()
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	return gatherErr
}

// tempBeside creates the hidden temporary file, in path's directory, that a textfile is
// written to before its rename.
func tempBeside(path string) (*os.File, error) {
	return os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
}

// CheckTextfile reports whether a textfile can be written at path (its directory exists
// and takes a file), by creating and removing a temporary file there: a run checks it
// before it reads anything, so an unwritable path costs nothing.
func CheckTextfile(path string) error {
	tmp, err := tempBeside(path)
	if err != nil {
		return fmt.Errorf("prometheus textfile %s: %w", path, err)
	}
	_ = tmp.Close()
	return os.Remove(tmp.Name())
}

// WriteTextfile writes what g gathers for node_exporter's textfile collector: into a
// temporary file in the same directory, then renamed over path, so the collector never reads
// half a file.
func WriteTextfile(path string, g prometheus.Gatherer) error {
	tmp, err := tempBeside(path)
	if err != nil {
		return fmt.Errorf("prometheus textfile: %w", err)
	}
	// After the rename the temporary name no longer exists; removing it is only cleanup on
	// the error paths, so its error is of no interest.
	defer func() { _ = os.Remove(tmp.Name()) }()
	if err := EncodeText(tmp, g); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("prometheus textfile: %w", err)
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
