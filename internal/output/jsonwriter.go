package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// JSONWriter appends JSON objects byte for byte as encoding/json writes them with HTML
// escaping off, compact or as json.Indent indents them, without reflection and without the
// second, indenting pass. check's rows and dump's records use it: at a million of them
// encoding/json's reflection and json.Indent were most of the CPU.
//
// Fields are written in call order; the caller owns omitempty.
type JSONWriter struct {
	B []byte
	// Prefix and Indent are json.Indent's: every line after the first starts with Prefix
	// and one Indent per level. An empty Indent writes compact JSON.
	Prefix, Indent string
	// Times caches formatted timestamps; nil formats each one.
	Times *TimeCache
	n     []int // fields written so far, per open object
	err   error
}

// Err is the first value that could not be written (a NaN or infinite float).
func (w *JSONWriter) Err() error { return w.err }

// Open starts an object (as a value: after Key, or at the top).
func (w *JSONWriter) Open() {
	w.B = append(w.B, '{')
	w.n = append(w.n, 0)
}

// Close ends the innermost object. An empty object stays {} as json.Indent leaves it.
func (w *JSONWriter) Close() {
	last := len(w.n) - 1
	if w.n[last] > 0 {
		w.newline(last)
	}
	w.n = w.n[:last]
	w.B = append(w.B, '}')
}

func (w *JSONWriter) newline(depth int) {
	if w.Indent == "" {
		return
	}
	w.B = append(w.B, '\n')
	w.B = append(w.B, w.Prefix...)
	for range depth {
		w.B = append(w.B, w.Indent...)
	}
}

// Key starts a field of the innermost object; its value follows.
func (w *JSONWriter) Key(k string) {
	last := len(w.n) - 1
	if w.n[last] > 0 {
		w.B = append(w.B, ',')
	}
	w.n[last]++
	w.newline(last + 1)
	w.B = AppendJSONString(w.B, k)
	w.B = append(w.B, ':')
	if w.Indent != "" {
		w.B = append(w.B, ' ')
	}
}

// String writes a string field.
func (w *JSONWriter) String(k, v string) {
	w.Key(k)
	w.B = AppendJSONString(w.B, v)
}

// Int writes an integer field.
func (w *JSONWriter) Int(k string, v int64) {
	w.Key(k)
	w.B = strconv.AppendInt(w.B, v, 10)
}

// IntPtr writes an integer field, null for nil.
func (w *JSONWriter) IntPtr(k string, v *int64) {
	if v == nil {
		w.Null(k)
		return
	}
	w.Int(k, *v)
}

// Null writes a null field.
func (w *JSONWriter) Null(k string) {
	w.Key(k)
	w.B = append(w.B, "null"...)
}

// Bool writes a boolean field.
func (w *JSONWriter) Bool(k string, v bool) {
	w.Key(k)
	w.B = strconv.AppendBool(w.B, v)
}

// Time writes a time field as Time marshals it: TimeLayout in UTC, null for the zero time.
func (w *JSONWriter) Time(k string, t time.Time) {
	if t.IsZero() {
		w.Null(k)
		return
	}
	w.Key(k)
	w.B = append(w.B, '"')
	w.B = w.Times.Append(w.B, t.UTC())
	w.B = append(w.B, '"')
}

// Float writes a float64 field in encoding/json's notation: the shortest decimal that reads
// back the same, with an exponent below 1e-6 and from 1e21 on.
func (w *JSONWriter) Float(k string, f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		if w.err == nil {
			w.err = fmt.Errorf("json: unsupported value %v for %q", f, k)
		}
		f = 0
	}
	w.Key(k)
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	start := len(w.B)
	w.B = strconv.AppendFloat(w.B, f, format, -1, 64)
	if format == 'e' { // e-07 → e-7, as encoding/json writes it
		if n := len(w.B) - start; n >= 4 && w.B[len(w.B)-4] == 'e' && w.B[len(w.B)-3] == '-' && w.B[len(w.B)-2] == '0' {
			w.B[len(w.B)-2] = w.B[len(w.B)-1]
			w.B = w.B[:len(w.B)-1]
		}
	}
}

// AppendJSONString appends s as a JSON string as encoding/json writes it with HTML escaping
// off: directly when nothing in it needs escaping, else through encoding/json.
func AppendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(s) // a string always encodes
			return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// TimeCache keeps the last few timestamps formatted in TimeLayout: the records of one commit
// request, and the rows of one group, share their commit and expiry times.
type TimeCache struct {
	keys [4]int64 // Unix milliseconds
	vals [4][24]byte
	used [4]bool
	next int
}

// Append appends t in TimeLayout (t in UTC); a nil cache formats every time.
func (c *TimeCache) Append(b []byte, t time.Time) []byte {
	if c == nil || t.Location() != time.UTC {
		return AppendTime(b, t)
	}
	k := t.UnixMilli() // all the layout shows
	for i := range c.keys {
		if c.used[i] && c.keys[i] == k {
			return append(b, c.vals[i][:]...)
		}
	}
	start := len(b)
	b = AppendTime(b, t)
	if len(b)-start == len(c.vals[0]) {
		i := c.next
		c.keys[i], c.used[i], c.next = k, true, (i+1)%len(c.keys)
		copy(c.vals[i][:], b[start:])
	}
	return b
}

// AppendTime appends t (UTC) in TimeLayout, as t.AppendFormat does, several times faster.
func AppendTime(b []byte, t time.Time) []byte {
	y, mo, d := t.Date()
	if t.Location() != time.UTC || y < 0 || y > 9999 {
		return t.AppendFormat(b, TimeLayout)
	}
	h, mi, s := t.Clock()
	b = appendDigits(b, y, 4)
	b = appendDigits(append(b, '-'), int(mo), 2)
	b = appendDigits(append(b, '-'), d, 2)
	b = appendDigits(append(b, 'T'), h, 2)
	b = appendDigits(append(b, ':'), mi, 2)
	b = appendDigits(append(b, ':'), s, 2)
	b = appendDigits(append(b, '.'), t.Nanosecond()/1e6, 3)
	return append(b, 'Z')
}

func appendDigits(b []byte, v, n int) []byte {
	for range n {
		b = append(b, 0)
	}
	for i := len(b) - 1; i >= len(b)-n; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return b
}
