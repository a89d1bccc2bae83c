package offsetlog

import (
	"encoding/binary"
	"strconv"
)

// reader reads Kafka protocol primitives from src with bounds checks. The first failure is
// kept in err (with the field and byte offset) and every later read returns zero values, so
// callers read a whole structure and check err once. Nothing allocates on success.
type reader struct {
	src     []byte
	pos     int
	part    string
	version int // appended to part as " vN" in errors; -1 for none
	index   int // record index, appended to part "record" in errors
	err     *DecodeError
}

func newReader(src []byte, part string, version int) reader {
	return reader{src: src, part: part, version: version}
}

func (r *reader) fail(field string, err error, detail string) {
	if r.err != nil {
		return
	}
	part := r.part
	if part == "record" {
		part += " " + strconv.Itoa(r.index)
	}
	if r.version >= 0 {
		part += " v" + strconv.Itoa(r.version)
	}
	r.err = &DecodeError{Part: part, Field: field, Offset: r.pos, Detail: detail, Err: err}
}

// short records a truncation; kept out of line so that the fixed-size reads inline.
func (r *reader) short(field string) {
	r.fail(field, ErrTruncated, "")
}

func (r *reader) remaining() int { return len(r.src) - r.pos }

// The fixed-size reads check bounds inline (the hot path of every record) and leave the
// failure to short.

func (r *reader) int8(field string) int8 {
	if r.err != nil || len(r.src)-r.pos < 1 {
		r.short(field)
		return 0
	}
	v := int8(r.src[r.pos])
	r.pos++
	return v
}

func (r *reader) int16(field string) int16 {
	if r.err != nil || len(r.src)-r.pos < 2 {
		r.short(field)
		return 0
	}
	v := int16(binary.BigEndian.Uint16(r.src[r.pos:]))
	r.pos += 2
	return v
}

func (r *reader) int32(field string) int32 {
	if r.err != nil || len(r.src)-r.pos < 4 {
		r.short(field)
		return 0
	}
	v := int32(binary.BigEndian.Uint32(r.src[r.pos:]))
	r.pos += 4
	return v
}

func (r *reader) int64(field string) int64 {
	if r.err != nil || len(r.src)-r.pos < 8 {
		r.short(field)
		return 0
	}
	v := int64(binary.BigEndian.Uint64(r.src[r.pos:]))
	r.pos += 8
	return v
}

func (r *reader) span(field string, n int) []byte {
	if r.err != nil || n < 0 || len(r.src)-r.pos < n {
		r.short(field)
		return nil
	}
	b := r.src[r.pos : r.pos+n : r.pos+n]
	r.pos += n
	return b
}

// str reads a STRING (int16 length); a negative length is malformed.
func (r *reader) str(field string) []byte {
	start := r.pos
	n := r.int16(field)
	if r.err != nil {
		return nil
	}
	if n < 0 {
		r.pos = start
		r.fail(field, ErrMalformed, "negative string length "+strconv.Itoa(int(n)))
		return nil
	}
	return r.span(field, int(n))
}

// nstr reads a NULLABLE_STRING; null is reported as ok=false.
func (r *reader) nstr(field string) (b []byte, ok bool) {
	start := r.pos
	n := r.int16(field)
	if r.err != nil {
		return nil, false
	}
	if n < 0 {
		if n != -1 {
			r.pos = start
			r.fail(field, ErrMalformed, "string length "+strconv.Itoa(int(n)))
		}
		return nil, false
	}
	return r.span(field, int(n)), true
}

// bytes reads BYTES (int32 length, not nullable).
func (r *reader) bytes(field string) []byte {
	start := r.pos
	n := r.int32(field)
	if r.err != nil {
		return nil
	}
	if n < 0 {
		r.pos = start
		r.fail(field, ErrMalformed, "negative bytes length "+strconv.Itoa(int(n)))
		return nil
	}
	return r.span(field, int(n))
}

// uvarint reads an unsigned varint of at most 32 bits (compact lengths, tags).
func (r *reader) uvarint(field string) uint32 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.src[r.pos:])
	switch {
	case n == 0:
		r.fail(field, ErrTruncated, "")
		return 0
	case n < 0 || n > 5 || v > 1<<32-1:
		r.fail(field, ErrMalformed, "varint overflow")
		return 0
	}
	r.pos += n
	return uint32(v)
}

// varlong reads a zig-zag varint of at most 64 bits (record fields).
func (r *reader) varlong(field string) int64 {
	if r.err != nil {
		return 0
	}
	if r.pos < len(r.src) && r.src[r.pos] < 0x80 { // one byte: most record fields
		b := int64(r.src[r.pos])
		r.pos++
		return b>>1 ^ -(b & 1)
	}
	v, n := binary.Varint(r.src[r.pos:])
	switch {
	case n == 0:
		r.fail(field, ErrTruncated, "")
		return 0
	case n < 0:
		r.fail(field, ErrMalformed, "varint overflow")
		return 0
	}
	r.pos += n
	return v
}

