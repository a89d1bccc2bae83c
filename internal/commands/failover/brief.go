package failover

import (
	fo "github.com/kop-offsets/kop-offsets/internal/failover"
	"github.com/kop-offsets/kop-offsets/internal/reload"
)

// Omitted says what a brief document leaves out: with the source gone and more than
// BriefRows rows, -o json lists the rows that did not simply land (anything but kept, or
// kept but not proven served), and counts the others; --show-all lists every row. At
// 10,000 groups x 5 keys the full document was 92 MB.
type Omitted struct {
	// Rows landed on their kept translation and, after a run, proven served: left out of
	// plan.rows and result.proof.
	Rows int `json:"rows"`
	// Groups all of whose rows are left out: left out of the reload's plan and execution
	// (result.reload.groups, result.execution.groups) when verified fresh there.
	Groups int    `json:"groups"`
	Why    string `json:"why"`
}

const omittedWhy = "landed on the kept translation and proven served (before a run: planned so): counted in plan.landings and result.proven; --show-all lists every row"

// BriefRows is the most rows a failover with the source gone lists in full without
// --show-all (a document of about 2 MB).
const BriefRows = 1000

type rowKey struct {
	group, topic string
	partition    int32
}

// brief returns doc without the rows that landed plainly (a copy: doc is not changed), or
// doc itself when nothing is left out.
func brief(doc *Document) *Document {
	if doc.Plan == nil || doc.Plan.SourceDown == "" || len(doc.Plan.Rows) <= BriefRows {
		return doc
	}
	proven := map[rowKey]bool{}
	if doc.Result != nil {
		for _, p := range doc.Result.Proof {
			proven[rowKey{p.Group, p.Topic, p.Partition}] = p.OK
		}
	}
	ran := doc.Result != nil && doc.Result.Execution != nil
	plain := func(r fo.Row) bool {
		return r.Landing == fo.LandingKept && (!ran || proven[rowKey{r.Group, r.Topic, r.Partition}])
	}
	out := *doc
	plan := *doc.Plan
	plan.Rows = nil
	kept := map[string]bool{} // groups with a row listed
	omitted := map[string]bool{}
	rows := map[rowKey]bool{}
	for _, r := range doc.Plan.Rows {
		if plain(r) {
			omitted[r.Group] = true
			rows[rowKey{r.Group, r.Topic, r.Partition}] = true
			continue
		}
		kept[r.Group] = true
		plan.Rows = append(plan.Rows, r)
	}
	n := len(doc.Plan.Rows) - len(plan.Rows)
	if n == 0 {
		return doc
	}
	if plan.Rows == nil {
		plan.Rows = []fo.Row{}
	}
	out.Plan = &plan
	for g := range kept {
		delete(omitted, g)
	}
	out.Omitted = &Omitted{Rows: n, Groups: len(omitted), Why: omittedWhy}
	if doc.Result != nil {
		out.Result = briefResult(doc.Result, rows, omitted)
	}
	return &out
}

// briefResult is res without the proof of the omitted rows and the reload's groups whose
// every row is omitted (a copy).
func briefResult(res *fo.Result, rows map[rowKey]bool, omitted map[string]bool) *fo.Result {
	r := *res
	r.Proof = []fo.Proof{}
	for _, p := range res.Proof {
		if !rows[rowKey{p.Group, p.Topic, p.Partition}] {
			r.Proof = append(r.Proof, p)
		}
	}
	if res.Reload != nil {
		rp := *res.Reload
		rp.Groups = []reload.AffectedGroup{}
		for _, g := range res.Reload.Groups {
			if !omitted[g.Group] {
				rp.Groups = append(rp.Groups, g)
			}
		}
		r.Reload = &rp
	}
	if res.Execution != nil {
		ex := *res.Execution
		ex.Groups = []reload.GroupResult{}
		for _, g := range res.Execution.Groups {
			if !omitted[g.Group] || g.Status != reload.GroupFresh {
				ex.Groups = append(ex.Groups, g)
			}
		}
		r.Execution = &ex
	}
	return &r
}
