package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"go.yaml.in/yaml/v3"
)

// WriteJSON writes v as one indented JSON document followed by a newline. HTML characters
// are not escaped.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// NDJSONWriter writes one compact JSON object per line (-o ndjson).
type NDJSONWriter struct{ enc *json.Encoder }

// NewNDJSONWriter returns a writer of one JSON value per line.
func NewNDJSONWriter(w io.Writer) *NDJSONWriter {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &NDJSONWriter{enc: enc}
}

// Write writes v on one line.
func (n *NDJSONWriter) Write(v any) error { return n.enc.Encode(v) }

// WriteYAML writes v as YAML. The document is v's JSON encoding converted to YAML, so keys,
// omitted fields and value formats are the same as with -o json.
func WriteYAML(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var node yaml.Node
	// JSON is YAML: parsing it keeps the key order of the JSON document.
	if err := yaml.Unmarshal(b, &node); err != nil {
		return fmt.Errorf("convert json to yaml: %w", err)
	}
	plain(&node)
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&node); err != nil {
		return err
	}
	return enc.Close()
}

// plain drops the flow and quoting styles the JSON source gave the nodes, so the result
// reads as block YAML; the encoder quotes strings again where plain style would change
// their type.
func plain(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		plain(c)
	}
}

// JSONToYAML converts one JSON document to YAML (see WriteYAML).
func JSONToYAML(b []byte) ([]byte, error) {
	var v json.RawMessage = b
	var buf bytes.Buffer
	if err := WriteYAML(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// TimeLayout is how times are written: RFC 3339, UTC, milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// FormatTime formats t per TimeLayout in UTC.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// Time is a time.Time that marshals per TimeLayout in UTC; the zero time marshals as null.
// Use *Time or `omitempty`-friendly pointers for absent values.
type Time struct{ time.Time }

// NewTime returns a *Time, nil for the zero time.
func NewTime(t time.Time) *Time {
	if t.IsZero() {
		return nil
	}
	return &Time{t}
}

// MarshalJSON implements json.Marshaler.
func (t Time) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return []byte(`"` + FormatTime(t.Time) + `"`), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		t.Time = time.Time{}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	p, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	t.Time = p
	return nil
}
