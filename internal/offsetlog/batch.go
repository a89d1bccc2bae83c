package offsetlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"strconv"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record batch layout (magic 2), byte offsets from the start of the batch.
const (
	batchOffLength     = 8
	batchOffMagic      = 16
	batchOffCRC        = 17
	batchOffAttributes = 21
	batchHeaderSize    = 61
	batchLogOverhead   = 12 // baseOffset + length: the length counts what follows them

	attrCodecMask     = 0x07
	attrTransactional = 0x10
	attrControl       = 0x20

	codecNone   = 0
	codecGzip   = 1
	codecSnappy = 2
	codecLZ4    = 3
	codecZstd   = 4
)

// MaxDecompressedSize bounds the decompressed records of one batch, so that a hostile or
// corrupt message cannot make the decoder allocate without limit. Pulsar's default maximum
// message size is 5 MiB; offsets batches are far smaller.
const MaxDecompressedSize = 64 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// xerialHeader starts a snappy block stream framed by the Java client's xerial
// SnappyOutputStream: magic, then int32 version and int32 compatible version.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// zstdDecoder is shared: DecodeAll is safe for concurrent use and a decoder is costly to build.
var zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(MaxDecompressedSize),
		zstd.WithDecoderLowmem(true))
})

// decoder walks the batches of one message and the records in them into reused scratch
// structs (kmsg types whose strings and slices view the input or d.buf). Views are valid
// until the next call on the decoder; callers that keep a value copy it.
type decoder struct {
	msg   []byte // the message value
	next  int    // start of the next batch in msg
	batch kmsg.RecordBatch
	start int    // start of the current batch in msg
	recs  []byte // the current batch's records, decompressed
	rpos  int    // next record in recs
	ridx  int    // index of the next record in the batch
	nrec  int    // records announced by the batch

	rec      kmsg.Record
	firstKey int64 // in-batch offset of the batch's first keyed record, -1 before it

	okey kmsg.OffsetCommitKey
	gkey kmsg.GroupMetadataKey
	oval kmsg.OffsetCommitValue
	gval kmsg.GroupMetadataValue
	// backing strings for the *string fields of gval and its members, reused across calls
	gProtocol, gLeader string
	instanceIDs        []string

	ctlCommit bool // for control records: COMMIT (true) or ABORT

	// lenientCRC reads batches whose CRC does not match, as KoP's loader does (it never
	// validates it); badCRC counts them.
	lenientCRC bool
	badCRC     int64

	// Decode only: stores backs the pointer fields of the records of one call; lastGroup
	// and lastTopic are the owned strings of the previous record, shared when equal.
	stores               []recStore
	lastGroup, lastTopic string

	buf  []byte // decompression scratch
	br   bytes.Reader
	gz   *gzip.Reader
	lz   *lz4.Reader
	limw limitedBuffer
}

func (d *decoder) reset(value []byte) {
	d.msg = value
	d.next = 0
	d.recs = nil
	d.nrec = 0
	d.ridx = 0
}

// nextBatch parses the next batch of the message. It returns false at the end of the
// message or on error (then err is set).
func (d *decoder) nextBatch() (ok bool, err error) {
	if d.next >= len(d.msg) {
		return false, nil
	}
	// Fast path: a well-formed header is read at fixed offsets. Anything else, and any
	// failure, goes to nextBatchSlow, which finds the same failure and describes it.
	b := d.msg[d.next:]
	if len(b) < batchHeaderSize || b[batchOffMagic] != 2 {
		return d.nextBatchSlow()
	}
	length := int32(binary.BigEndian.Uint32(b[batchOffLength:]))
	nrec := int32(binary.BigEndian.Uint32(b[batchHeaderSize-4:]))
	if length < batchHeaderSize-batchLogOverhead || int64(length) > int64(len(b)-batchLogOverhead) || nrec < 0 {
		return d.nextBatchSlow()
	}
	end := batchLogOverhead + int(length)
	crc := binary.BigEndian.Uint32(b[batchOffCRC:])
	if crc32.Checksum(b[batchOffAttributes:end], castagnoli) != crc {
		return d.nextBatchSlow()
	}
	bt := &d.batch
	bt.FirstOffset = int64(binary.BigEndian.Uint64(b))
	bt.Length = length
	bt.PartitionLeaderEpoch = int32(binary.BigEndian.Uint32(b[12:]))
	bt.Magic = 2
	bt.CRC = int32(crc)
	bt.Attributes = int16(binary.BigEndian.Uint16(b[batchOffAttributes:]))
	bt.LastOffsetDelta = int32(binary.BigEndian.Uint32(b[23:]))
	bt.FirstTimestamp = int64(binary.BigEndian.Uint64(b[27:]))
	bt.MaxTimestamp = int64(binary.BigEndian.Uint64(b[35:]))
	bt.ProducerID = int64(binary.BigEndian.Uint64(b[43:]))
	bt.ProducerEpoch = int16(binary.BigEndian.Uint16(b[51:]))
	bt.FirstSequence = int32(binary.BigEndian.Uint32(b[53:]))
	bt.NumRecords = nrec
	bt.Records = b[batchHeaderSize:end:end]
	recs, err := d.decompress(bt.Records, bt.Attributes&attrCodecMask)
	if err != nil {
		return d.nextBatchSlow() // decompresses again, to describe the failure
	}
	d.start = d.next
	d.next += end
	d.recs = recs
	d.rpos, d.ridx, d.nrec = 0, 0, int(nrec)
	d.firstKey = -1
	return true, nil
}

