package offsetlog

import (
	"errors"
	"strconv"
	"strings"
)

// Sentinels for errors.Is; every decode failure wraps one of them in a *DecodeError.
var (
	ErrTruncated          = errors.New("truncated")
	ErrUnknownVersion     = errors.New("unknown version")
	ErrBadCRC             = errors.New("bad crc")
	ErrUnsupportedMagic   = errors.New("unsupported magic")
	ErrUnsupportedCodec   = errors.New("unsupported compression codec")
	ErrMalformed          = errors.New("malformed")
	ErrDecompress         = errors.New("decompression failed")
	ErrDecompressTooLarge = errors.New("decompressed size exceeds limit")
	// ErrUnknownControlType is a control record whose type is neither ABORT (0) nor COMMIT (1).
	ErrUnknownControlType = errors.New("unknown control record type")
)

// DecodeError says where a message failed to decode. Part names the structure
// ("record batch", "record 2", "offset value v1", "group value v4 member 0"), Field the field
// in it (camelCase, as in the JSON contract where one exists), Offset the byte position
// relative to the start of that structure, Detail an optional value ("version 9").
type DecodeError struct {
	Part   string
	Field  string
	Offset int
	Detail string
	Err    error
}

// Error renders e.g. "offset value v1: field commitTimestamp: truncated at byte 27".
func (e *DecodeError) Error() string {
	var b strings.Builder
	if e.Part != "" {
		b.WriteString(e.Part)
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString("field ")
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString("decode error")
	}
	if e.Detail != "" {
		b.WriteString(" ")
		b.WriteString(e.Detail)
	}
	b.WriteString(" at byte ")
	b.WriteString(strconv.Itoa(e.Offset))
	return b.String()
}

func (e *DecodeError) Unwrap() error { return e.Err }
