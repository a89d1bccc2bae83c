package verdict

import (
	"bytes"
	"encoding/binary"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
	"github.com/kop-offsets/kop-offsets/internal/output"
)

// PackedRows are the rows of one group held small, for a process that keeps every row
// between two runs of the engine (watch keeps them for weeks): per row its topic, partition
// and status, per cell its status and numbers, as varints in one byte slice (about 20 bytes
// a cell where a Cell takes 168 and the values it points to). A cell holding anything else
// (an error, a detail, a prediction, alignment, a lag or expiry that does not follow from the
// rest) is kept whole, and so is every row of a group that does not pack; Each rebuilds each
// row exactly as the engine built it. A PackedRows is never changed: several goroutines may
// read it.
type PackedRows struct {
	group  string
	data   []byte   // rows, one after the other: topic index, partition, status, then the cells
	topics []string // the rows' topics (KoP's full names), each once
	rare   *rareRows
	now    int64 // the Judge's Now (Unix ms): expiresInSeconds counts from it
	opart  int32
	n      int32 // rows
	cells  int32 // per row: the clusters
}

// rareRows is what does not pack, the rows as built or single cells, and the errors of the
// cells that name one (a cluster down or not replayed yet gives every cell of a row one).
type rareRows struct {
	whole []Row
	cells []Cell
	errs  []string // each once
}

// A cell's first byte is its has bits; cellWhole instead means a uvarint index into
// rare.cells follows. Its second byte is the status code, then the values present, as
// varints: cached, persisted (minus cached when both), log end (minus persisted or cached),
// commit ms and expire ms (as timeDeltas: minus the last cell's).
const (
	hasCached = 1 << iota
	hasPersisted
	hasLogEnd
	hasCommit
	hasExpire
	hasError  // a uvarint index into rare.errs follows the status
	cellWhole = 0xff
)

// statusCode is 1 + s's index in Statuses, 0 for none (ok false: unknown).
func statusCode(s Status) (uint8, bool) {
	if s == "" {
		return 0, true
	}
	i := slices.Index(Statuses, s)
	return uint8(i + 1), i >= 0
}

func statusOf(c uint8) Status {
	if c == 0 {
		return ""
	}
	return Statuses[c-1]
}

// Pack packs the rows of one group, as j built them over clusters (the sides' names, in
// order).
func Pack(rows []Row, clusters []string, j *Judge) *PackedRows {
	p := &PackedRows{now: j.Now.UnixMilli(), n: int32(len(rows)), cells: int32(len(clusters))}
	if len(rows) > 0 {
		p.group, p.opart = rows[0].Group, rows[0].OffsetsPartition
	}
	var prev timeDeltas
	for i := range rows {
		r := &rows[i]
		st, ok := statusCode(r.Status)
		if !ok || r.Group != p.group || r.OffsetsPartition != p.opart || len(r.Cells) != len(clusters) ||
			r.Topic != loader.ShortName(r.fullTopic, j.DisplayNamespace) || r.Partition < 0 {
			return &PackedRows{group: p.group, n: int32(len(rows)), rare: &rareRows{whole: slices.Clone(rows)}}
		}
		t := slices.Index(p.topics, r.fullTopic)
		if t < 0 {
			t = len(p.topics)
			p.topics = append(p.topics, r.fullTopic)
		}
		p.data = binary.AppendUvarint(p.data, uint64(t))
		p.data = binary.AppendUvarint(p.data, uint64(r.Partition))
		p.data = append(p.data, st)
		for c := range r.Cells {
			p.packCell(&r.Cells[c], clusters[c], &prev)
		}
	}
	// Exactly as long as they are: appends leave up to twice the room.
	p.data, p.topics = bytes.Clone(p.data), slices.Clone(p.topics)
	return p
}

// packedCell is a cell's numbers, as encoded.
type packedCell struct {
	cached, persisted, logEnd, commitMs, expireMs int64
	err                                           string
	has, status                                   uint8
}

