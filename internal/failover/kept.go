package failover

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/match"
	"github.com/kop-offsets/kop-offsets/internal/reload"
)

// Landings of a row when the source is gone (Row.Landing): where the group starts on the
// target, newest safe position first. Every one but LandingLeft re-reads rather than skips.
const (
	// LandingKept: the translation watch kept of the source's newest commit.
	LandingKept = "kept"
	// LandingOlderKept: the kept translation of an older commit; the group re-reads what it
	// consumed on the source after it (Row.Reread).
	LandingOlderKept = "older_kept"
	// LandingOwn: the group's own commit on the target (it consumed the target's messages
	// before it there); it re-reads what it consumed on the source since.
	LandingOwn = "own_commit"
	// LandingEarliest: the log start of the target's copy: re-reads all it retains.
	LandingEarliest = "earliest"
	// LandingLeft: not landed; Why says why. KoP keeps serving what it serves (a held
	// value is written back where a reload of its bundle would change it: ActionHold).
	LandingLeft = "left"
)

// ActionHold writes what KoP serves for a left row back into the target's offsets topic,
// marked as the source's number (loader.PropHeldFrom), so that the reload of its bundle,
// which lands the other rows, keeps serving it instead of an untranslated newer number.
const ActionHold = "hold"

// Landings lists the landings in the order the plan's summary counts them.
var Landings = []string{LandingKept, LandingOlderKept, LandingOwn, LandingEarliest, LandingLeft}

// Reread is how much a landing re-reads: Messages in the source's numbering (older_kept:
// between the kept commit and the newest), or at most Messages (earliest: the target's
// retained log, AtMost), or an unknown amount (own_commit: what the group consumed on the
// source since its own commit on the target; Messages nil); Seconds of the source's commits
// it goes back, when known.
type Reread struct {
	Messages *int64   `json:"messages,omitempty"`
	AtMost   bool     `json:"atMost,omitempty"`
	Seconds  *float64 `json:"seconds,omitempty"`
}

func (r *Reread) String() string {
	if r.Messages == nil {
		return "re-reads an unknown number of messages"
	}
	s := fmt.Sprintf("re-reads %d messages", *r.Messages)
	if r.AtMost {
		s = fmt.Sprintf("re-reads at most %d messages", *r.Messages)
	}
	if r.Seconds != nil {
		s += fmt.Sprintf(" / %.0f s of commits", *r.Seconds)
	}
	return s
}

func messages(n int64) *int64 { return &n }

// planKept is Plan when the source does not answer (SourceDown): the rows are the target's
// offsets that came from the source, and each lands on the newest position that is safe
// without the source (decideKept), never on an untranslated number.
func (pl *Planner) planKept(ctx context.Context, sc Scope) (*Plan, error) {
	plan := &Plan{From: pl.From.Name, To: pl.To.Name, Rows: []Row{}, SourceDown: pl.SourceDown.Error(),
		target: loader.NewSnapshot(pl.To.Reader, loader.OrderingKoP)}
	dst, err := replayAll(ctx, plan.target, pl.To)
	if err != nil {
		return nil, err
	}
	cos := pl.fromSource(dst, sc)
	var groups []string
	for _, co := range cos {
		if len(groups) == 0 || groups[len(groups)-1] != co.Group {
			groups = append(groups, co.Group)
		}
	}
	activity, served, actErr := pl.askTarget(ctx, groups)
	k := keptRun{pl: pl, now: pl.now(), bounds: map[tp]*boundsAnswer{}}
	for _, co := range cos {
		short := loader.ShortName(co.Topic, pl.To.KafkaNamespace)
		v := co.Offset
		r := Row{Group: co.Group, Topic: short, Partition: co.Partition, Persisted: &v, PersistedOrigin: co.Origin, Kept: co.Kept}
		if s, ok := served[co.Group][tp{short, co.Partition}]; ok {
			r.Served = &s
		}
		r.Action, r.Why = k.decide(ctx, &r, co, activity[co.Group], actErr)
		plan.Rows = append(plan.Rows, r)
	}
	plan.count()
	return plan, nil
}

// fromSource returns the target's offsets that came from the source, sorted.
func (pl *Planner) fromSource(dst *loader.PersistedOffsets, sc Scope) []loader.CommittedOffset {
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
	return cos
}

