package watch

import (
	"maps"
	"slices"

	"github.com/kop-offsets/kop-offsets/internal/check"
)

// snapshot is the report a cycle publishes for Report and the series: the packed rows of
// every group in group order (shared with the cycle, which replaces a group's rows and never
// changes them) and the rest of check's report. Rows are rebuilt when asked for, one at a
// time: holding them whole would cost every key a second copy of its row.
type snapshot struct {
	head      check.Report // without rows
	groups    []*check.PackedRows
	displayNS string
	rows      int
}

// eachRow calls fn with every row in order; the row is fn's only during the call.
func (s *snapshot) eachRow(fn func(*check.Row)) {
	for _, g := range s.groups {
		for r := range g.Rows(s.head.Clusters, s.displayNS) {
			fn(&r)
		}
	}
}

// report is the whole report, the caller's to keep and change.
func (s *snapshot) report() *check.Report {
	rep := s.head
	rep.Clusters, rep.Errors, rep.Summary = slices.Clone(rep.Clusters), slices.Clone(rep.Errors), maps.Clone(rep.Summary)
	rep.Rows = make([]check.Row, 0, s.rows)
	s.eachRow(func(r *check.Row) { rep.Rows = append(rep.Rows, *r) })
	return &rep
}
