package failover

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/match"
	"github.com/kop-offsets/kop-offsets/internal/reload"
)

// planKept is Plan when the source does not answer (SourceDown): the rows are the target's
// offsets that came from the source, and each lands on the translation watch kept on the
// target (loader.Kept: --keep-translations), never on an untranslated number. What the
// source committed after the last kept translation could not be checked: the group re-reads
// what it consumed since, and the row says so with the translation's age.
func (pl *Planner) planKept(ctx context.Context, sc Scope) (*Plan, error) {
	plan := &Plan{From: pl.From.Name, To: pl.To.Name, Rows: []Row{}, SourceDown: pl.SourceDown.Error()}
	dst, err := replayAll(ctx, pl.To)
	if err != nil {
		return nil, err
	}
	var cos []loader.CommittedOffset
	for _, co := range dst.Offsets() {
		short := loader.ShortName(co.Topic, pl.To.KafkaNamespace)
		fromSource := co.Origin == pl.From.Name || (co.Kept != nil && co.Kept.From == pl.From.Name)
		if fromSource && match.Any(sc.Groups, co.Group) && match.Any(sc.Topics, short, co.Topic) {
			cos = append(cos, co)
		}
	}
	slices.SortFunc(cos, func(a, b loader.CommittedOffset) int {
		return cmp.Or(strings.Compare(a.Group, b.Group), strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	var groups []string
	for _, co := range cos {
		if len(groups) == 0 || groups[len(groups)-1] != co.Group {
			groups = append(groups, co.Group)
		}
	}
	activity, served, actErr := pl.askTarget(ctx, groups)
	now := pl.now()
	for _, co := range cos {
		short := loader.ShortName(co.Topic, pl.To.KafkaNamespace)
		v := co.Offset
		r := Row{Group: co.Group, Topic: short, Partition: co.Partition, Persisted: &v, PersistedOrigin: co.Origin, Kept: co.Kept}
		if s, ok := served[co.Group][tp{short, co.Partition}]; ok {
			r.Served = &s
		}
		r.Action, r.Why = pl.decideKept(&r, co, now, activity[co.Group], actErr)
		plan.Rows = append(plan.Rows, r)
	}
	return plan, nil
}

// decideKept is one row's action without the source: its kept translation, what came after
// it, and the target's preflight (no members there; nothing of the target's own moved back).
func (pl *Planner) decideKept(r *Row, co loader.CommittedOffset, now time.Time, act reload.GroupActivity, actErr error) (string, string) {
	down := fmt.Sprintf("%s unreachable, nothing newer could be checked", pl.From.Name)
	k := co.Kept
	switch {
	case k == nil:
		r.Source = co.Offset
		return ActionRefused, fmt.Sprintf("no kept translation of %s's %d on %s (%s): the number may skip messages there; run 'kop-offsets watch --keep-translations' while both clusters answer, or fail over when %s is back", pl.From.Name, co.Offset, pl.To.Name, down, pl.From.Name)
	case co.Origin == "" && !k.Current:
		// The group committed on the target itself after the kept translation.
		r.Source = k.Source
		return ActionNone, fmt.Sprintf("the group committed %d on %s itself after the kept translation: its own number, left as it is", co.Offset, pl.To.Name)
	}
	r.Source = k.Source
	t := k.Offset
	r.Translated = &t
	age := now.Sub(k.At.Time()).Round(time.Second)
	why := fmt.Sprintf("kept translation of %s's %d, checked %s ago (%s)", pl.From.Name, k.Source, age, down)
	if !k.Current {
		// A newer commit replicated after it, untranslated: it is not trusted.
		r.Source = co.Offset
		if co.Offset < k.Source {
			return ActionRefused, fmt.Sprintf("%s's newest commit %d is older than the kept translation of its %d: the order is unknown; fail over when %s is back", pl.From.Name, co.Offset, k.Source, pl.From.Name)
		}
		why = fmt.Sprintf("%s's newer commit %d could not be translated (%s); landing on the kept translation of its %d, checked %s ago: the group re-reads what it consumed in between", pl.From.Name, co.Offset, down, k.Source, age)
	}
	if reason := pl.targetIdle(act, actErr); reason != "" {
		return ActionRefused, reason
	}
	switch {
	case r.Served != nil && *r.Served == t && *r.Persisted == t:
		return ActionNone, "already served: " + why
	case *r.Persisted == t:
		return ActionReload, "the offsets topic holds it, KoP does not serve it: " + why
	}
	return ActionWrite, why
}

func (pl *Planner) now() time.Time {
	if pl.Now != nil {
		return pl.Now()
	}
	return time.Now()
}
