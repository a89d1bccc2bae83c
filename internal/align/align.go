// Package align finds the same message on two clusters and translates a consumer group's
// committed offset from one cluster's numbering into another's without skipping a message.
//
// KoP's Kafka offset is each cluster's own index of its copy of a topic partition (the
// broker-entry index), so offset N denotes the same message on two clusters only while both
// copies hold the same messages in the same order. When they differ (replication enabled
// after data existed, messages published with replication off, producers on both sides, a
// topic recreated on one side), a number carried over by the replicated offsets topic names
// another message. This package compares the copies message by message (an identity that
// replication preserves: timestamp, key, value and headers) and answers, for a committed
// offset O on the source, the translated offset T on the target: the first message of the
// target's copy that the group has not consumed on the source. Every message before T was
// consumed; messages at or after T may be read again, none is skipped (the no-skip rule).
package align

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
)

// Record is one message of a topic partition on one cluster: its offset there and an
// identity that is equal on every cluster that holds a copy of the message.
type Record struct {
	Offset int64
	ID     uint64
}

// Bounds are a copy's log start (first offset still held) and log end (next offset).
type Bounds struct {
	Start, End int64
}

// Source reads one cluster's copy of topic partitions.
type Source interface {
	// Scan calls fn for every record of topic/partition from the log start, in offset
	// order, up to the log end as of the call or until fn returns false, and returns the
	// bounds it read between.
	Scan(ctx context.Context, topic string, partition int32, fn func(Record) bool) (Bounds, error)
}

// ErrTooLarge is wrapped when a copy holds more messages before the offsets to translate
// than the budget allows: the alignment stays unknown rather than reading without bound.
var ErrTooLarge = errors.New("alignment budget exceeded")

// DefaultMaxMessages is the default budget of messages read per copy of a topic partition.
const DefaultMaxMessages = 2_000_000

// Map relates the source's copy of one topic partition to the target's, for committed
// offsets up to UpTo on the source. Build it once per topic partition and pair of clusters;
// Translate is then a binary search.
type Map struct {
	From, To  string
	Topic     string
	Partition int32
	UpTo      int64 // committed offsets up to this one translate
	// Floor is the group's own commit on the target (its numbering) the Map starts from, -1
	// for none (BuildFrom).
	Floor  int64
	Source Bounds // the source's copy as read
	Target Bounds // the target's copy as read

	// prefMax[i] is the highest source offset among the target's records Target.Start..
	// Target.Start+i (scanned order); a target record not among the source's first UpTo
	// messages counts as +inf. Translate(O) is the first i where prefMax reaches O.
	prefMax []int64
	tOffs   []int64 // target offsets of the scanned records (gaps: control records)
	srcOffs []int64 // source offsets read up to UpTo, ascending
	// missing are the source offsets below UpTo that no scanned target record matched,
	// sorted: consumed messages the target lacks before the translated offset.
	missing []int64
	// stop is the target offset where the scan stopped: the first record not among the
	// source's first UpTo messages, or Target.End.
	stop int64
	// below are the source offsets of the target's records before Floor, sorted: consumed on
	// the target itself.
	below []int64
}

// Translation is one committed offset moved from the source's numbering to the target's.
type Translation struct {
	From       string `json:"from"`
	To         string `json:"to"`
	Offset     int64  `json:"offset"`     // on From: the group's committed offset (next to read)
	Translated int64  `json:"translated"` // on To: the first message not consumed on From
	// Next is the source offset of the message at Translated on the target; nil when that
	// message is not among the source's messages before the committed offset's range (it
	// exists on the target only) or Translated is the target's log end.
	Next *int64 `json:"next,omitempty"`
	// TargetOnly: the message at Translated exists on the target only (not consumed, never
	// on the source as far as read): the group starts there.
	TargetOnly bool `json:"targetOnly,omitempty"`
	// Unmatched counts the messages consumed on the source that the target does not hold
	// before Translated: absent there, or held after it (a consumer starting at Translated
	// reads those again). FirstUnmatched is the first consumed message found nowhere in what
	// was read of the target (a source offset).
	Unmatched      int64  `json:"unmatched"`
	FirstUnmatched *int64 `json:"firstUnmatched,omitempty"`
	// Behind: the target does not hold the last message the group consumed (yet: the
	// replication of the data is behind), so Translated is the target's log end and rises
	// as the messages arrive.
	Behind bool `json:"behind,omitempty"`
	// Floor is the group's own earlier commit on To the translation starts from (nil:
	// none): the group consumed To's messages before it there, so those never hold it back.
	Floor *int64 `json:"floor,omitempty"`
}

// Aligned reports whether the number means the same position on both clusters.
func (t Translation) Aligned() bool { return t.Translated == t.Offset }

