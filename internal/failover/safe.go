package failover

import (
	"context"
	"errors"
	"fmt"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// fallback lands a row that has no usable kept translation on the newest position that
// re-reads rather than skips: the group's own commit on the target (when ownOK), else the
// log start of the target's copy. Never worse: while KoP serves a newer offset than that,
// landing would move it back, so the row is left unless --accept-loss (leave).
func (k *keptRun) fallback(ctx context.Context, r *Row, co loader.CommittedOffset, ownOK bool, why string) (string, string) {
	pl := k.pl
	cand, land, detail, err := k.safe(ctx, r, co, ownOK)
	if err != nil {
		return k.leave(r, fmt.Sprintf("%s; no safe position: %v", why, err))
	}
	if r.Served != nil && *r.Served > cand && !pl.AcceptLoss {
		return k.leave(r, fmt.Sprintf("%s; KoP on %s serves %d, and landing on %s would move it back (--accept-loss lands it there)",
			why, pl.To.Name, *r.Served, detail))
	}
	r.Translated, r.Landing = &cand, land
	return landing(r, why+"; landing on "+detail)
}

// safe is the newest position of r that re-reads rather than skips, its landing and a text
// naming it with how much it re-reads.
func (k *keptRun) safe(ctx context.Context, r *Row, co loader.CommittedOffset, ownOK bool) (int64, string, string, error) {
	pl := k.pl
	if ownOK && co.Own != nil {
		r.Reread = &Reread{}
		return *co.Own, LandingOwn, fmt.Sprintf("the group's own commit %d on %s (it re-reads what it consumed on %s since)",
			*co.Own, pl.To.Name, pl.From.Name), nil
	}
	b, err := k.logBounds(ctx, r.Topic, r.Partition)
	if err != nil {
		return 0, "", "", err
	}
	r.Reread = &Reread{Messages: messages(b.End - b.Start), AtMost: true}
	return b.Start, LandingEarliest, fmt.Sprintf("the earliest position %d of %s's copy (%s: all it retains, up to its end %d)",
		b.Start, pl.To.Name, r.Reread, b.End), nil
}

// logBounds are the bounds of the target's copy of a topic partition, read once per run.
func (k *keptRun) logBounds(ctx context.Context, topic string, partition int32) (align.Bounds, error) {
	key := tp{topic, partition}
	if a, ok := k.bounds[key]; ok {
		return a.b, a.err
	}
	a := &boundsAnswer{}
	if k.pl.To.Copies == nil {
		a.err = errors.New("no Kafka listener to read the target's copy of the topic through")
	} else {
		a.b, a.err = k.pl.To.Copies.Scan(ctx, topic, partition, func(align.Record) bool { return false })
		if a.err != nil {
			a.err = fmt.Errorf("the log start of %s's copy of %s[%d]: %w", k.pl.To.Name, topic, partition, a.err)
		}
	}
	k.bounds[key] = a
	return a.b, a.err
}

// leave leaves r: KoP keeps serving what it serves. Where the offsets topic holds another
// number (untranslated: it came from the source), the reload of the bundle that lands the
// other rows would serve it instead, so the served value is held (ActionHold); nothing is
// written where KoP serves nothing or what the topic holds (a reload changes nothing there).
func (k *keptRun) leave(r *Row, why string) (string, string) {
	r.Landing, r.Translated, r.Reread = LandingLeft, nil, nil
	if r.Served == nil || *r.Served == *r.Persisted {
		return ActionRefused, why
	}
	s := *r.Served
	r.Translated = &s
	return ActionHold, fmt.Sprintf("%s; KoP keeps serving %d (held: written back as %s's number where a reload of its bundle would serve the topic's %d)",
		why, s, k.pl.From.Name, *r.Persisted)
}
