package watch

import (
	"cmp"
	"slices"
	"strings"

	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// answer is KoP's last answer for one group, held compact: its offsets in one slice sorted
// by topic and partition, not kop.Fetcher's map per topic (about 250 bytes per key for groups
// of five topics, against 32).
type answer struct {
	offs        []cachedOffset
	err         error
	unavailable bool
}

type cachedOffset struct {
	topic     string // KoP's full name, interned
	partition int32
	offset    int64
}

// newAnswer compacts f, whose topics are named as KoP on a cluster of namespace ns names them.
func newAnswer(f verdict.GroupFetch, ns string, names verdict.Names) answer {
	a := answer{err: f.Err, unavailable: f.Unavailable}
	n := 0
	for _, ps := range f.Offsets {
		n += len(ps)
	}
	if n > 0 {
		a.offs = make([]cachedOffset, 0, n) // exactly: appends would leave up to twice the room
	}
	for t, ps := range f.Offsets {
		full := names.Intern(loader.NormalizeTopic(t, ns))
		for p, v := range ps {
			a.offs = append(a.offs, cachedOffset{full, p, v})
		}
	}
	slices.SortFunc(a.offs, byKey)
	return a
}

// byKey orders cached offsets by topic, then partition.
func byKey(x, y cachedOffset) int {
	return cmp.Or(strings.Compare(x.topic, y.topic), cmp.Compare(x.partition, y.partition))
}

// fetch is the answer in kop.Fetcher's shape, for the row engine (topics in full names).
func (a answer) fetch() verdict.GroupFetch {
	f := verdict.GroupFetch{Err: a.err, Unavailable: a.unavailable}
	if a.offs != nil {
		f.Offsets = map[string]map[int32]int64{}
	}
	for _, o := range a.offs {
		if f.Offsets[o.topic] == nil {
			f.Offsets[o.topic] = map[int32]int64{}
		}
		f.Offsets[o.topic][o.partition] = o.offset
	}
	return f
}

// offset is what KoP served for topic (full name) and partition.
func (a answer) offset(topic string, partition int32) (int64, bool) {
	i, ok := slices.BinarySearchFunc(a.offs, cachedOffset{topic: topic, partition: partition}, byKey)
	if !ok {
		return 0, false
	}
	return a.offs[i].offset, true
}