// varint reads a zig-zag varint that must fit an int32.
func (r *reader) varint(field string) int32 {
	start := r.pos
	v := r.varlong(field)
	if r.err != nil {
		return 0
	}
	if v < -1<<31 || v > 1<<31-1 {
		r.pos = start
		r.fail(field, ErrMalformed, "varint out of int32 range")
		return 0
	}
	return int32(v)
}

// compactLen reads a compact length (uvarint n+1); -1 is null.
func (r *reader) compactLen(field string) int {
	v := r.uvarint(field)
	if r.err != nil {
		return 0
	}
	return int(v) - 1
}

// cstr reads a COMPACT_STRING.
func (r *reader) cstr(field string) []byte {
	start := r.pos
	n := r.compactLen(field)
	if r.err != nil {
		return nil
	}
	if n < 0 {
		r.pos = start
		r.fail(field, ErrMalformed, "null in a non-nullable string")
		return nil
	}
	return r.span(field, n)
}

// ncstr reads a COMPACT_NULLABLE_STRING.
func (r *reader) ncstr(field string) ([]byte, bool) {
	n := r.compactLen(field)
	if r.err != nil || n < 0 {
		return nil, false
	}
	return r.span(field, n), true
}

// cbytes reads COMPACT_BYTES.
func (r *reader) cbytes(field string) []byte {
	start := r.pos
	n := r.compactLen(field)
	if r.err != nil {
		return nil
	}
	if n < 0 {
		r.pos = start
		r.fail(field, ErrMalformed, "null in non-nullable bytes")
		return nil
	}
	return r.span(field, n)
}

// skipTags skips a tagged-field section; none of the offsets schemas define tags we need.
func (r *reader) skipTags(field string) {
	n := r.uvarint(field)
	for i := uint32(0); i < n && r.err == nil; i++ {
		r.uvarint(field)
		size := r.uvarint(field)
		r.span(field, int(size))
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// cursor is the fast path of reader: the same primitives without field names, kept small
// enough to inline. A failed read sets bad and returns a zero value without advancing;
// callers read a whole structure, and when bad is set they re-read it with a reader, which
// finds the same failure and describes it. A cursor must therefore accept exactly what a
// reader accepts and yield the same values (FuzzFastPath checks this).
type cursor struct {
	b   []byte // what is left to read
	bad bool
}

func (c *cursor) i8() int8 {
	if len(c.b) < 1 {
		c.bad = true
		return 0
	}
	v := int8(c.b[0])
	c.b = c.b[1:]
	return v
}

func (c *cursor) i16() int16 {
	if len(c.b) < 2 {
		c.bad = true
		return 0
	}
	v := int16(binary.BigEndian.Uint16(c.b))
	c.b = c.b[2:]
	return v
}

func (c *cursor) i32() int32 {
	if len(c.b) < 4 {
		c.bad = true
		return 0
	}
	v := int32(binary.BigEndian.Uint32(c.b))
	c.b = c.b[4:]
	return v
}

func (c *cursor) i64() int64 {
	if len(c.b) < 8 {
		c.bad = true
		return 0
	}
	v := int64(binary.BigEndian.Uint64(c.b))
	c.b = c.b[8:]
	return v
}

// span returns the next n bytes (n >= 0), capacity-limited like reader.span.
func (c *cursor) span(n int) []byte {
	if uint(n) > uint(len(c.b)) {
		c.bad = true
		return nil
	}
	v := c.b[:n:n]
	c.b = c.b[n:]
	return v
}

// str reads a STRING (int16 length, not nullable).
func (c *cursor) str() []byte {
	return c.span(int(c.i16())) // a negative length fails in span
}

// varint reads a zig-zag varint of at most two bytes (-8192..8191: every field of a
// record but large lengths and time deltas); longer ones set bad, so that the reader,
// which reads any length, takes over.
func (c *cursor) varint() int32 {
	b := c.b
	if len(b) == 0 || b[0] >= 0x80 && (len(b) < 2 || b[1] >= 0x80) {
		c.bad = true
		return 0
	}
	x := uint32(b[0])
	if x >= 0x80 {
		x = x&0x7f | uint32(b[1])<<7
		b = b[1:]
	}
	c.b = b[1:]
	return int32(x>>1) ^ -int32(x&1)
}

// varBytes reads varint-length bytes: -1 is null (nil), 0 is empty and not nil.
func (c *cursor) varBytes() []byte {
	n := c.varint()
	if n == -1 {
		return nil
	}
	return c.span(int(n)) // other negative lengths fail in span
}
