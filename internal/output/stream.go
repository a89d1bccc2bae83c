package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// JSONStream writes one JSON document, as WriteJSON would write it, whose array field is
// written one element at a time: a document of a million rows is never held whole. The
// bytes are WriteJSON's: the head and the tail come from the document itself (with the array
// empty), each element is indented at its depth on its own.
type JSONStream struct {
	w      io.Writer
	marker []byte // `"field": [` as WriteJSON writes it at the top level
	head   []byte // written, up to and including marker
	n      int
	buf    bytes.Buffer // an element, compact
	out    bytes.Buffer // an element, indented
	enc    *json.Encoder
}

// NewJSONStream returns a stream of the array field (its JSON name) of a top-level object.
func NewJSONStream(w io.Writer, field string) *JSONStream {
	s := &JSONStream{w: w, marker: []byte("\n  \"" + field + "\": [")}
	s.enc = json.NewEncoder(&s.buf)
	s.enc.SetEscapeHTML(false)
	return s
}

// Begin writes the document up to the array's first element. doc must hold an empty array
// in field and, before it, the values the finished document will hold.
func (s *JSONStream) Begin(doc any) error {
	b, err := s.split(doc)
	if err != nil {
		return err
	}
	s.head = b
	_, err = s.w.Write(b)
	return err
}

// JSONAppender is a value that appends its own JSON, indented as json.Indent would indent
// its compact form with prefix and indent (a Row of check: a million of them are written
// without encoding/json's reflection, its copies and a second, indenting pass).
type JSONAppender interface {
	AppendJSONIndent(dst []byte, prefix, indent string) ([]byte, error)
}

// elementPrefix and elementIndent are how WriteJSON indents an element of a top-level array.
const elementPrefix, elementIndent = "    ", "  "

// Write writes one element of the array.
func (s *JSONStream) Write(v any) error {
	sep := ",\n    "
	if s.n == 0 {
		sep = "\n    "
	}
	s.n++
	s.out.Reset()
	s.out.WriteString(sep)
	if a, ok := v.(JSONAppender); ok {
		b, err := a.AppendJSONIndent(s.out.AvailableBuffer(), elementPrefix, elementIndent)
		if err != nil {
			return err
		}
		s.out.Write(b)
	} else {
		s.buf.Reset()
		if err := s.enc.Encode(v); err != nil {
			return err
		}
		if err := json.Indent(&s.out, bytes.TrimSuffix(s.buf.Bytes(), []byte("\n")), elementPrefix, elementIndent); err != nil {
			return err
		}
	}
	_, err := s.w.Write(s.out.Bytes())
	return err
}

// End writes the rest of the document: doc is the finished document with its array empty;
// what precedes the array must be what Begin wrote.
func (s *JSONStream) End(doc any) error {
	var full bytes.Buffer
	if err := WriteJSON(&full, doc); err != nil {
		return err
	}
	b := full.Bytes()
	if !bytes.HasPrefix(b, s.head) || !bytes.HasPrefix(b[len(s.head):], []byte("]")) {
		return fmt.Errorf("json stream: the document changed before %s", s.marker)
	}
	tail := b[len(s.head):]
	if s.n > 0 {
		if _, err := io.WriteString(s.w, "\n  "); err != nil {
			return err
		}
	}
	_, err := s.w.Write(tail)
	return err
}

// split returns doc's WriteJSON bytes up to and including the marker.
func (s *JSONStream) split(doc any) ([]byte, error) {
	var full bytes.Buffer
	if err := WriteJSON(&full, doc); err != nil {
		return nil, err
	}
	i := bytes.Index(full.Bytes(), s.marker)
	if i < 0 {
		return nil, fmt.Errorf("json stream: no top-level array %s in the document", s.marker)
	}
	return full.Bytes()[:i+len(s.marker)], nil
}
