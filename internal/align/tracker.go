package align

import (
	"context"
	"fmt"
	"math"
)

// RangeSource is a Source that can also read from an offset on, so that a Tracker reads only
// what replicated since its last step. *KafkaSource implements it.
type RangeSource interface {
	Source
	// ScanFrom is Scan starting at offset from (the log start where that is later).
	ScanFrom(ctx context.Context, topic string, partition int32, from int64, fn func(Record) bool) (Bounds, error)
}

// DefaultStep bounds the messages a Tracker reads from each copy per call.
const DefaultStep = 200_000

// readAhead is how many messages past the one asked for an advance reads as well (as far as
// the copies hold them): the groups of a partition commit at many positions, and each
// read is a few round trips to both clusters, so one read now spares the next cycles theirs.
const readAhead = 1_000

// TrackerStats counts what a Tracker read and built, for the cost per replicated message and
// per commit (docs/failover.md).
type TrackerStats struct {
	Builds       int64 // full Builds (the first one, and one after each divergence)
	SourceReads  int64 // messages read from the source's copy, Builds included
	TargetReads  int64
	Translations int64
}

// Tracker keeps the translation of one topic partition from one cluster to another current
// while messages replicate. The first call builds a Map (both copies read from their log
// start, bounded); after that the copies are compared in lockstep from the anchor (the
// highest offset the Map covers and its translation): as long as the target's next message is
// the source's next message at the same distance, a committed offset O past the anchor s
// translates to t+(O-s), and only the messages replicated since the last call are read. A
// copy that stops matching (a message on one side only, another order) breaks the lockstep:
// the next offset past it is answered by a new Build. Not safe for concurrent use.
type Tracker struct {
	From, To  string
	Topic     string
	Partition int32
	Src, Dst  Source
	// MaxMessages bounds a Build's reads per copy (0: DefaultMaxMessages); Step bounds a
	// lockstep read per call (0: DefaultStep).
	MaxMessages, Step int64
	// Floor is one group's own commit on the target (BuildFrom; 0: none): a Tracker with a
	// floor answers for that group only.
	Floor int64
	// Since: the group was moved back on the source below Floor (BuildSince): the target's
	// messages before Floor that the source lacks count as consumed, and answers may be
	// below Floor.
	Since bool

	m      *Map
	anchor Translation // m.Translate(m.UpTo)
	s, t   int64       // lockstep origin: source offset s is target offset t
	k      int64       // pairs verified from (s, t)
	// stuck: the target's message at t exists there only, so every offset from s on
	// translates to t (the group must read it). broken: the lockstep failed at pair k.
	stuck, broken bool
	stuckID       uint64 // stuck: the identity of the target's message at t
	// extra: the target holds a message at t+k that the source's copy does not (yet).
	extra  bool
	srcEnd int64 // the source's log end at the last read
	// provisional: the anchor is Behind, so the Map's answers rise when the target's copy
	// grows (dstEnd: its log end when the Map was built).
	provisional bool
	dstEnd      int64
	stats       TrackerStats
}

// Stats returns what the Tracker read so far.
func (tr *Tracker) Stats() TrackerStats { return tr.stats }

// Covered is the highest source offset the Tracker translates without reading (-1 before
// the first call).
func (tr *Tracker) Covered() int64 {
	if tr.m == nil {
		return -1
	}
	if tr.stuck {
		return math.MaxInt64
	}
	return tr.s + tr.k
}