// Skip is how many target messages a consumer given the untranslated number would skip
// (0 when it would re-read or is aligned).
func (t Translation) Skip() int64 { return max(t.Offset-t.Translated, 0) }

// String explains the translation in one line.
func (t Translation) String() string {
	s := fmt.Sprintf("%s offset %d is %s offset %d", t.From, t.Offset, t.To, t.Translated)
	switch {
	case t.TargetOnly:
		s += fmt.Sprintf(" (the message there exists on %s only: the group never read it)", t.To)
	case t.Next != nil && *t.Next == t.Offset:
		s += fmt.Sprintf(" (the same message as %s offset %d)", t.From, t.Offset)
	case t.Next != nil:
		s += fmt.Sprintf(" (%s offset %d: the group read later messages on %s)", t.From, *t.Next, t.From)
	default:
		s += fmt.Sprintf(" (%s's log end: the group read everything %s holds)", t.To, t.To)
	}
	if t.Floor != nil {
		s += fmt.Sprintf("; counted from the group's own commit %d on %s", *t.Floor, t.To)
	}
	if t.Unmatched > 0 {
		s += fmt.Sprintf("; %d consumed messages are not on %s before it", t.Unmatched, t.To)
		if t.FirstUnmatched != nil {
			s += fmt.Sprintf(" (the first not found there: %s offset %d)", t.From, *t.FirstUnmatched)
		}
	}
	return s
}

// FailoverCommand is the command that lands group on its translated offsets on cluster to.
func FailoverCommand(group, topic, from, to string) string {
	s := fmt.Sprintf("kop-offsets failover --source %s --target %s --group %s", from, to, group)
	if topic != "" {
		s += " --topic " + topic
	}
	return s
}

// Build reads the source's copy up to upTo and the target's copy until the first message
// the source did not hold before upTo, and relates them. maxMessages bounds what is read
// from each copy (0: DefaultMaxMessages).
func Build(ctx context.Context, from, to string, src, dst Source, topic string, partition int32, upTo int64, maxMessages int64) (*Map, error) {
	return BuildFrom(ctx, from, to, src, dst, topic, partition, upTo, -1, maxMessages)
}

// BuildFrom is Build for a group that committed floor on the target itself (its own
// numbering there, -1: none), as after a failback: the target's messages before floor were
// consumed there, so a message there that the source lacks (written while the target was the
// primary) does not hold the translation back; it starts at floor and never lands below it.
func BuildFrom(ctx context.Context, from, to string, src, dst Source, topic string, partition int32, upTo, floor int64, maxMessages int64) (*Map, error) {
	return build(ctx, from, to, src, dst, topic, partition, upTo, floor, false, maxMessages)
}

// BuildSince is BuildFrom for a group moved back on the source (a reset) below where it stood
// on the target, floor (its own position there): the target's messages before floor that the
// source lacks were consumed there, so they hold nothing back, but the translation lands
// where the source now points, below floor if that is where it points.
func BuildSince(ctx context.Context, from, to string, src, dst Source, topic string, partition int32, upTo, floor int64, maxMessages int64) (*Map, error) {
	return build(ctx, from, to, src, dst, topic, partition, upTo, floor, true, maxMessages)
}

