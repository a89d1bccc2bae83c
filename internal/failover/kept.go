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
	case co.Newer != nil && co.Newer.Origin == "":
		// The group's own newer commit here, hidden by a kept translation written after it
		// (loader.Newer): its own number, written back.
		r.Source = k.Source
		own := co.Newer.Offset
		r.Translated = &own
		return pl.landKept(r, act, actErr, fmt.Sprintf("the group's own commit %d on %s, hidden by an older kept translation written after it: written back", own, pl.To.Name))
	}
	r.Source = k.Source
	t := k.Offset
	r.Translated = &t
	age := now.Sub(k.At.Time()).Round(time.Second)
	why := fmt.Sprintf("kept translation of %s's %d, checked %s ago (%s)", pl.From.Name, k.Source, age, down)
	// A newer commit of the source after the kept translation, untranslated: replicated
	// after it, or landed before a kept translation of an older one (loader.Newer).
	newest, untranslated := co.Offset, !k.Current
	if co.Newer != nil {
		newest, untranslated = co.Newer.Offset, true
	}
	if untranslated {
		r.Source = newest
		if newest < k.Source {
			return ActionRefused, fmt.Sprintf("%s's newest commit %d is below the kept translation of its %d (a reset?) and has no translation: landing on the kept one would skip what the group was moved back to read; fail over when %s is back", pl.From.Name, newest, k.Source, pl.From.Name)
		}
		why = fmt.Sprintf("%s's newer commit %d could not be translated (%s); landing on the kept translation of its %d, checked %s ago: the group re-reads what it consumed in between", pl.From.Name, newest, down, k.Source, age)
	}
	return pl.landKept(r, act, actErr, why)
}

// landKept is the action that lands r on *r.Translated, the target's preflight passed.
func (pl *Planner) landKept(r *Row, act reload.GroupActivity, actErr error, why string) (string, string) {
	t := *r.Translated
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
