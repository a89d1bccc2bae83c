package promexport

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// TestWriteTextIsTheRegistry: over random reports (cells with and without each number, every
// status, group and topic names with quotes, backslashes and newlines, unserved partitions,
// no rows at all), what WriteText streams parses into the same families, help texts,
// labels and values as the registry of the same report exposes.
func TestWriteTextIsTheRegistry(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for n := range 200 {
		rep := randomReport(rnd, n%10)
		reg, err := Registry(rep)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := EncodeText(&want, reg); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := WriteText(&got, rep, func(fn func(*verdict.Row)) {
			for i := range rep.Rows {
				fn(&rep.Rows[i])
			}
		}); err != nil {
			t.Fatal(err)
		}
		if g, w := normalized(t, got.String()), normalized(t, want.String()); g != w {
			t.Fatalf("report %d: streamed and registry differ\nstreamed:\n%s\nregistry:\n%s", n, g, w)
		}
	}
}

// normalized parses an exposition and writes it again with each family's samples sorted.
func normalized(t *testing.T, text string) string {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("%v in\n%s", err, text)
	}
	var out bytes.Buffer
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range fams {
			if !yield(k) {
				return
			}
		}
	}) {
		mf := fams[name]
		key := func(m *dto.Metric) string { return fmt.Sprint(m.GetLabel()) }
		slices.SortFunc(mf.Metric, func(a, b *dto.Metric) int { return strings.Compare(key(a), key(b)) })
		if _, err := expfmt.MetricFamilyToText(&out, mf); err != nil {
			t.Fatal(err)
		}
	}
	return out.String()
}

func randomReport(rnd *rand.Rand, rows int) *survey.Report {
	names := []string{"orders", `we"ird`, `back\slash`, "new\nline", "ünï"}
	i64 := func() *int64 {
		if rnd.IntN(3) == 0 {
			return nil
		}
		v := rnd.Int64N(1<<40) - 5
		return &v
	}
	rep := &survey.Report{ExitCode: outcome.Outcome(rnd.IntN(4))}
	for i := range rows {
		r := verdict.Row{Group: names[rnd.IntN(len(names))] + fmt.Sprint(i), Topic: names[rnd.IntN(len(names))], Partition: int32(rnd.IntN(3))}
		for _, cl := range []string{"scus", "wus"} {
			r.Cells = append(r.Cells, verdict.Cell{Cluster: cl, Cached: i64(), Persisted: i64(), Lag: i64(), Translated: i64(),
				Status: verdict.Statuses[rnd.IntN(len(verdict.Statuses))]})
		}
		rep.Rows = append(rep.Rows, r)
	}
	for p := range rnd.IntN(3) {
		rep.Unserved = append(rep.Unserved, survey.UnservedPartition{Cluster: "wus", OffsetsPartition: int32(p)})
	}
	return rep
}
