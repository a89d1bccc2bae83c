package align

import (
	"context"
	"fmt"
	"time"
)

// TrackerIdle is how long a Pool keeps a Tracker that answered nothing: a topic partition
// whose groups stopped committing (or were deleted) gives its memory back, and is built
// again if they come back.
const TrackerIdle = time.Hour

// Pool holds the Trackers of many (from, to, topic, partition), shared by every group, and
// the Trackers of single groups built from their own commit on the target (Floor). One Pool
// serves every caller that translates continuously (watch's keeper, sync), so each pair of
// copies is read once whatever the number of groups. Not safe for concurrent use (Warm reads
// many Trackers at once, itself called alone; reads WarmFor leaves in the background touch
// their own Trackers only).
type Pool struct {
	// Sources reads every cluster's data topics, by cluster name.
	Sources map[string]Source
	// MaxMessages bounds a first read of a copy (0: DefaultMaxMessages).
	MaxMessages int64
	// Now is the clock of the idle sweep (nil: time.Now).
	Now func() time.Time

	trackers map[poolKey]*Tracker
	used     map[poolKey]time.Time // when each Tracker last answered
	swept    time.Time
	retired  TrackerStats // what the dropped Trackers read (Stats never goes back)
	rd       reading      // the reads WarmFor left in the background
}

type poolKey struct {
	from, to, topic string
	partition       int32
	group           string // a Tracker from one group's own commit (Floor), "" for the shared one
}

// Translate moves offset, committed by group on from, into to's numbering of topic (its
// Kafka short name) and partition. floor is the group's own commit on to (0: none): when the
// shared Tracker answers below it, a Tracker of the group built from the floor answers, so
// that messages only to holds before the group's own position (a failback) do not send the
// group back to them.
func (p *Pool) Translate(ctx context.Context, from, to, topic string, partition int32, offset, floor int64, group string) (Translation, error) {
	plain := poolKey{from: from, to: to, topic: topic, partition: partition}
	if p.rd.isBusy(plain) {
		return Translation{}, ErrReading
	}
	tr, err := p.tracker(plain, 0)
	if err != nil {
		return Translation{}, err
	}
	t, err := tr.Translate(ctx, offset)
	own := plain
	own.group = group
	if err != nil || floor <= 0 || t.Translated >= floor {
		p.drop(own)
		return t, err
	}
	if tr, err = p.groupTracker(own, floor, false); err != nil {
		return Translation{}, err
	}
	return tr.Translate(ctx, offset)
}

// groupTracker is the Tracker of one group's key from its floor (since: BuildSince), made
// anew when the group's floor moved.
func (p *Pool) groupTracker(key poolKey, floor int64, since bool) (*Tracker, error) {
	if ft := p.trackers[key]; ft != nil && ft.Floor != floor {
		p.drop(key) // built from an older commit of the group
	}
	tr, err := p.tracker(key, floor)
	if err != nil {
		return nil, err
	}
	tr.Since = since
	return tr, nil
}

// TranslateSince is Translate for a group moved back on from (a reset) below where it stood on
// to, floor (its own position there): the messages only to holds before floor count as
// consumed, and the answer lands where the group was moved back to, below floor if need be
// (BuildSince). A Tracker of the group from floor answers.
func (p *Pool) TranslateSince(ctx context.Context, from, to, topic string, partition int32, offset, floor int64, group string) (Translation, error) {
	key := poolKey{from: from, to: to, topic: topic, partition: partition, group: group + "\x00since"}
	tr, err := p.groupTracker(key, floor, true)
	if err != nil {
		return Translation{}, err
	}
	return tr.Translate(ctx, offset)
}

// FloorHolds reports whether the group's own position floor on to (its numbering) still
// binds a translation of offset, committed by the group on from: the newest intent wins.
// The floor holds while the source's commit is at or past where the floor stands in the
// source's numbering (the group moved on from where it left to: a failback, whose messages
// only to holds before floor are not read again). A source below that was moved back after
// the group left to (a reset to earliest, to a datetime, by a shift): the translation then
// follows it backwards (TranslateSince), exactly to the reset point. Where the floor stands
// is asked in to's numbering: the source's commit translated with to's messages before the
// floor counted as consumed (TranslateSince) lands below the floor exactly when the source
// points before it. (Translating the floor back into the source's numbering instead stopped
// at the first message only the source holds, so that a reset was never followed where the
// source's copy starts with messages of its own.) When that cannot be read the floor holds:
// never a skip. One rule for sync (package offsetsync), kept translations (package standby)
// and check (package survey).
func (p *Pool) FloorHolds(ctx context.Context, from, to, topic string, partition int32, offset, floor int64, group string) bool {
	if floor <= 0 {
		return true
	}
	t, err := p.TranslateSince(ctx, from, to, topic, partition, offset, floor, group)
	return err != nil || t.Translated >= floor
}

