package watch

import (
	"fmt"
	"maps"
	"slices"

	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// snapshot is the report a cycle publishes for Report and the series: the packed rows of
// every group in group order (shared with the cycle, which replaces a group's rows and never
// changes them) and the rest of check's report. Rows are rebuilt when asked for, one at a
// time: holding them whole would cost every key a second copy of its row.
type snapshot struct {
	head      survey.Report // without rows
	groups    []*verdict.PackedRows
	displayNS string
	rows      int
	series    RowSeries             // which rows /metrics writes series of
	notOK     []*verdict.PackedRows // the groups with a row whose status is not ok, in order
}

// RowSeries is which rows /metrics writes the series of (kop_offsets_cached_offset and the
// other series of a row): at a million keys every row's series are gigabytes of text a scrape.
type RowSeries string

// The values of RowSeries.
const (
	RowSeriesAll   RowSeries = "all"    // every row
	RowSeriesNotOK RowSeries = "not-ok" // rows whose status is not ok: those alerts are about
	RowSeriesNone  RowSeries = "none"   // none: kop_offsets_watch_rows counts them by status
)

// ParseRowSeries reads a RowSeries from its name (empty: all).
func ParseRowSeries(s string) (RowSeries, error) {
	switch rs := RowSeries(s); rs {
	case "":
		return RowSeriesAll, nil
	case RowSeriesAll, RowSeriesNotOK, RowSeriesNone:
		return rs, nil
	}
	return "", fmt.Errorf("row series %q: want all, not-ok or none", s)
}

// seriesRows calls fn with the rows whose series /metrics writes, in order.
func (s *snapshot) seriesRows(fn func(*verdict.Row)) {
	switch s.series {
	case RowSeriesNone:
	case RowSeriesNotOK:
		// Only the groups that have such a row are rebuilt: a scrape of a healthy million keys
		// costs next to nothing.
		s.rowsOf(s.notOK, func(r *verdict.Row) {
			if r.Status != verdict.StatusOK {
				fn(r)
			}
		})
	default:
		s.eachRow(fn)
	}
}

// eachRow calls fn with every row in order; the row is fn's only during the call.
func (s *snapshot) eachRow(fn func(*verdict.Row)) { s.rowsOf(s.groups, fn) }

// rowsOf calls fn with every row of groups, rebuilt, in order.
func (s *snapshot) rowsOf(groups []*verdict.PackedRows, fn func(*verdict.Row)) {
	for _, g := range groups {
		for r := range g.Rows(s.head.Clusters, s.displayNS) {
			fn(&r)
		}
	}
}

// report is the whole report, the caller's to keep and change.
func (s *snapshot) report() *survey.Report {
	rep := s.head
	rep.Clusters, rep.Errors, rep.Summary = slices.Clone(rep.Clusters), slices.Clone(rep.Errors), maps.Clone(rep.Summary)
	rep.Rows = make([]verdict.Row, 0, s.rows)
	s.eachRow(func(r *verdict.Row) { rep.Rows = append(rep.Rows, *r) })
	return &rep
}

// snapshot is the report of this cycle: the rows of every group, shared with the cycle (a
// PackedRows is replaced, never changed), and the report's other fields, with check's exit
// code for the same rows.
func (b *rowBook) snapshot() *snapshot {
	s := &snapshot{head: survey.Report{SchemaVersion: 1, Summary: map[string]int{}},
		displayNS: b.clusters.displayNamespace(), groups: make([]*verdict.PackedRows, 0, len(b.groups)), series: b.o.RowSeries}
	for _, c := range b.clusters {
		s.head.Clusters = append(s.head.Clusters, c.Name)
	}
	for _, g := range slices.Sorted(maps.Keys(b.groups)) {
		rs := b.groups[g]
		s.groups = append(s.groups, rs)
		notOK := false
		for st := range rs.Statuses() {
			s.head.Summary[string(st)]++
			notOK = notOK || st != verdict.StatusOK
		}
		if notOK {
			s.notOK = append(s.notOK, rs)
		}
		s.rows += rs.Len()
	}
	for _, c := range b.clusters {
		if !c.up {
			s.head.Errors = append(s.head.Errors, survey.ClusterError{Cluster: c.Name, Endpoint: "admin",
				Cause: "down (admin API or offsets topic not answering)", Error: fmt.Sprintf("cluster %s: down (admin API or offsets topic not answering)", c.Name)})
		}
	}
	s.head.ExitCode = verdict.ExitCode(s.head.Summary, len(s.head.Errors) > 0, false, nil)
	return s
}
