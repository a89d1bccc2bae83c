package loader

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
)

// A kept translation is a record kop-offsets' watch writes into a cluster's offsets topic,
// with replication disabled, after a commit replicated there from another cluster: the same
// commit with its offset translated into this cluster's numbering (docs/failover.md). KoP
// loads it like any commit; the Pulsar message's properties say what it translates, so that
// this cluster alone knows which of its offsets were checked against the source, and when.

// Properties of a kept translation's message.
const (
	// PropKeptFrom names the cluster whose commits the message translates (config name).
	PropKeptFrom = "kop-offsets-kept-from"
	// PropKeptSources lists the source offsets of the message's records, in record order.
	PropKeptSources = "kop-offsets-kept-sources"
	// PropKeptAt is when the translation was checked against both copies (Unix ms).
	PropKeptAt = "kop-offsets-kept-at"
	// PropHeldFrom marks a held value: what KoP served for a key, written back by a failover
	// whose source was gone so that a reload of its bundle keeps serving it. The value counts
	// in that cluster's numbering (unchecked), so readers take the message as replicated from
	// it (Message.ReplicatedFrom): it is never the group's own position (Floor) here.
	PropHeldFrom = "kop-offsets-held-from"
)

// HeldFrom is the cluster a held value's message names ("" for any other message).
func HeldFrom(props map[string]string) string { return props[PropHeldFrom] }

// KeptMark is what the properties of a kept translation's message say.
type KeptMark struct {
	From    string
	Sources []int64 // by record, in order
	At      time.Time
}

// Properties returns the message properties of m.
func (m KeptMark) Properties() map[string]string {
	s := make([]string, len(m.Sources))
	for i, o := range m.Sources {
		s[i] = strconv.FormatInt(o, 10)
	}
	return map[string]string{PropKeptFrom: m.From, PropKeptSources: strings.Join(s, ","), PropKeptAt: strconv.FormatInt(m.At.UnixMilli(), 10)}
}

// ParseKeptMark reads the properties of a message: nil without a kept mark, an error for
// a mark that does not parse (the message is then replayed as an ordinary commit).
func ParseKeptMark(props map[string]string) (*KeptMark, error) {
	from, ok := props[PropKeptFrom]
	if !ok {
		return nil, nil
	}
	at, err := strconv.ParseInt(props[PropKeptAt], 10, 64)
	if err != nil || from == "" {
		return nil, fmt.Errorf("kept translation: bad %s %q or %s %q", PropKeptFrom, from, PropKeptAt, props[PropKeptAt])
	}
	m := &KeptMark{From: from, At: time.UnixMilli(at)}
	for f := range strings.SplitSeq(props[PropKeptSources], ",") {
		o, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("kept translation: bad %s %q", PropKeptSources, props[PropKeptSources])
		}
		m.Sources = append(m.Sources, o)
	}
	return m, nil
}

// Kept is the newest kept translation of one key on the cluster read: the source's commit it
// translates and when it was checked. Current reports whether the key's persisted offset is
// still that translation (no commit arrived after it).
type Kept struct {
	From    string           `json:"from"`
	Source  int64            `json:"source"` // the commit on From
	Offset  int64            `json:"offset"` // its translation on the cluster read
	At      offsetlog.Millis `json:"at"`
	Current bool             `json:"current"`
}

// keptEntry is Kept in the table (by slot): few keys have one, so a side map.
type keptEntry struct {
	source, offset, at int64
	from               uint16 // index in state.origins
	current            bool
}