// TranslateFloored is Translate floored on floor, or TranslateSince where FloorHolds says the
// group was moved back below it (the Tracker since the floor answers both).
func (p *Pool) TranslateFloored(ctx context.Context, from, to, topic string, partition int32, offset, floor int64, group string) (Translation, error) {
	if !p.FloorHolds(ctx, from, to, topic, partition, offset, floor, group) {
		return p.TranslateSince(ctx, from, to, topic, partition, offset, floor, group)
	}
	return p.Translate(ctx, from, to, topic, partition, offset, floor, group)
}

// Trackers is how many Trackers the Pool holds.
func (p *Pool) Trackers() int { return len(p.trackers) }

// Stats sums what the Trackers read, dropped ones included: the cost of translating
// continuously (docs/failover.md).
func (p *Pool) Stats() TrackerStats {
	s := p.retired
	for key, tr := range p.trackers {
		if p.rd.isBusy(key) {
			addStats(&s, p.rd.seen[key]) // its read's goroutine owns it
			continue
		}
		if p.rd.seen == nil {
			p.rd.seen = map[poolKey]TrackerStats{}
		}
		p.rd.seen[key] = tr.Stats()
		addStats(&s, tr.Stats())
	}
	return s
}

// tracker returns the Tracker of key, new if there is none (floor: see Tracker).
func (p *Pool) tracker(key poolKey, floor int64) (*Tracker, error) {
	now := p.now()
	p.sweep(now)
	if p.used == nil {
		p.used = map[poolKey]time.Time{}
	}
	p.used[key] = now
	if tr := p.trackers[key]; tr != nil {
		return tr, nil
	}
	src, dst := p.Sources[key.from], p.Sources[key.to]
	if src == nil || dst == nil {
		return nil, fmt.Errorf("no Kafka listener to read %s[%d] through on %s or %s", key.topic, key.partition, key.from, key.to)
	}
	tr := &Tracker{From: key.from, To: key.to, Topic: key.topic, Partition: key.partition, Src: src, Dst: dst, MaxMessages: p.MaxMessages, Floor: floor}
	if p.trackers == nil {
		p.trackers = map[poolKey]*Tracker{}
	}
	p.trackers[key] = tr
	return tr, nil
}

// sweep drops the Trackers idle for TrackerIdle, at most once a minute: a sweep walks every
// Tracker, and one a minute is plenty against an hour's idleness.
func (p *Pool) sweep(now time.Time) {
	if now.Sub(p.swept) < time.Minute {
		return
	}
	p.swept = now
	for key, at := range p.used {
		if now.Sub(at) > TrackerIdle && !p.rd.isBusy(key) {
			p.drop(key)
		}
	}
}

// drop forgets the Tracker of key, keeping what it read in Stats.
func (p *Pool) drop(key poolKey) {
	if tr := p.trackers[key]; tr != nil {
		addStats(&p.retired, tr.Stats())
		delete(p.trackers, key)
	}
	delete(p.used, key)
	delete(p.rd.seen, key)
}

func addStats(s *TrackerStats, t TrackerStats) {
	s.Builds += t.Builds
	s.SourceReads += t.SourceReads
	s.TargetReads += t.TargetReads
	s.Translations += t.Translations
}

func (p *Pool) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Warm brings the shared Tracker of every topic partition in reqs up to the highest offset
// asked of it (Floor is not used: the Trackers of single groups build from their own commit),
// at most par Trackers reading at once, so that the Translate calls that follow answer from
// what was read. Each Tracker reads only its own partition's copies, and one read is a few
// round trips to each cluster: a cycle of sync that advanced 20 partitions one after the
// other spent 3.6 s in those reads (issue 31's scale test). A Tracker that fails here is left
// as it is: Translate meets the error again and reports it per group. Warm itself must not
// run concurrently with other calls of the Pool.
func (p *Pool) Warm(ctx context.Context, reqs []Request, par int) { p.WarmFor(ctx, reqs, par, 0) }