// nextBatchSlow is nextBatch with a reader: it describes every failure.
func (d *decoder) nextBatchSlow() (ok bool, err error) {
	if d.next >= len(d.msg) {
		return false, nil
	}
	d.start = d.next
	b := d.msg[d.start:]
	r := newReader(b, "record batch", -1)
	if d.start > 0 {
		r.part = "record batch at byte " + strconv.Itoa(d.start)
	}
	bt := &d.batch
	// Magic first: other magics have another layout, so their lengths mean nothing to us.
	if len(b) > batchOffMagic {
		if m := int8(b[batchOffMagic]); m != 2 {
			r.pos = batchOffMagic
			r.fail("magic", ErrUnsupportedMagic, strconv.Itoa(int(m)))
			return false, r.err
		}
	}
	bt.FirstOffset = r.int64("baseOffset")
	bt.Length = r.int32("batchLength")
	if r.err == nil && (bt.Length < batchHeaderSize-batchLogOverhead) {
		r.pos = batchOffLength
		r.fail("batchLength", ErrMalformed, strconv.Itoa(int(bt.Length)))
	}
	bt.PartitionLeaderEpoch = r.int32("partitionLeaderEpoch")
	bt.Magic = r.int8("magic")
	bt.CRC = r.int32("crc")
	bt.Attributes = r.int16("attributes")
	bt.LastOffsetDelta = r.int32("lastOffsetDelta")
	bt.FirstTimestamp = r.int64("baseTimestamp")
	bt.MaxTimestamp = r.int64("maxTimestamp")
	bt.ProducerID = r.int64("producerId")
	bt.ProducerEpoch = r.int16("producerEpoch")
	bt.FirstSequence = r.int32("baseSequence")
	bt.NumRecords = r.int32("recordsCount")
	if r.err != nil {
		return false, r.err
	}
	end := batchLogOverhead + int(bt.Length)
	if end > len(b) {
		r.pos = len(b)
		r.fail("records", ErrTruncated, "(batchLength "+strconv.Itoa(int(bt.Length))+")")
		return false, r.err
	}
	if bt.NumRecords < 0 {
		r.pos = batchHeaderSize - 4
		r.fail("recordsCount", ErrMalformed, strconv.Itoa(int(bt.NumRecords)))
		return false, r.err
	}
	if sum := crc32.Checksum(b[batchOffAttributes:end], castagnoli); sum != uint32(bt.CRC) && d.lenientCRC {
		d.badCRC++
	} else if sum != uint32(bt.CRC) {
		r.pos = batchOffCRC
		r.fail("crc", ErrBadCRC, "(stored "+strconv.FormatUint(uint64(uint32(bt.CRC)), 16)+
			", computed "+strconv.FormatUint(uint64(sum), 16)+")")
		return false, r.err
	}
	bt.Records = b[batchHeaderSize:end:end]
	d.next = d.start + end
	d.recs, err = d.decompress(bt.Records, bt.Attributes&attrCodecMask)
	if err != nil {
		var de *DecodeError
		if errors.As(err, &de) {
			de.Part = r.part
			return false, de
		}
		return false, &DecodeError{Part: r.part, Field: "records", Offset: batchHeaderSize, Err: err}
	}
	d.rpos, d.ridx, d.nrec = 0, 0, int(bt.NumRecords)
	d.firstKey = -1
	return true, nil
}

func (d *decoder) isControl() bool       { return d.batch.Attributes&attrControl != 0 }
func (d *decoder) isTransactional() bool { return d.batch.Attributes&attrTransactional != 0 }

