package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// TestReportIsTheEngineRows: the report watch rebuilds from its packed rows is, in Go and in
// JSON, the report of the rows the engine builds for the same state, kept whole (as watch
// kept them before its rows were packed), over every history of TestCheckAndWatchAgree.
func TestReportIsTheEngineRows(t *testing.T) {
	for name, build := range histories() {
		t.Run(name, func(t *testing.T) {
			scus, wus, repl := newHistories(build)
			w := watchHistories(t, scus, wus, repl)
			want := wholeReport(w)
			got := w.Report()
			if len(want.Rows) == 0 {
				t.Fatal("no rows: the history is empty")
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("reports differ\ngot  %+v\nwant %+v", got, want)
			}
			gj, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			wj, err := json.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			if string(gj) != string(wj) {
				t.Errorf("JSON differs\ngot  %s\nwant %s", gj, wj)
			}
			// The caller's copy: changing it changes no later report.
			got.Rows[0].Cells[0].Status, got.Summary["x"] = "changed", 1
			if again := w.Report(); !reflect.DeepEqual(again, want) {
				t.Error("a report changed with the copy an earlier call returned")
			}
		})
	}
}

// wholeReport is the report of the rows the engine builds now for every group watch holds,
// kept whole: what watch published before it packed its rows.
func wholeReport(w *Watcher) *survey.Report {
	rep := &survey.Report{SchemaVersion: 1, Summary: map[string]int{}}
	for _, c := range w.clusters {
		rep.Clusters = append(rep.Clusters, c.Name)
	}
	groups := slices.Sorted(maps.Keys(w.exp.rows.groups))
	// KoP's answers are a cycle's only: ask again (the histories no longer change).
	w.clusters.parallel(func(c *clusterRT) { w.exp.fetch(context.Background(), c, groups) })
	defer func() {
		for _, c := range w.clusters {
			c.cached = nil
		}
	}()
	j, sides := w.exp.rows.judge()
	rep.Rows = []verdict.Row{}
	for _, g := range groups {
		for _, r := range w.exp.rows.buildRows(j, sides, verdict.Names{}, g) {
			rep.Rows = append(rep.Rows, r)
			rep.Summary[string(r.Status)]++
		}
	}
	for _, c := range w.clusters {
		if !c.up {
			rep.Errors = append(rep.Errors, survey.ClusterError{Cluster: c.Name, Endpoint: "pulsar",
				Error: fmt.Sprintf("cluster %s: down (admin API or offsets topic not answering)", c.Name)})
		}
	}
	rep.ExitCode = verdict.ExitCode(rep.Summary, len(rep.Errors) > 0, false, nil)
	return rep
}
