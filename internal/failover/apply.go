package failover

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/reload"
)

// LocalWriter writes one OffsetCommit request of a group into the target's offsets topic,
// in KoP's format, with replication disabled so that the record stays on the target
// (*kop.Writer with Local set).
type LocalWriter interface {
	CommitRequest(ctx context.Context, commits []kop.OffsetCommit) (int32, pulsar.MessageID, error)
}

// Reloader reloads bundles of the target (package reload).
type Reloader interface {
	Plan(ctx context.Context, groups []string, intended map[reload.IntendedKey]int64) (*reload.Plan, error)
	Execute(ctx context.Context, plan *reload.Plan) *reload.Execution
}

// Executor applies a Plan.
type Executor struct {
	From, To Side
	Writer   LocalWriter
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
	// Proof is what each cluster serves afterwards, row by row.
	Proof []Proof `json:"proof"`
	Error string  `json:"error,omitempty"`
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
// failover, so no record is ever left written but not loaded.
func (e *Executor) Apply(ctx context.Context, plan *Plan) *Result {
	res := &Result{Written: []string{}, Proof: []Proof{}}
	groups := plan.Groups(ActionWrite, ActionReload)
	if len(groups) == 0 {
		res.ExitCode = plan.Left()
		return res
	}
	// 1. The reload as it would run, the rows to write taken as they will be.
	now := map[reload.IntendedKey]int64{}
	after := map[reload.IntendedKey]int64{}
	for _, r := range plan.Rows {
		if r.Action != ActionWrite && r.Action != ActionReload {
			continue
		}
		k := reload.IntendedKey{Group: r.Group, Topic: r.Topic, Partition: r.Partition}
		after[k] = *r.Translated
		if r.Persisted != nil {
			now[k] = *r.Persisted
		}
	}
	pre, err := e.Reloader.Plan(ctx, groups, now)
	if err != nil {
		res.Error, res.ExitCode = "plan of the reload: "+err.Error()+" (nothing was written)", outcome.Unreachable
		return res
	}
	if refused := pre.Refused(); len(refused) > 0 {
		res.Reload = pre
		res.Error = fmt.Sprintf("the reload of %s's bundle %s would be refused, so nothing was written: %s", plan.To, refused[0].Range, refused[0].Reason)
		res.ExitCode = outcome.WriteFailed
		return res
	}
	// 2. The records, on the target only.
	byGroup := map[string][]kop.OffsetCommit{}
	for _, r := range plan.Rows {
		if r.Action == ActionWrite {
			byGroup[r.Group] = append(byGroup[r.Group], kop.OffsetCommit{Group: r.Group,
				Topic: loader.NormalizeTopic(r.Topic, e.To.KafkaNamespace), Partition: r.Partition, Offset: *r.Translated})
		}
	}
	for _, g := range slices.Sorted(maps.Keys(byGroup)) {
		e.log("cluster %s: writing the translated offsets of %s (replication disabled)", plan.To, g)
		if _, _, err := e.Writer.CommitRequest(ctx, byGroup[g]); err != nil {
			res.Error = fmt.Sprintf("cluster %s: write of group %s failed: %v; written before it: %v (their records are in the offsets topic but not loaded: run failover again)", plan.To, g, err, res.Written)
			res.ExitCode = outcome.WriteFailed
			return res
		}
		res.Written = append(res.Written, g)
	}
	// 3. The reload, now predicting the written values.
	rp, err := e.Reloader.Plan(ctx, groups, after)
	if err != nil {
		res.Error, res.ExitCode = fmt.Sprintf("plan of the reload after writing %v: %v (written, not loaded: run failover again)", res.Written, err), outcome.WriteFailed
		return res
	}
	res.Reload = rp
	if refused := rp.Refused(); len(refused) > 0 {
		res.Error = fmt.Sprintf("written %v, but the reload of bundle %s is now refused: %s (run failover again)", res.Written, refused[0].Range, refused[0].Reason)
		res.ExitCode = outcome.WriteFailed
		return res
	}
	res.Execution = e.Reloader.Execute(ctx, rp)
	// 4. The proof: the target serves the translated offsets, the source its own.
	res.Proof = e.prove(ctx, plan)
	res.ExitCode = res.Execution.ExitCode
	for _, p := range res.Proof {
		if !p.OK && res.ExitCode == outcome.OK {
			res.ExitCode = outcome.WriteFailed
			res.Error = fmt.Sprintf("%s %s[%d]: %s serves %s after the reload, want %d", p.Group, p.Topic, p.Partition,
				plan.To, str(p.TargetServes), p.Translated)
		}
	}
	if res.ExitCode == outcome.OK {
		res.ExitCode = plan.Left()
	}
	return res
}

func (e *Executor) prove(ctx context.Context, plan *Plan) []Proof {
	serves := func(s Side, g string) map[tp]int64 {
		out := map[tp]int64{}
		if s.Groups == nil {
			return out
		}
		offs, err := s.Groups.FetchOffsets(ctx, g)
		if err != nil {
			e.log("cluster %s: fetch offsets of %s: %v", s.Name, g, err)
		}
		for _, o := range offs {
			out[tp{o.Topic, o.Partition}] = o.Offset
		}
		return out
	}
	var out []Proof
	cache := map[string][2]map[tp]int64{}
	for _, r := range plan.Rows {
		if r.Action == ActionRefused || r.Translated == nil {
			continue
		}
		c, ok := cache[r.Group]
		if !ok {
			c = [2]map[tp]int64{serves(e.To, r.Group), serves(e.From, r.Group)}
			cache[r.Group] = c
		}
		p := Proof{Group: r.Group, Topic: r.Topic, Partition: r.Partition, Translated: *r.Translated, Source: r.Source}
		if v, ok := c[0][tp{r.Topic, r.Partition}]; ok {
			p.TargetServes = &v
		}
		if v, ok := c[1][tp{r.Topic, r.Partition}]; ok {
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

// Left is the outcome of a plan whose writes are done (or not to be done): WriteFailed while
// rows are refused (a refusal is 4 in every writing command), else OK.
func (p *Plan) Left() outcome.Outcome {
	if p.Count(ActionRefused) > 0 {
		return outcome.WriteFailed
	}
	return outcome.OK
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
