package render

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/reload"
)

// A plan of a bundle of 49,997 groups stays readable: its group table shows the first
// output.MaxRows and says how many more; --show-all shows them all (issue 32).
func TestWritePlanCutsItsGroups(t *testing.T) {
	plan := &reload.Plan{Cluster: "wus", Namespace: "public/__kafka", OffsetsPartitions: 8, Clusters: []string{"wus"},
		Bundles: []reload.PlannedBundle{{Range: "0x00000000_0x40000000", OffsetsPartitions: []int32{0, 1}}}}
	for i := range 25 {
		plan.Groups = append(plan.Groups, reload.AffectedGroup{Group: fmt.Sprintf("g%02d", i), Bundle: "0x00000000_0x40000000",
			Activity: map[string]reload.Activity{"wus": {Status: reload.ActivityIdle}}})
	}
	ios, _, _, _ := iostreams.Test()
	cs := ios.ColorScheme()
	var cut, all bytes.Buffer
	if err := WritePlan(&cut, output.Layout{}.Cut(false), cs, plan); err != nil {
		t.Fatal(err)
	}
	if err := WritePlan(&all, output.Layout{}.Cut(true), cs, plan); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cut.String(), "g09\t") || strings.Contains(cut.String(), "g10\t") ||
		!strings.Contains(cut.String(), "... and 15 more (all of them in -o json, or with --show-all)") {
		t.Errorf("cut plan:\n%s", cut.String())
	}
	if !strings.Contains(all.String(), "g24\t") || strings.Contains(all.String(), "more (all of them") {
		t.Errorf("--show-all plan:\n%s", all.String())
	}
}
