package offsetlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strconv"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// codecError keeps the codec's own message under our sentinel.
type codecError struct {
	codec string
	err   error
}

func (e *codecError) Error() string {
	return e.codec + ": " + ErrDecompress.Error() + ": " + e.err.Error()
}
func (e *codecError) Unwrap() []error {
	return []error{ErrDecompress, e.err}
}

func (d *decoder) decompress(src []byte, codec int16) ([]byte, error) {
	switch codec {
	case codecNone:
		return src, nil
	case codecGzip:
		d.br.Reset(src)
		var err error
		if d.gz == nil {
			d.gz, err = gzip.NewReader(&d.br)
		} else {
			err = d.gz.Reset(&d.br)
		}
		if err != nil {
			return nil, &codecError{"gzip", err}
		}
		return d.readAllByRead("gzip", d.gz)
	case codecSnappy:
		return d.unsnappy(src)
	case codecLZ4:
		d.br.Reset(src)
		if d.lz == nil {
			d.lz = lz4.NewReader(&d.br)
		} else {
			d.lz.Reset(&d.br)
		}
		return d.readAll("lz4", d.lz)
	case codecZstd:
		zd, err := zstdDecoder()
		if err != nil {
			return nil, &codecError{"zstd", err}
		}
		out, err := zd.DecodeAll(src, d.buf[:0])
		if err != nil {
			if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
				return nil, ErrDecompressTooLarge
			}
			return nil, &codecError{"zstd", err}
		}
		if len(out) > MaxDecompressedSize {
			return nil, ErrDecompressTooLarge
		}
		d.buf = out[:0]
		return out, nil
	default:
		return nil, &DecodeError{Part: "record batch", Field: "attributes", Offset: batchOffAttributes,
			Err: ErrUnsupportedCodec, Detail: strconv.Itoa(int(codec))}
	}
}

// limitedBuffer collects at most MaxDecompressedSize bytes into a reused slice.
type limitedBuffer struct {
	b        []byte
	exceeded bool
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if len(l.b)+len(p) > MaxDecompressedSize {
		l.exceeded = true
		return 0, ErrDecompressTooLarge
	}
	l.b = append(l.b, p...)
	return len(p), nil
}

func (d *decoder) readAll(codec string, r io.Reader) ([]byte, error) {
	d.limw.b, d.limw.exceeded = d.buf[:0], false
	_, err := io.Copy(&d.limw, r)
	d.buf = d.limw.b[:0]
	if d.limw.exceeded {
		return nil, ErrDecompressTooLarge
	}
	if err != nil {
		return nil, &codecError{codec, err}
	}
	return d.limw.b, nil
}

// readAllByRead is readAll through Read: for readers whose WriteTo allocates (klauspost's
// gzip builds a CRC hasher and a MultiWriter per call; its Read does not).
func (d *decoder) readAllByRead(codec string, r io.Reader) ([]byte, error) {
	const limit = MaxDecompressedSize + 1 // reading one byte more tells that it is too large
	buf := d.buf[:0]
	for len(buf) < limit {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), limit)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			d.buf = buf[:0]
			return nil, &codecError{codec, err}
		}
	}
	d.buf = buf[:0]
	if len(buf) > MaxDecompressedSize {
		return nil, ErrDecompressTooLarge
	}
	return buf, nil
}

// unsnappy decodes the Java client's xerial framing (magic, versions, then blocks each
// prefixed by an int32 length) or, without the magic, one raw snappy block.
func (d *decoder) unsnappy(src []byte) ([]byte, error) {
	out := d.buf[:0]
	if !bytes.HasPrefix(src, xerialMagic) {
		return d.snappyBlock(out, src)
	}
	if len(src) < 16 {
		return nil, &codecError{"snappy", errors.New("xerial header truncated")}
	}
	rest := src[16:]
	for len(rest) > 0 {
		if len(rest) < 4 {
			return nil, &codecError{"snappy", errors.New("xerial block length truncated")}
		}
		n := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(n) > uint64(len(rest)) {
			return nil, &codecError{"snappy", errors.New("xerial block truncated")}
		}
		var err error
		if out, err = d.snappyBlock(out, rest[:n]); err != nil {
			return nil, err
		}
		rest = rest[n:]
	}
	d.buf = out[:0]
	return out, nil
}

// snappyBlock appends the decoded block to out, bounded by MaxDecompressedSize.
func (d *decoder) snappyBlock(out, block []byte) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return nil, &codecError{"snappy", err}
	}
	if len(out)+n > MaxDecompressedSize {
		return nil, ErrDecompressTooLarge
	}
	if cap(out)-len(out) < n {
		grown := make([]byte, len(out), 2*cap(out)+n)
		copy(grown, out)
		out = grown
	}
	dec, err := snappy.Decode(out[len(out):len(out)+n], block)
	if err != nil {
		return nil, &codecError{"snappy", err}
	}
	out = out[:len(out)+len(dec)]
	d.buf = out[:0]
	return out, nil
}