func (p *PackedRows) packCell(c *Cell, cluster string, prev *timeDeltas) {
	st, ok := statusCode(c.Status)
	pc := packedCell{status: st}
	for _, v := range [...]struct {
		p   *int64
		dst *int64
		bit uint8
	}{{c.Cached, &pc.cached, hasCached}, {c.Persisted, &pc.persisted, hasPersisted}, {c.LogEndOffset, &pc.logEnd, hasLogEnd}} {
		if v.p != nil {
			*v.dst, pc.has = *v.p, pc.has|v.bit
		}
	}
	if t := c.CommitTimestamp; t != nil {
		pc.commitMs, pc.has = t.UnixMilli(), pc.has|hasCommit
		ok = ok && identical(offsetlog.Millis(pc.commitMs).Time(), t.Time)
	}
	if t := c.ExpireTimestamp; t != nil {
		pc.expireMs, pc.has = t.UnixMilli(), pc.has|hasExpire
		ok = ok && identical(time.UnixMilli(pc.expireMs), t.Time)
	}
	if c.Error != "" {
		pc.has |= hasError
	}
	ok = ok && c.Cluster == cluster && c.Predicted == nil && c.Detail == "" && c.Origin == "" &&
		c.Translated == nil && c.Alignment == "" && c.Follow == nil && samePtr(pc.lag(), c.Lag) && samePtr(p.expiresIn(&pc), c.ExpiresIn)
	if !ok {
		if p.rare == nil {
			p.rare = &rareRows{}
		}
		p.data = append(p.data, cellWhole)
		p.data = binary.AppendUvarint(p.data, uint64(len(p.rare.cells)))
		p.rare.cells = append(p.rare.cells, *c)
		return
	}
	p.data = append(p.data, pc.has, pc.status)
	if c.Error != "" {
		if p.rare == nil {
			p.rare = &rareRows{}
		}
		e := slices.Index(p.rare.errs, c.Error)
		if e < 0 {
			e = len(p.rare.errs)
			p.rare.errs = append(p.rare.errs, c.Error)
		}
		p.data = binary.AppendUvarint(p.data, uint64(e))
	}
	if pc.has&hasCached != 0 {
		p.data = binary.AppendVarint(p.data, pc.cached)
	}
	if pc.has&hasPersisted != 0 {
		p.data = binary.AppendVarint(p.data, pc.persisted-pc.base(hasCached))
	}
	if pc.has&hasLogEnd != 0 {
		p.data = binary.AppendVarint(p.data, pc.logEnd-pc.committed())
	}
	if pc.has&hasCommit != 0 {
		p.data = binary.AppendVarint(p.data, pc.commitMs-prev.commitMs)
		prev.commitMs = pc.commitMs
	}
	if pc.has&hasExpire != 0 {
		gap := pc.expireMs - pc.base(hasCommit)
		p.data = binary.AppendVarint(p.data, gap-prev.expireGap)
		prev.expireGap = gap
	}
}

// timeDeltas are the times of the last cell packed, which the next cell's are taken from:
// KoP writes every partition of a commit request with the same commit time and expiry, so
// the cells of a group mostly repeat them (a byte each instead of about ten).
type timeDeltas struct {
	commitMs  int64 // the last commit time
	expireGap int64 // the last expiry minus its commit time (or minus 0 without one)
}

// base is the value a delta is taken from: cached (bit hasCached) or commit ms (hasCommit)
// when the cell has it, else 0.
func (pc *packedCell) base(bit uint8) int64 {
	switch {
	case pc.has&bit == 0:
		return 0
	case bit == hasCached:
		return pc.cached
	default:
		return pc.commitMs
	}
}

// committed is what the lag counts from: what KoP serves, or else what the topic holds (0
// when neither).
func (pc *packedCell) committed() int64 {
	switch {
	case pc.has&hasCached != 0:
		return pc.cached
	case pc.has&hasPersisted != 0:
		return pc.persisted
	}
	return 0
}

