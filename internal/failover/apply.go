package failover

import (
	"context"
	"fmt"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/reload"
)

// Reloader reloads bundles of the target (package reload).
type Reloader interface {
	// Plan plans the reload of the groups' bundles, the intended rows taken as written on
	// purpose. target, when not nil, is the failover's replay of the target's offsets topic:
	// the plan brings it up to date (reading what was appended since) instead of reading
	// the whole topic again.
	Plan(ctx context.Context, groups []string, intended map[reload.IntendedKey]int64, target reload.PartitionReplayer) (*reload.Plan, error)
	Execute(ctx context.Context, plan *reload.Plan) *reload.Execution
}

// Executor applies a Plan.
type Executor struct {
	From, To Side
	Writer   LocalWriter
	// Holder writes held values (ActionHold: kop.HoldWriter), with the source gone.
	Holder   LocalWriter
	Reloader Reloader
	Log      func(string, ...any)
	// Wait bounds the verification's wait for KoP to serve the written offsets.
	Wait time.Duration
}

// Result is what Apply did.
type Result struct {
	// Written are the groups whose translated offsets were written on the target.
	Written []string `json:"written"`
	// Reload is the reload of the target's bundles that made KoP serve them.
	Reload    *reload.Plan      `json:"reload,omitempty"`
	Execution *reload.Execution `json:"execution,omitempty"`
	// WriteErrors are the rows whose records could not be written (the others were).
	WriteErrors []WriteError `json:"writeErrors,omitempty"`
	// Proof is what each cluster serves afterwards, row by row; Proven counts the rows the
	// target serves at their translated offset.
	Proof  []Proof `json:"proof"`
	Proven int     `json:"proven"`
	Error  string  `json:"error,omitempty"`
	// ExitCode: OK done, Unreachable, WriteFailed (a write failed, or refused: rows the
	// plan refused, a reload that would be refused).
	ExitCode outcome.Outcome `json:"exitCode"`
}

// Proof is one row after the failover.
type Proof struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// TargetServes must equal Translated; SourceServes must still equal Source.
	Translated   int64  `json:"translated"`
	TargetServes *int64 `json:"targetServes"`
	Source       int64  `json:"source"`
	SourceServes *int64 `json:"sourceServes"`
	// Message says which message sits at Translated on the target.
	Message string `json:"message"`
	// OK: the target serves Translated. SourceKept: the source still serves Source.
	OK         bool `json:"ok"`
	SourceKept bool `json:"sourceKept"`
}

// Apply writes the translated offsets, reloads the target's bundles and proves the result.
// Before anything is written, the reload is planned with the rows as they are: a bundle the
// reload would refuse (live groups, other rows it would move back or make skip) refuses the
// failover, so no record is ever left written but not loaded. With the source gone, such a
// bundle leaves its own rows only (named with the refusal): the other bundles land.
func (e *Executor) Apply(ctx context.Context, plan *Plan) *Result {
	res := &Result{Written: []string{}, Proof: []Proof{}}
	groups := plan.Groups(ActionWrite, ActionReload)
	if len(groups) == 0 {
		res.ExitCode = plan.Outcome()
		return res
	}
	// 1. The reload as it would run, the rows to write taken as they will be.
	e.log("cluster %s: planning the reload of the bundles of %d groups", plan.To, len(groups))
	pre, err := e.Reloader.Plan(ctx, groups, plan.intended(false), plan.replayer())
	if err != nil {
		res.Error, res.ExitCode = "plan of the reload: "+err.Error()+" (nothing was written)", outcome.Unreachable
		return res
	}
	if plan.target != nil {
		whole, tails := plan.target.Reads()
		e.log("cluster %s: reload planned; its offsets topic read whole %d partitions, %d from where the last read ended", plan.To, whole, tails)
	}
	if refused := pre.Refused(); len(refused) > 0 {
		res.Reload = pre
		if plan.SourceDown == "" {
			res.Error = fmt.Sprintf("the reload of %s's bundle %s would be refused, so nothing was written: %s", plan.To, refused[0].Range, refused[0].Reason)
			res.ExitCode = outcome.WriteFailed
			return res
		}
		plan.leaveRefused(pre, "its bundle's reload would be refused, nothing was written for it")
	}
	plan.dropHolds(pre)
	if groups = plan.Groups(ActionWrite, ActionReload); len(groups) == 0 {
		res.ExitCode = plan.Outcome()
		return res
	}
	// 2. The records, on the target only.
	if !e.write(ctx, plan, res) {
		return res
	}
	// 3. The reload, now predicting the written values; when nothing was written (every row
	// reloads what the topic holds) the plan of step 1 is that plan already, and each
	// bundle's groups are asked again just before its unload (reload's recheck).
	rp, late := pre, outcome.OK
	if len(res.Written) > 0 {
		if rp, late = e.replan(ctx, plan, groups, res); rp == nil {
			return res
		}
	}
	res.Reload = rp
	res.Execution = e.Reloader.Execute(ctx, rp)
	// 4. The proof: the target serves the translated offsets, the source its own.
	e.log("cluster %s: proving %d rows", plan.To, len(plan.Rows))
	res.Proof = e.prove(ctx, plan, res.Execution)
	res.ExitCode = outcome.Worst(res.Execution.ExitCode, late)
	for _, p := range res.Proof {
		if p.OK {
			res.Proven++
		} else if res.ExitCode == outcome.OK {
			res.ExitCode = outcome.WriteFailed
			res.Error = fmt.Sprintf("%s %s[%d]: %s serves %s after the reload, want %d", p.Group, p.Topic, p.Partition,
				plan.To, str(p.TargetServes), p.Translated)
		}
	}
	if res.ExitCode == outcome.OK {
		res.ExitCode = plan.Outcome()
	}
	return res
}