// nextRecord parses the next record of the current batch into d.rec. It returns false when
// the batch has no more records, or on error.
func (d *decoder) nextRecord() (ok bool, err error) {
	if d.ridx >= d.nrec {
		return false, nil
	}
	// Fast path with a cursor; any failure (or a field it does not read, such as a
	// varint longer than two bytes) goes to nextRecordSlow.
	c := cursor{b: d.recs[d.rpos:]}
	n := c.varint()
	if c.bad || n < 0 || int(n) > len(c.b) {
		return d.nextRecordSlow()
	}
	size := len(d.recs) - d.rpos - len(c.b) + int(n) // length varint and body
	c.b = c.b[:n]
	rec := &d.rec
	rec.Length = n
	rec.Attributes = c.i8()
	rec.TimestampDelta = c.varint()
	rec.TimestampDelta64 = int64(rec.TimestampDelta)
	rec.OffsetDelta = c.varint()
	rec.Key = c.varBytes()
	rec.Value = c.varBytes()
	if nh := c.varint(); nh != 0 {
		if nh < 0 {
			c.bad = true
		}
		for i := int32(0); i < nh && !c.bad; i++ {
			if c.varBytes() == nil {
				c.bad = true
			}
			c.varBytes()
		}
	}
	if c.bad || len(c.b) != 0 {
		return d.nextRecordSlow()
	}
	d.rpos += size
	d.ridx++
	if d.firstKey < 0 && rec.Key != nil {
		d.firstKey = d.batch.FirstOffset + int64(rec.OffsetDelta)
	}
	return true, nil
}

// nextRecordSlow is nextRecord with a reader: it describes every failure.
func (d *decoder) nextRecordSlow() (ok bool, err error) {
	if d.ridx >= d.nrec {
		return false, nil
	}
	if d.rpos >= len(d.recs) {
		return false, &DecodeError{Part: "record batch", Field: "records", Offset: d.rpos, Err: ErrTruncated,
			Detail: "(" + strconv.Itoa(d.ridx) + " of " + strconv.Itoa(d.nrec) + " records)"}
	}
	r := newReader(d.recs[d.rpos:], "record", -1)
	r.index = d.ridx
	rec := &d.rec
	rec.Length = r.varint("length")
	if r.err == nil && rec.Length < 0 {
		r.fail("length", ErrMalformed, strconv.Itoa(int(rec.Length)))
	}
	if r.err != nil {
		return false, r.err
	}
	body := r.pos
	if r.remaining() < int(rec.Length) {
		r.fail("length", ErrTruncated, "(length "+strconv.Itoa(int(rec.Length))+")")
		return false, r.err
	}
	// Parse inside the record's own bounds.
	r.src = r.src[:body+int(rec.Length)]
	rec.Attributes = r.int8("attributes")
	rec.TimestampDelta64 = r.varlong("timestampDelta")
	rec.TimestampDelta = int32(rec.TimestampDelta64)
	rec.OffsetDelta = r.varint("offsetDelta")
	rec.Key = r.varBytes("key")
	rec.Value = r.varBytes("value")
	nh := r.varint("headersCount")
	if r.err == nil && nh < 0 {
		r.fail("headersCount", ErrMalformed, strconv.Itoa(int(nh)))
	}
	for i := int32(0); i < nh && r.err == nil; i++ {
		if r.varBytes("headerKey") == nil && r.err == nil {
			r.fail("headerKey", ErrMalformed, "null header key")
		}
		r.varBytes("headerValue")
	}
	if r.err != nil {
		return false, r.err
	}
	if r.pos != len(r.src) {
		r.fail("length", ErrMalformed, "("+strconv.Itoa(len(r.src)-r.pos)+" bytes left in the record)")
		return false, r.err
	}
	d.rpos += r.pos
	d.ridx++
	if d.firstKey < 0 && rec.Key != nil {
		d.firstKey = d.batch.FirstOffset + int64(rec.OffsetDelta)
	}
	return true, nil
}

// varBytes reads varint-length bytes; length -1 is null (nil), other negatives malformed.
func (r *reader) varBytes(field string) []byte {
	start := r.pos
	n := r.varint(field)
	if r.err != nil {
		return nil
	}
	if n < 0 {
		if n != -1 {
			r.pos = start
			r.fail(field, ErrMalformed, "length "+strconv.Itoa(int(n)))
		}
		return nil
	}
	b := r.span(field, int(n))
	if b == nil && r.err == nil {
		b = r.src[r.pos:r.pos:r.pos] // empty, not null
	}
	return b
}