// lag is the cell's lag as observe computes it: the log-end offset minus what KoP serves,
// or else what the topic holds.
func (pc *packedCell) lag() *int64 {
	if pc.has&hasLogEnd == 0 || pc.has&(hasCached|hasPersisted) == 0 {
		return nil
	}
	lag := max(pc.logEnd-pc.committed(), 0)
	return &lag
}

// expiresIn is the cell's expiresInSeconds as Judge.Row computes it.
func (p *PackedRows) expiresIn(pc *packedCell) *float64 {
	if pc.has&hasExpire == 0 || pc.expireMs <= 0 {
		return nil
	}
	in := float64(pc.expireMs-p.now) / 1000
	return &in
}

// identical reports whether a and b are the same value, location included (Equal is not
// enough: the rebuilt row must be the row, for reflect.DeepEqual as for JSON).
func identical(a, b time.Time) bool {
	return a == b //nolint:staticcheck // QF1009: Equal ignores the location, see above
}

func samePtr[T comparable](a, b *T) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// decoder reads the rows of data in order.
type decoder struct {
	p    *PackedRows
	data []byte
	prev timeDeltas
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.data)
	d.data = d.data[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.data)
	d.data = d.data[n:]
	return v
}

// row reads a row's topic, partition and status, and leaves the cells next.
func (d *decoder) row() (topic string, partition int32, status uint8) {
	topic = d.p.topics[d.uvarint()]
	partition = int32(d.uvarint())
	status = d.data[0]
	d.data = d.data[1:]
	return topic, partition, status
}

// cell reads a cell: its numbers, or the cell kept whole.
func (d *decoder) cell() (packedCell, *Cell) {
	has := d.data[0]
	if has == cellWhole {
		d.data = d.data[1:]
		return packedCell{}, &d.p.rare.cells[d.uvarint()]
	}
	pc := packedCell{has: has, status: d.data[1]}
	d.data = d.data[2:]
	if has&hasError != 0 {
		pc.err = d.p.rare.errs[d.uvarint()]
	}
	if has&hasCached != 0 {
		pc.cached = d.varint()
	}
	if has&hasPersisted != 0 {
		pc.persisted = d.varint() + pc.base(hasCached)
	}
	if has&hasLogEnd != 0 {
		pc.logEnd = d.varint() + pc.committed()
	}
	if has&hasCommit != 0 {
		pc.commitMs = d.varint() + d.prev.commitMs
		d.prev.commitMs = pc.commitMs
	}
	if has&hasExpire != 0 {
		gap := d.varint() + d.prev.expireGap
		d.prev.expireGap = gap
		pc.expireMs = gap + pc.base(hasCommit)
	}
	return pc, nil
}

func (p *PackedRows) unpack(pc *packedCell, cluster string) Cell {
	c := Cell{Cluster: cluster, Status: statusOf(pc.status), Lag: pc.lag(), ExpiresIn: p.expiresIn(pc), Error: pc.err}
	ptr := func(bit uint8, v int64) *int64 {
		if pc.has&bit == 0 {
			return nil
		}
		return &v
	}
	c.Cached, c.Persisted, c.LogEndOffset = ptr(hasCached, pc.cached), ptr(hasPersisted, pc.persisted), ptr(hasLogEnd, pc.logEnd)
	if pc.has&hasCommit != 0 {
		c.CommitTimestamp = output.NewTime(offsetlog.Millis(pc.commitMs).Time())
	}
	if pc.has&hasExpire != 0 {
		c.ExpireTimestamp = output.NewTime(time.UnixMilli(pc.expireMs))
	}
	return c
}