// replan plans the reload again after the writes, predicting the written values, and
// returns it with the outcome of rows it left (source gone); nil when the failover ends
// here (res says why).
func (e *Executor) replan(ctx context.Context, plan *Plan, groups []string, res *Result) (*reload.Plan, outcome.Outcome) {
	rp, err := e.Reloader.Plan(ctx, groups, plan.intended(true), plan.replayer())
	if err != nil {
		res.Error, res.ExitCode = fmt.Sprintf("plan of the reload after writing %v: %v (written, not loaded: run failover again)", res.Written, err), outcome.WriteFailed
		return nil, outcome.WriteFailed
	}
	late := outcome.OK
	if refused := rp.Refused(); len(refused) > 0 {
		res.Error = fmt.Sprintf("written %v, but the reload of bundle %s is now refused: %s (run failover again)", res.Written, refused[0].Range, refused[0].Reason)
		if plan.SourceDown == "" {
			res.ExitCode = outcome.WriteFailed
			return nil, outcome.WriteFailed
		}
		plan.leaveRefused(rp, "written, but its bundle's reload is now refused (run failover again)")
		late = outcome.WriteFailed
	}
	return rp, late
}

// replayer is the plan's replay of the target's offsets topic for the reload's plan (nil
// when the plan read none).
func (p *Plan) replayer() reload.PartitionReplayer {
	if p.target == nil {
		return nil
	}
	return p.target
}

// intended are the rows the failover writes or reloads, with their values as they are in the
// offsets topic (before) or as written (after): the reload plan takes a load of exactly that
// value as neither a loss nor a skip.
func (p *Plan) intended(after bool) map[reload.IntendedKey]int64 {
	out := map[reload.IntendedKey]int64{}
	for _, r := range p.Rows {
		if !r.loads() {
			continue
		}
		k := reload.IntendedKey{Group: r.Group, Topic: r.Topic, Partition: r.Partition}
		switch {
		case after:
			out[k] = *r.Translated
		case r.Persisted != nil:
			out[k] = *r.Persisted
		}
	}
	return out
}

// loads: the failover writes or reloads r's value, or holds it (written back, then loaded).
func (r *Row) loads() bool {
	return r.Action == ActionWrite || r.Action == ActionReload || r.Action == ActionHold
}

// prove says, row by row, what the target serves and what the source serves. A group the
// reload's verification found serving its offsets topic after its bundle's load is proven
// by that answer (nothing but the group itself commits on the target, and the failover
// found it without members there); every other group is asked, many per request.
func (e *Executor) prove(ctx context.Context, plan *Plan, ex *reload.Execution) []Proof {
	var groups []string
	for _, r := range plan.Rows {
		if r.Action != ActionRefused && r.Translated != nil && (len(groups) == 0 || groups[len(groups)-1] != r.Group) {
			groups = append(groups, r.Group) // rows are sorted by group
		}
	}
	verified := map[string]*reload.CacheAnswer{}
	if ex != nil {
		for _, g := range ex.Groups {
			if g.Status == reload.GroupFresh && g.After != nil {
				verified[g.Group] = g.After
			}
		}
	}
	var ask []string
	for _, g := range groups {
		if verified[g] == nil {
			ask = append(ask, g)
		}
	}
	target := e.serves(ctx, e.To, ask)
	for g, a := range verified {
		target[g] = byPartition(a)
	}
	source := e.serves(ctx, e.From, groups)
	var out []Proof
	for _, r := range plan.Rows {
		if r.Action == ActionRefused || r.Translated == nil {
			continue
		}
		p := Proof{Group: r.Group, Topic: r.Topic, Partition: r.Partition, Translated: *r.Translated, Source: r.Source}
		if v, ok := target[r.Group][tp{r.Topic, r.Partition}]; ok {
			p.TargetServes = &v
		}
		if v, ok := source[r.Group][tp{r.Topic, r.Partition}]; ok {
			p.SourceServes = &v
		}
		switch {
		case r.Translation != nil:
			p.Message = r.Translation.String()
		case plan.SourceDown != "":
			p.Message = r.Why
		}
		p.OK = p.TargetServes != nil && *p.TargetServes == p.Translated
		p.SourceKept = p.SourceServes != nil && *p.SourceServes == p.Source
		out = append(out, p)
	}
	return out
}

