package check

import (
	"slices"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/offsets"
	"github.com/kop-offsets/kop-offsets/internal/output"
)

// PackedRows are the rows of one group held small, for a process that keeps every row
// between two runs of the engine (watch keeps them for weeks): per row its topic, partition
// and status, per cell its status and numbers. A cell holding anything else (an error, a
// detail, a prediction, an expiry, alignment) is kept whole, and so is every row of a
// group that does not pack; Rows rebuilds each row exactly as the engine built it. A
// PackedRows is never changed: several goroutines may read it.
type PackedRows struct {
	group string
	rows  []packedRow
	cells []packedCell // len(clusters) per row, row after row
	whole *[]Row       // the rows as built, when they do not pack
	now   int64        // the Judge's Now (Unix ms): expiresInSeconds counts from it
	opart int32
}

type packedRow struct {
	topic     string // KoP's full name
	partition int32
	status    uint8 // statusCode
}

// packedCell is a Cell without its pointers: 56 bytes instead of a Cell's 168 and the 8 to
// 24 of each value it points to. Lag and expiresInSeconds are not kept: they follow from the
// rest (see observe and Row).
type packedCell struct {
	cached, persisted, logEnd, commitMs, expireMs int64
	whole                                         *Cell // the cell as built, when it does not pack
	has                                           uint8 // has* bits
	status                                        uint8
}

const (
	hasCached = 1 << iota
	hasPersisted
	hasLogEnd
	hasCommit
	hasExpire
)

// statusCode is 1 + s's index in offsets.Statuses, 0 for none (ok false: unknown).
func statusCode(s offsets.Status) (uint8, bool) {
	if s == "" {
		return 0, true
	}
	i := slices.Index(offsets.Statuses, s)
	return uint8(i + 1), i >= 0
}

func statusOf(c uint8) offsets.Status {
	if c == 0 {
		return ""
	}
	return offsets.Statuses[c-1]
}

// Pack packs the rows of one group, as j built them over clusters (the sides' names, in
// order).
func Pack(rows []Row, clusters []string, j *Judge) *PackedRows {
	p := &PackedRows{rows: make([]packedRow, len(rows)), cells: make([]packedCell, 0, len(rows)*len(clusters)), now: j.Now.UnixMilli()}
	if len(rows) > 0 {
		p.group, p.opart = rows[0].Group, rows[0].OffsetsPartition
	}
	for i := range rows {
		r := &rows[i]
		st, ok := statusCode(r.Status)
		if !ok || r.Group != p.group || r.OffsetsPartition != p.opart || len(r.Cells) != len(clusters) ||
			r.Topic != offsets.ShortName(r.fullTopic, j.DisplayNamespace) {
			whole := slices.Clone(rows)
			return &PackedRows{group: p.group, whole: &whole}
		}
		p.rows[i] = packedRow{topic: r.fullTopic, partition: r.Partition, status: st}
		for c := range r.Cells {
			p.cells = append(p.cells, p.packCell(&r.Cells[c], clusters[c]))
		}
	}
	return p
}

func (p *PackedRows) packCell(c *Cell, cluster string) packedCell {
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
		ok = ok && identical(offsets.Millis(pc.commitMs).Time(), t.Time)
	}
	if t := c.ExpireTimestamp; t != nil {
		pc.expireMs, pc.has = t.UnixMilli(), pc.has|hasExpire
		ok = ok && identical(time.UnixMilli(pc.expireMs), t.Time)
	}
	ok = ok && c.Cluster == cluster && c.Predicted == nil && c.Error == "" && c.Detail == "" && c.Origin == "" &&
		c.Translated == nil && c.Alignment == "" && samePtr(pc.lag(), c.Lag) && samePtr(p.expiresIn(&pc), c.ExpiresIn)
	if !ok {
		whole := *c
		return packedCell{whole: &whole}
	}
	return pc
}

// lag is the cell's lag as observe computes it: the log-end offset minus what KoP serves,
// or else what the topic holds.
func (pc *packedCell) lag() *int64 {
	if pc.has&hasLogEnd == 0 {
		return nil
	}
	var committed int64
	switch {
	case pc.has&hasCached != 0:
		committed = pc.cached
	case pc.has&hasPersisted != 0:
		committed = pc.persisted
	default:
		return nil
	}
	lag := max(pc.logEnd-committed, 0)
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

func (p *PackedRows) unpack(pc *packedCell, cluster string) Cell {
	if pc.whole != nil {
		return *pc.whole
	}
	c := Cell{Cluster: cluster, Status: statusOf(pc.status), Lag: pc.lag(), ExpiresIn: p.expiresIn(pc)}
	ptr := func(bit uint8, v int64) *int64 {
		if pc.has&bit == 0 {
			return nil
		}
		return &v
	}
	c.Cached, c.Persisted, c.LogEndOffset = ptr(hasCached, pc.cached), ptr(hasPersisted, pc.persisted), ptr(hasLogEnd, pc.logEnd)
	if pc.has&hasCommit != 0 {
		c.CommitTimestamp = output.NewTime(offsets.Millis(pc.commitMs).Time())
	}
	if pc.has&hasExpire != 0 {
		c.ExpireTimestamp = output.NewTime(time.UnixMilli(pc.expireMs))
	}
	return c
}

// Same reports whether q holds what p holds, built at another time maybe: the same rows,
// statuses, numbers and timestamps. A process keeping rows keeps p then and drops q, so
// rebuilding every group (watch's resync) does not hold two copies of every row; p's
// expiresInSeconds then still counts from when p was built. Rows kept whole are never the
// same.
func (p *PackedRows) Same(q *PackedRows) bool {
	return p != nil && q != nil && p.whole == nil && q.whole == nil && p.group == q.group && p.opart == q.opart &&
		slices.Equal(p.rows, q.rows) && slices.Equal(p.cells, q.cells)
}

// Group is the rows' group.
func (p *PackedRows) Group() string { return p.group }

// Len is the number of rows (0 for nil).
func (p *PackedRows) Len() int {
	switch {
	case p == nil:
		return 0
	case p.whole != nil:
		return len(*p.whole)
	}
	return len(p.rows)
}

// Status is the status of row i.
func (p *PackedRows) Status(i int) offsets.Status {
	if p.whole != nil {
		return (*p.whole)[i].Status
	}
	return statusOf(p.rows[i].status)
}

// FullTopic is the topic of row i in KoP's full name.
func (p *PackedRows) FullTopic(i int) string {
	if p.whole != nil {
		return (*p.whole)[i].fullTopic
	}
	return p.rows[i].topic
}

// Row rebuilds row i (clusters as given to Pack, displayNS the Judge's DisplayNamespace).
func (p *PackedRows) Row(i int, clusters []string, displayNS string) Row {
	if p.whole != nil {
		r := (*p.whole)[i]
		r.Cells = slices.Clone(r.Cells) // the caller's to change
		return r
	}
	pr := &p.rows[i]
	r := Row{Group: p.group, Topic: offsets.ShortName(pr.topic, displayNS), Partition: pr.partition,
		OffsetsPartition: p.opart, Status: statusOf(pr.status), fullTopic: pr.topic, Cells: make([]Cell, len(clusters))}
	for j := range r.Cells {
		r.Cells[j] = p.unpack(&p.cells[i*len(clusters)+j], clusters[j])
	}
	return r
}