// ShareTopics makes p use the list of topics in pool equal to its own, or adds its own when
// the pool has none and fewer than most lists: the groups of one application commit on the
// same topics, so a process keeping many groups' rows keeps each list once. Call it before p
// is shared.
func (p *PackedRows) ShareTopics(pool map[string][]string, most int) {
	if p == nil || len(p.topics) == 0 {
		return
	}
	key := strings.Join(p.topics, "\x00")
	if ts, ok := pool[key]; ok {
		p.topics = ts
	} else if len(pool) < most {
		pool[key] = p.topics
	}
}

// Group is the rows' group.
func (p *PackedRows) Group() string { return p.group }

// Len is the number of rows (0 for nil).
func (p *PackedRows) Len() int {
	if p == nil {
		return 0
	}
	return int(p.n)
}

// Same reports whether q holds what p holds, built at another time maybe: the same rows,
// statuses, numbers and timestamps. A process keeping rows keeps p then and drops q, so
// rebuilding every group (watch's resync) does not hold two copies of every row; p's
// expiresInSeconds then still counts from when p was built. Rows with anything kept whole
// are never the same.
func (p *PackedRows) Same(q *PackedRows) bool {
	return p != nil && q != nil && onlyErrors(p.rare) && onlyErrors(q.rare) && p.group == q.group && p.opart == q.opart &&
		p.n == q.n && slices.Equal(p.topics, q.topics) && string(p.data) == string(q.data) && slices.Equal(errs(p.rare), errs(q.rare))
}

// onlyErrors reports whether r keeps nothing whole (nil, or only the cells' errors).
func onlyErrors(r *rareRows) bool { return r == nil || (r.whole == nil && r.cells == nil) }

func errs(r *rareRows) []string {
	if r == nil {
		return nil
	}
	return r.errs
}

// Statuses yields the status of every row, in order (none for nil).
func (p *PackedRows) Statuses() iter.Seq[Status] {
	return func(yield func(Status) bool) {
		if p == nil {
			return
		}
		if p.rare != nil && p.rare.whole != nil {
			for i := range p.rare.whole {
				if !yield(p.rare.whole[i].Status) {
					return
				}
			}
			return
		}
		d := decoder{p: p, data: p.data}
		for range p.n {
			_, _, st := d.row()
			for range p.cells {
				d.cell()
			}
			if !yield(statusOf(st)) {
				return
			}
		}
	}
}

// Topics are the topics of the rows (KoP's full names), each once.
func (p *PackedRows) Topics() []string {
	if p == nil {
		return nil
	}
	if p.rare != nil && p.rare.whole != nil {
		var ts []string
		for i := range p.rare.whole {
			if t := p.rare.whole[i].fullTopic; !slices.Contains(ts, t) {
				ts = append(ts, t)
			}
		}
		return ts
	}
	return p.topics
}

// Rows yields every row rebuilt (clusters as given to Pack, displayNS the Judge's
// DisplayNamespace), in order (none for nil); each row is the caller's to keep and change.
func (p *PackedRows) Rows(clusters []string, displayNS string) iter.Seq[Row] {
	return func(yield func(Row) bool) {
		if p == nil {
			return
		}
		if p.rare != nil && p.rare.whole != nil {
			for _, r := range p.rare.whole {
				r.Cells = slices.Clone(r.Cells) // the caller's to change
				if !yield(r) {
					return
				}
			}
			return
		}
		d := decoder{p: p, data: p.data}
		for range p.n {
			topic, part, st := d.row()
			r := Row{Group: p.group, Topic: loader.ShortName(topic, displayNS), Partition: part,
				OffsetsPartition: p.opart, Status: statusOf(st), fullTopic: topic, Cells: make([]Cell, len(clusters))}
			for j := range r.Cells {
				pc, whole := d.cell()
				if whole != nil {
					r.Cells[j] = *whole
				} else {
					r.Cells[j] = p.unpack(&pc, clusters[j])
				}
			}
			if !yield(r) {
				return
			}
		}
	}
}