// serves asks s's KoP what it serves the groups, many per request; nothing for a side
// without KoP, and nothing for a group KoP did not answer (logged).
func (e *Executor) serves(ctx context.Context, s Side, groups []string) map[string]map[tp]int64 {
	out := map[string]map[tp]int64{}
	if s.Groups == nil || len(groups) == 0 {
		return out
	}
	failed, first := 0, ""
	for g, a := range reload.AskMany(ctx, s.Groups, groups, reload.DefaultServedTimeout) {
		if a.Error != "" {
			failed++
			if first == "" || a.Error < first { // the same one whatever the map's order
				first = a.Error
			}
		}
		out[g] = byPartition(a)
	}
	if failed > 0 { // one line, not thousands
		e.log("cluster %s: fetch offsets of %d of %d groups failed, e.g. %s", s.Name, failed, len(groups), first)
	}
	return out
}

func byPartition(a *reload.CacheAnswer) map[tp]int64 {
	out := make(map[tp]int64, len(a.Offsets))
	for _, o := range a.Offsets {
		out[tp{o.Topic, o.Partition}] = o.Offset
	}
	return out
}

// Outcome is the outcome of a plan whose writes are done (or not to be done). With the source
// up: WriteFailed while rows are refused (a refusal is 4 in every writing command), else OK.
// With the source gone, for a disaster runbook: Found while rows are left, else Reread when
// some landed on a position that re-reads, else OK.
func (p *Plan) Outcome() outcome.Outcome {
	if p.SourceDown == "" {
		if p.Count(ActionRefused) > 0 {
			return outcome.WriteFailed
		}
		return outcome.OK
	}
	o := outcome.OK
	for _, r := range p.Rows {
		switch {
		case r.Landing == LandingLeft:
			return outcome.Found
		case r.Reread != nil:
			o = outcome.Reread
		}
	}
	return o
}

// leaveRefused leaves the rows to land (or hold) in the bundles rp refuses, with why and
// the bundle's reason, and counts the landings again.
func (p *Plan) leaveRefused(rp *reload.Plan, why string) {
	reason := map[string]string{}
	for _, b := range rp.Refused() {
		reason[b.Range] = fmt.Sprintf("%s (bundle %s: %s)", why, b.Range, b.Reason)
	}
	bundle := groupBundles(rp)
	for i := range p.Rows {
		r := &p.Rows[i]
		text, refused := reason[bundle[r.Group]]
		if !refused || !r.loads() {
			continue
		}
		r.Action, r.Landing, r.Reread, r.Why = ActionRefused, LandingLeft, nil, text+"; "+r.Why
	}
	p.count()
}

// dropHolds keeps a held value only where a reload of rp takes its group's bundle: elsewhere
// nothing loads the bundle and KoP keeps serving the value unwritten.
func (p *Plan) dropHolds(rp *reload.Plan) {
	bundle := groupBundles(rp)
	for i := range p.Rows {
		if r := &p.Rows[i]; r.Action == ActionHold && bundle[r.Group] == "" {
			r.Action, r.Translated = ActionRefused, nil
		}
	}
}

// groupBundles maps every group of rp to its bundle.
func groupBundles(rp *reload.Plan) map[string]string {
	out := make(map[string]string, len(rp.Groups))
	for _, g := range rp.Groups {
		out[g.Group] = g.Bundle
	}
	return out
}

func (e *Executor) log(format string, a ...any) {
	if e.Log != nil {
		e.Log(format, a...)
	}
}

func str(p *int64) string {
	if p == nil {
		return "nothing"
	}
	return fmt.Sprint(*p)
}
