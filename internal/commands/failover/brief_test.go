package failover

import (
	"fmt"
	"testing"

	fo "github.com/kop-offsets/kop-offsets/internal/failover"
	"github.com/kop-offsets/kop-offsets/internal/reload"
)

// A brief document (source gone, no --show-all) lists every row but those that landed on
// their kept translation and were proven served, and counts those; the reload's groups all
// of whose rows are left out go too, unless the verification did not find them fresh.
func TestBriefDocument(t *testing.T) {
	v := int64(40)
	row := func(g, topic, landing string) fo.Row {
		return fo.Row{Group: g, Topic: topic, Landing: landing, Translated: &v}
	}
	proof := func(g, topic string, ok bool) fo.Proof { return fo.Proof{Group: g, Topic: topic, OK: ok} }
	doc := &Document{SchemaVersion: 1,
		Plan: &fo.Plan{SourceDown: "said gone", Rows: []fo.Row{
			row("a", "t1", fo.LandingKept), row("a", "t2", fo.LandingKept), // both proven: omitted
			row("b", "t1", fo.LandingKept), row("b", "t2", fo.LandingOlderKept), // one listed
			row("c", "t1", fo.LandingKept), // not proven: listed
			row("d", "t1", fo.LandingLeft),
		}},
		Result: &fo.Result{
			Proof:  []fo.Proof{proof("a", "t1", true), proof("a", "t2", true), proof("b", "t1", true), proof("b", "t2", true), proof("c", "t1", false)},
			Reload: &reload.Plan{Groups: []reload.AffectedGroup{{Group: "a"}, {Group: "b"}, {Group: "c"}, {Group: "other"}}},
			Execution: &reload.Execution{Groups: []reload.GroupResult{{Group: "a", Status: reload.GroupFresh},
				{Group: "b", Status: reload.GroupFresh}, {Group: "c", Status: reload.GroupCacheDiffers}, {Group: "other", Status: reload.GroupFresh}}},
		}}
	if brief(doc) != doc {
		t.Error("a document of a few rows was briefed")
	}
	for i := range BriefRows { // more rows than a brief document lists in full
		doc.Plan.Rows = append(doc.Plan.Rows, row(fmt.Sprintf("z%04d", i), "t1", fo.LandingKept))
		doc.Result.Proof = append(doc.Result.Proof, proof(fmt.Sprintf("z%04d", i), "t1", true))
	}
	got := brief(doc)
	var rows []string
	for _, r := range got.Plan.Rows {
		rows = append(rows, r.Group+"/"+r.Topic)
	}
	var proofs []string
	for _, p := range got.Result.Proof {
		proofs = append(proofs, p.Group+"/"+p.Topic)
	}
	if want := "[b/t2 c/t1 d/t1]"; fmt.Sprint(rows) != want {
		t.Errorf("rows %v, want %s", rows, want)
	}
	if want := "[b/t2 c/t1]"; fmt.Sprint(proofs) != want {
		t.Errorf("proof %v, want %s", proofs, want)
	}
	if got.Omitted == nil || got.Omitted.Rows != 3+BriefRows || got.Omitted.Groups != 1+BriefRows {
		t.Errorf("omitted %+v, want %d rows and groups", got.Omitted, 3+BriefRows)
	}
	if n, m := len(got.Result.Reload.Groups), len(got.Result.Execution.Groups); n != 3 || m != 3 {
		t.Errorf("%d reload groups, %d execution groups, want 3 each (all but a)", n, m)
	}
	if len(doc.Plan.Rows) != 6+BriefRows || len(doc.Result.Proof) != 5+BriefRows || doc.Omitted != nil {
		t.Errorf("the full document was changed: %d rows, %d proofs", len(doc.Plan.Rows), len(doc.Result.Proof))
	}
	// With the source up nothing is left out.
	doc.Plan.SourceDown = ""
	if brief(doc) != doc {
		t.Error("a failover with the source up was briefed")
	}
}
