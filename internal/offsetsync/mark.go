package offsetsync

import (
	"strconv"
	"strings"
)

// markPrefix opens the metadata of every commit sync makes.
const markPrefix = "kop-offsets-sync:"

// Mark is what the tool's own commits carry in their commit metadata: the cluster the offset
// was synced from and the source's offset there. It travels with the commit in KoP's offsets
// topic, so whatever reads the cluster back (a restart included) knows the commit is the
// tool's and never syncs it back to where it came from.
type Mark struct {
	From   string // a cluster name: no ',' or '|'
	Source int64  // the source's committed offset, in From's numbering
	// Floor is the group's own position on this cluster that the commit was floored on (its
	// messages before it consumed here, as after a failback; 0: none), carried so that the
	// next sync floors on it too while the source does not move back past it. HasFloor is
	// false for the marks written before marks carried it (their number was floored).
	Floor    int64
	HasFloor bool
}

// Metadata is orig, the metadata of the source's commit, with the mark in front:
// "kop-offsets-sync:from=<cluster>,source=<offset>,floor=<offset>|<orig>". The client's own
// metadata stays whole after the first '|', so ParseMark gives it back. Every mark written
// carries its floor (0: none).
func (m Mark) Metadata(orig string) string {
	return markPrefix + "from=" + m.From + ",source=" + strconv.FormatInt(m.Source, 10) + ",floor=" + strconv.FormatInt(m.Floor, 10) + "|" + orig
}

// ParseMark reads the mark of commit metadata md: the mark, the original metadata, and
// whether md carries one. A malformed mark is not a mark (md is then a client's own
// metadata, returned whole): a client that happens to write the prefix must not have its
// commits taken for the tool's.
func ParseMark(md string) (Mark, string, bool) {
	rest, ok := strings.CutPrefix(md, markPrefix)
	if !ok {
		return Mark{}, md, false
	}
	head, orig, ok := strings.Cut(rest, "|")
	if !ok {
		return Mark{}, md, false
	}
	from, source, ok := strings.Cut(head, ",")
	from, ok1 := strings.CutPrefix(from, "from=")
	source, floor, hasFloor := strings.Cut(source, ",")
	source, ok2 := strings.CutPrefix(source, "source=")
	if !ok || !ok1 || !ok2 || from == "" {
		return Mark{}, md, false
	}
	n, ok := count(source)
	if !ok {
		return Mark{}, md, false
	}
	m := Mark{From: from, Source: n, HasFloor: hasFloor}
	if hasFloor {
		floor, ok3 := strings.CutPrefix(floor, "floor=")
		if m.Floor, ok = count(floor); !ok || !ok3 {
			return Mark{}, md, false
		}
	}
	return m, orig, true
}

// count reads a non-negative offset written canonically.
func count(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n >= 0 && strconv.FormatInt(n, 10) == s
}