// TranslateAll translates several committed offsets of the partition; the lowest one decides
// what a first Build reads, so that the Map holds as little history as the groups need.
func (tr *Tracker) TranslateAll(ctx context.Context, offsets []int64) ([]Translation, error) {
	if tr.m == nil && len(offsets) > 0 {
		lo := offsets[0]
		for _, o := range offsets {
			lo = min(lo, o)
		}
		if err := tr.build(ctx, lo); err != nil {
			return nil, err
		}
	}
	out := make([]Translation, len(offsets))
	for i, o := range offsets {
		t, err := tr.Translate(ctx, o)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

// Translate moves committed offset o from the source's numbering to the target's, reading
// what replicated since the last call when o lies past what was verified.
func (tr *Tracker) Translate(ctx context.Context, o int64) (Translation, error) {
	t, err := tr.translate(ctx, o)
	if err == nil && tr.m != nil && tr.m.Floor > 0 && t.Floor == nil {
		f := tr.m.Floor // the Build's: a floor past the copy's end is none
		t.Floor, t.Translated = &f, max(t.Translated, f)
	}
	return t, err
}

func (tr *Tracker) translate(ctx context.Context, o int64) (Translation, error) {
	tr.stats.Translations++
	if tr.m == nil {
		if err := tr.build(ctx, o); err != nil {
			return Translation{}, err
		}
	}
	if tr.provisional {
		if err := tr.refresh(ctx, max(o, tr.s)); err != nil {
			return Translation{}, err
		}
	}
	if o <= tr.m.UpTo {
		return tr.m.Translate(o)
	}
	if o > tr.s+tr.k && !tr.broken {
		if err := tr.advance(ctx, o); err != nil {
			return Translation{}, err
		}
	}
	if o > tr.s+tr.k && tr.broken {
		if err := tr.build(ctx, o); err != nil {
			return Translation{}, err
		}
		return tr.anchor, nil
	}
	if tr.stuck {
		t := tr.anchor
		t.Offset, t.Next = o, nil
		t.Unmatched += o - tr.s // the consumed messages from s on sit after t, if anywhere
		return t, nil
	}
	return tr.lockstep(o), nil
}

// lockstep answers o from the verified pairs: the same message at the same distance from
// the anchor on both sides, or the target's end of what was verified.
func (tr *Tracker) lockstep(o int64) Translation {
	t := Translation{From: tr.From, To: tr.To, Offset: o, Unmatched: tr.anchor.Unmatched, FirstUnmatched: tr.anchor.FirstUnmatched}
	if o < tr.s+tr.k {
		t.Translated, t.Next = tr.t+(o-tr.s), &o
		return t
	}
	// Every verified target message was consumed; the next is the first not consumed.
	t.Translated, t.TargetOnly = tr.t+tr.k, tr.extra
	t.Behind = !tr.extra && tr.s+tr.k < min(o, tr.srcEnd)
	if base := max(tr.s+tr.k, tr.srcEnd); o > base && !tr.extra {
		// Past the source's log end: positions of messages not yet written, which
		// replication appends in the same order on both sides (as Map.Translate). Counted
		// from the anchor when the anchor itself lies past the end (a commit past the end
		// built it: its translation holds that distance already; counting from the log end
		// again ran ahead of the reference by it).
		t.Translated += o - base
	}
	return t
}

func (tr *Tracker) build(ctx context.Context, upTo int64) error {
	src, dst := &counting{Source: tr.Src, n: &tr.stats.SourceReads}, &counting{Source: tr.Dst, n: &tr.stats.TargetReads}
	floor := tr.Floor
	if floor <= 0 {
		floor = -1
	}
	buildMap := BuildFrom
	if tr.Since {
		buildMap = BuildSince
	}
	m, err := buildMap(ctx, tr.From, tr.To, src, dst, tr.Topic, tr.Partition, upTo, floor, tr.MaxMessages)
	if err != nil {
		return err
	}
	a, err := m.Translate(upTo)
	if err != nil {
		return err
	}
	tr.stats.Builds++
	tr.m, tr.anchor = m, a
	tr.s, tr.t, tr.k = upTo, a.Translated, 0
	tr.stuck, tr.broken, tr.extra = a.TargetOnly, false, false
	tr.srcEnd = m.Source.End
	tr.provisional, tr.dstEnd = a.Behind, m.Target.End
	if tr.stuck {
		// The message at t is not among the source's first upTo: every later offset
		// translates to t while the source's later messages are not it either.
		tr.stuckID, err = tr.firstID(ctx, tr.t)
	}
	return err
}

// refresh builds the Map again, up to upTo, when its anchor is provisional and the target's
// copy grew since.
func (tr *Tracker) refresh(ctx context.Context, upTo int64) error {
	dst, ok := tr.Dst.(RangeSource)
	if !ok {
		return tr.build(ctx, upTo)
	}
	b, err := dst.ScanFrom(ctx, tr.Topic, tr.Partition, math.MaxInt64, func(Record) bool { return false })
	if err != nil {
		return fmt.Errorf("cluster %s: log end of %s[%d]: %w", tr.To, tr.Topic, tr.Partition, err)
	}
	if b.End == tr.dstEnd {
		return nil
	}
	return tr.build(ctx, upTo)
}

// firstID is the identity of the target's message at offset off.
func (tr *Tracker) firstID(ctx context.Context, off int64) (uint64, error) {
	dst, ok := tr.Dst.(RangeSource)
	if !ok {
		tr.broken = true
		return 0, nil
	}
	var id uint64
	_, err := dst.ScanFrom(ctx, tr.Topic, tr.Partition, off, func(r Record) bool {
		tr.stats.TargetReads++
		id = r.ID
		return false
	})
	if err != nil {
		return 0, fmt.Errorf("cluster %s: read %s[%d] at %d: %w", tr.To, tr.Topic, tr.Partition, off, err)
	}
	return id, nil
}

// advance verifies more of the copies, up to the message at o (the first a group at o has
// not consumed), as far as both copies hold them and Step allows: pairs in lockstep, or,
// stuck, the source's messages that are not the target's message at t.
func (tr *Tracker) advance(ctx context.Context, o int64) error {
	src, ok1 := tr.Src.(RangeSource)
	dst, ok2 := tr.Dst.(RangeSource)
	if !ok1 || !ok2 {
		tr.broken = true // no incremental reads: every offset past the Map is a Build
		return nil
	}
	step := tr.Step
	if step <= 0 {
		step = DefaultStep
	}
	from := tr.s + tr.k
	want := max(min(o-from+1, step), min(readAhead, step))
	var srcRecs []Record
	b, err := src.ScanFrom(ctx, tr.Topic, tr.Partition, from, func(r Record) bool {
		tr.stats.SourceReads++
		srcRecs = append(srcRecs, r)
		return int64(len(srcRecs)) < want
	})
	if err != nil {
		return fmt.Errorf("cluster %s: read %s[%d] from %d: %w", tr.From, tr.Topic, tr.Partition, from, err)
	}
	tr.srcEnd = b.End
	if tr.stuck {
		for _, r := range srcRecs {
			if r.ID == tr.stuckID {
				tr.broken = true // the target's message is the source's after all
				return nil
			}
			tr.k = r.Offset - tr.s + 1
		}
		if int64(len(srcRecs)) < want {
			// The scan reached the log end: every message up to it was checked. (Not
			// otherwise: the unread rest may hold the target's message.)
			tr.k = max(tr.k, b.End-tr.s)
		}
		return nil
	}
	// One target message more than the source gave, when the source has no more: whether
	// the target holds a message the source does not (as far as read).
	extra := int64(len(srcRecs)) < want
	i := 0
	tr.extra = false
	_, err = dst.ScanFrom(ctx, tr.Topic, tr.Partition, tr.t+tr.k, func(r Record) bool {
		tr.stats.TargetReads++
		if i == len(srcRecs) {
			tr.extra = true
			return false
		}
		sr := srcRecs[i]
		// The same message at the same distance from the anchor on both sides.
		if r.ID != sr.ID || r.Offset-tr.t != sr.Offset-tr.s {
			tr.broken = true
			return false
		}
		tr.k = sr.Offset - tr.s + 1
		i++
		return i < len(srcRecs) || extra
	})
	if err != nil {
		return fmt.Errorf("cluster %s: read %s[%d] from %d: %w", tr.To, tr.Topic, tr.Partition, tr.t+tr.k, err)
	}
	return nil
}

// counting counts the records a Source hands out.
type counting struct {
	Source
	n *int64
}

func (c *counting) Scan(ctx context.Context, topic string, partition int32, fn func(Record) bool) (Bounds, error) {
	return c.Source.Scan(ctx, topic, partition, func(r Record) bool {
		*c.n++
		return fn(r)
	})
}