// count fills the plan's summary: rows per landing.
func (p *Plan) count() {
	p.Landings = map[string]int{}
	for _, l := range Landings {
		p.Landings[l] = 0
	}
	for _, r := range p.Rows {
		p.Landings[r.Landing]++
	}
}

// keptRun decides the rows of one planKept; bounds caches the target copies' log bounds.
type keptRun struct {
	pl     *Planner
	now    time.Time
	bounds map[tp]*boundsAnswer
}

type boundsAnswer struct {
	b   align.Bounds
	err error
}

// decide is one row's landing and action without the source: its kept translation, what
// came after it, and the target's preflight (no members there).
func (k *keptRun) decide(ctx context.Context, r *Row, co loader.CommittedOffset, act reload.GroupActivity, actErr error) (string, string) {
	pl := k.pl
	if reason := pl.targetIdle(act, actErr); reason != "" {
		r.Source, r.Landing = co.Offset, LandingLeft
		return ActionRefused, reason
	}
	down := fmt.Sprintf("%s gone, nothing newer could be checked", pl.From.Name)
	kt := co.Kept
	switch {
	case kt == nil:
		r.Source = co.Offset
		why := fmt.Sprintf("no kept translation of %s's %d on %s (%s)", pl.From.Name, co.Offset, pl.To.Name, down)
		return k.fallback(ctx, r, co, true, why)
	case co.Origin == "" && !kt.Current:
		// The group committed on the target itself after the kept translation.
		r.Source, r.Landing = kt.Source, LandingOwn
		own := co.Offset
		r.Translated = &own
		return ActionNone, fmt.Sprintf("the group committed %d on %s itself after the kept translation: its own number, left as it is", co.Offset, pl.To.Name)
	case co.Newer != nil && co.Newer.Origin == "":
		// The group's own newer commit here, hidden by a kept translation written after it
		// (loader.Newer): its own number, written back.
		r.Source, r.Landing = kt.Source, LandingOwn
		own := co.Newer.Offset
		r.Translated = &own
		return landing(r, fmt.Sprintf("the group's own commit %d on %s, hidden by an older kept translation written after it: written back", own, pl.To.Name))
	}
	return k.kept(ctx, r, co, down)
}

// kept lands r on its kept translation: the newest (kept), or an older one while a newer
// commit of the source came after it untranslated (older_kept, with what it re-reads). A
// newer commit below the kept one is a reset: the kept translation would skip what the
// group was moved back to read, so the row falls back (never to its own commit, which may
// be past the reset point too).
func (k *keptRun) kept(ctx context.Context, r *Row, co loader.CommittedOffset, down string) (string, string) {
	pl, kt := k.pl, co.Kept
	r.Source = kt.Source
	t := kt.Offset
	r.Translated = &t
	age := k.now.Sub(kt.At.Time()).Round(time.Second)
	newest, at, untranslated := co.Offset, co.CommitTimestamp, !kt.Current
	if co.Newer != nil {
		newest, at, untranslated = co.Newer.Offset, co.Newer.CommitTimestamp, true
	}
	if !untranslated {
		r.Landing = LandingKept
		return landing(r, fmt.Sprintf("kept translation of %s's %d, checked %s ago (%s)", pl.From.Name, kt.Source, age, down))
	}
	r.Source = newest
	if newest < kt.Source {
		r.Translated = nil
		why := fmt.Sprintf("%s's newest commit %d is below the kept translation of its %d (a reset?) and has no translation: the kept one would skip what the group was moved back to read", pl.From.Name, newest, kt.Source)
		return k.fallback(ctx, r, co, false, why)
	}
	r.Landing = LandingOlderKept
	r.Reread = &Reread{Messages: messages(newest - kt.Source)}
	if secs := at.Time().Sub(kt.At.Time()).Seconds(); at > 0 && secs > 0 {
		r.Reread.Seconds = &secs
	}
	return landing(r, fmt.Sprintf("older kept: %s; %s's newer commit %d could not be translated (%s); landing on the kept translation of its %d, checked %s ago: the group re-reads what it consumed in between",
		r.Reread, pl.From.Name, newest, down, kt.Source, age))
}

// landing is the action that lands r on *r.Translated.
func landing(r *Row, why string) (string, string) {
	t := *r.Translated
	switch {
	case r.Served != nil && *r.Served == t && *r.Persisted == t:
		return ActionNone, "already served: " + why
	case *r.Persisted == t:
		return ActionReload, "the offsets topic holds it, KoP does not serve it: " + why
	}
	return ActionWrite, why
}