// build is BuildFrom (soft false) and BuildSince (soft true).
func build(ctx context.Context, from, to string, src, dst Source, topic string, partition int32, upTo, floor int64, soft bool, maxMessages int64) (*Map, error) {
	if maxMessages <= 0 {
		maxMessages = DefaultMaxMessages
	}
	m := &Map{From: from, To: to, Topic: topic, Partition: partition, UpTo: upTo, Floor: floor}
	if soft {
		m.Floor = -1 // no answer is held at it
	}
	idx := newIndex()
	var n int64
	var tooLarge bool
	b, err := src.Scan(ctx, topic, partition, func(r Record) bool {
		if r.Offset > upTo {
			return false // the message at upTo is read too: it names what a translation lands on
		}
		if n++; n > maxMessages {
			tooLarge = true
			return false
		}
		idx.add(r.ID, r.Offset)
		m.srcOffs = append(m.srcOffs, r.Offset)
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("cluster %s: read %s[%d]: %w", from, topic, partition, err)
	}
	if tooLarge {
		return nil, fmt.Errorf("cluster %s: %s[%d] holds more than %d messages before offset %d: %w", from, topic, partition, maxMessages, upTo, ErrTooLarge)
	}
	m.Source = b
	n, tooLarge = 0, false
	highest := int64(-1)
	m.stop = -1
	tb, err := dst.Scan(ctx, topic, partition, func(r Record) bool {
		if n++; n > maxMessages {
			tooLarge = true
			return false
		}
		s, ok := idx.take(r.ID)
		if r.Offset < floor && !soft {
			if ok {
				m.below = append(m.below, s)
			}
			return true
		}
		switch {
		case !ok && r.Offset < floor:
			s = -1 // soft: consumed on the target, holds nothing back
		case !ok:
			s = math.MaxInt64
		}
		highest = max(highest, s)
		m.prefMax = append(m.prefMax, highest)
		m.tOffs = append(m.tOffs, r.Offset)
		if highest >= upTo {
			// Every later target offset translates past upTo: nothing more to learn.
			m.stop = r.Offset
			return false
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("cluster %s: read %s[%d]: %w", to, topic, partition, err)
	}
	if tooLarge {
		return nil, fmt.Errorf("cluster %s: %s[%d] holds more than %d messages before the first one not consumed at offset %d on %s: %w", to, topic, partition, maxMessages, upTo, from, ErrTooLarge)
	}
	m.Target = tb
	if m.stop < 0 {
		m.stop = tb.End
	}
	if floor > tb.End {
		// An own commit past what the copy holds is not a position in it (the topic was
		// recreated, or the number is wrong): no floor.
		return build(ctx, from, to, src, dst, topic, partition, upTo, -1, false, maxMessages)
	}
	slices.Sort(m.below)
	m.missing = idx.remaining()
	return m, nil
}

// Translate moves committed offset o (at most UpTo) from the source's numbering to the
// target's.
func (m *Map) Translate(o int64) (Translation, error) {
	if o > m.UpTo {
		return Translation{}, fmt.Errorf("offset %d is beyond the map's range (%d)", o, m.UpTo)
	}
	t := Translation{From: m.From, To: m.To, Offset: o}
	// The first scanned target record whose prefix holds a message not consumed (source
	// offset >= o, or not on the source).
	i := sort.Search(len(m.prefMax), func(i int) bool { return m.prefMax[i] >= o })
	switch {
	case i < len(m.prefMax):
		t.Translated = m.tOffs[i]
		// What is at Translated: the record there is the one that raised the prefix.
		if v := m.prefMax[i]; v == math.MaxInt64 {
			t.TargetOnly = true
		} else {
			t.Next = &v
		}
	default:
		// Every message the target holds was consumed: its log end, plus what the group
		// committed past the source's log end (positions of messages not yet written, which
		// replication appends in the same order on both sides).
		t.Translated = m.stop
		if m.stop == m.Target.End && o > m.Source.End {
			t.Translated += o - m.Source.End
		}
	}
	// The i records before Translated are consumed messages (the prefix maximum is below o);
	// the other consumed messages are not on the target before it: absent, or held after
	// it (read again).
	consumed := int64(sort.Search(len(m.srcOffs), func(j int) bool { return m.srcOffs[j] >= o }))
	held := int64(i)
	if m.Floor >= 0 {
		f := m.Floor
		t.Floor = &f
		held += int64(sort.Search(len(m.below), func(j int) bool { return m.below[j] >= o }))
		t.Translated = max(t.Translated, f)
	}
	t.Unmatched = max(consumed-held, 0)
	if k := sort.Search(len(m.missing), func(j int) bool { return m.missing[j] >= o }); k > 0 {
		f := m.missing[0]
		t.FirstUnmatched = &f
		// The last message consumed is among those the target lacks.
		t.Behind = i == len(m.prefMax) && consumed > 0 && m.missing[k-1] == m.srcOffs[consumed-1]
	}
	return t, nil
}

// index maps message identities to the source offsets that hold them, in order (a message
// identity can repeat: the same key, value and timestamp written twice).
type index struct {
	first map[uint64]int64
	more  map[uint64][]int64
}

func newIndex() *index { return &index{first: map[uint64]int64{}, more: map[uint64][]int64{}} }

func (x *index) add(id uint64, off int64) {
	if _, dup := x.first[id]; dup {
		x.more[id] = append(x.more[id], off)
		return
	}
	x.first[id] = off
}

// take returns and removes the lowest source offset holding id.
func (x *index) take(id uint64) (int64, bool) {
	off, ok := x.first[id]
	if !ok {
		return 0, false
	}
	if rest := x.more[id]; len(rest) > 0 {
		x.first[id] = rest[0]
		if len(rest) == 1 {
			delete(x.more, id)
		} else {
			x.more[id] = rest[1:]
		}
	} else {
		delete(x.first, id)
	}
	return off, true
}

func (x *index) remaining() []int64 {
	var out []int64
	for _, o := range x.first {
		out = append(out, o)
	}
	for _, r := range x.more {
		out = append(out, r...)
	}
	slices.Sort(out)
	return out
}
