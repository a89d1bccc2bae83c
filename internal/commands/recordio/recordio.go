// Package recordio writes the decoded records of `decode` and `dump` as a stream: one record
// at a time, in any -o format, so that a dump of a whole offsets topic is never held in
// memory. ndjson writes one object per line; json writes one document (schemaVersion, the
// records array written element by element as they come, then the run's errors); yaml writes one sequence the same way; table writes aligned rows
// with a header on a terminal (column widths grow as wider cells arrive) and tab-separated
// rows without a header otherwise, as output.TablePrinter does.
package recordio

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/kop-offsets/kop-offsets/internal/explain"
	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
	"github.com/kop-offsets/kop-offsets/internal/output"
)

// Column is one table column: its header and the minimum width it starts with.
type Column struct {
	Header string
	Width  int
}

// Sink writes values in one format. It is safe for concurrent use.
type Sink struct {
	mu     sync.Mutex
	w      io.Writer
	format output.Format
	tty    bool
	cols   []Column
	row    func(v any) []string
	widths []int
	n      int
	closed bool

	// A terminal table holds its first rows back (up to tableBuffer, or until Flush or
	// Close) so that the header and those rows share column widths.
	held    [][]string
	flushed bool
}

const tableBuffer = 200

// NewSink writes to w in format. For the table format, cols are the columns and row turns
// a value into its cells; tty selects aligned output with a header.
func NewSink(w io.Writer, format output.Format, tty bool, cols []Column, row func(v any) []string) *Sink {
	s := &Sink{w: w, format: format, tty: tty, cols: cols, row: row}
	for _, c := range cols {
		s.widths = append(s.widths, max(c.Width, utf8.RuneCountInString(c.Header)))
	}
	return s
}

// Count returns the number of values written.
func (s *Sink) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// Write writes one value.
func (s *Sink) Write(v any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("recordio: write after close")
	}
	defer func() { s.n++ }()
	switch s.format {
	case output.NDJSON:
		b, err := marshal(v, "")
		if err != nil {
			return err
		}
		_, err = s.w.Write(append(b, '\n'))
		return err
	case output.JSON:
		b, err := marshal(v, ElementPrefix)
		if err != nil {
			return err
		}
		sep := ",\n" + ElementPrefix
		if s.n == 0 {
			sep = jsonHead + "\n" + ElementPrefix
		}
		if _, err := io.WriteString(s.w, sep); err != nil {
			return err
		}
		_, err = s.w.Write(b)
		return err
	case output.YAML:
		var buf bytes.Buffer
		if err := output.WriteYAML(&buf, []any{v}); err != nil {
			return err
		}
		_, err := s.w.Write(buf.Bytes())
		return err
	default:
		return s.writeRow(s.row(v))
	}
}

// jsonHead opens the json document up to its records array: schemaVersion first, as every
// document of the tool starts (docs/contract-changes.md).
const jsonHead = "{\n  \"schemaVersion\": 1,\n  \"records\": ["

// ElementPrefix is how far a record of the json document is indented: inside the records
// array of the top-level object. A JSONAppender indents by it and "  " per level.
const ElementPrefix = "    "

// JSONAppender is implemented by values that write their own JSON, byte for byte what
// encoding/json writes with this package's settings, only faster (dump's records at a million
// keys); ok false leaves the value to encoding/json.
type JSONAppender interface {
	AppendJSON(b []byte, indent bool) (_ []byte, ok bool)
}

func marshal(v any, indent string) ([]byte, error) {
	if a, ok := v.(JSONAppender); ok {
		if b, ok := a.AppendJSON(make([]byte, 0, 512), indent != ""); ok {
			return b, nil
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent(indent, "  ")
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

var cellReplacer = strings.NewReplacer("\t", " ", "\n", " ", "\r", " ")

func (s *Sink) writeRow(cells []string) error {
	var b strings.Builder
	if !s.tty {
		for i, c := range cells {
			if i > 0 {
				b.WriteByte('\t')
			}
			b.WriteString(cellReplacer.Replace(c))
		}
		b.WriteByte('\n')
		_, err := io.WriteString(s.w, b.String())
		return err
	}
	if !s.flushed {
		s.held = append(s.held, cells)
		if len(s.held) < tableBuffer {
			return nil
		}
		return s.flushLocked()
	}
	s.pad(&b, cells)
	_, err := io.WriteString(s.w, b.String())
	return err
}

// Flush writes the rows a terminal table holds back; later rows are written at once.
func (s *Sink) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.format != output.Table && s.format != "" || !s.tty || s.flushed {
		return nil
	}
	return s.flushLocked()
}

func (s *Sink) flushLocked() error {
	s.flushed = true
	hdr := make([]string, len(s.cols))
	for i, c := range s.cols {
		hdr[i] = c.Header
	}
	for _, r := range append([][]string{hdr}, s.held...) {
		for i, c := range r {
			if i < len(s.widths) {
				s.widths[i] = max(s.widths[i], utf8.RuneCountInString(cellReplacer.Replace(c)))
			}
		}
	}
	var b strings.Builder
	s.pad(&b, hdr)
	for _, r := range s.held {
		s.pad(&b, r)
	}
	s.held = nil
	_, err := io.WriteString(s.w, b.String())
	return err
}

// pad writes one aligned line; widths only grow, so later rows may sit further right.
func (s *Sink) pad(b *strings.Builder, cells []string) {
	var line strings.Builder
	for i, c := range cells {
		c = cellReplacer.Replace(c)
		if i >= len(s.widths) {
			s.widths = append(s.widths, 0)
		}
		w := utf8.RuneCountInString(c)
		s.widths[i] = max(s.widths[i], w)
		line.WriteString(c)
		if i < len(cells)-1 {
			line.WriteString(strings.Repeat(" ", s.widths[i]-w+2))
		}
	}
	b.WriteString(strings.TrimRight(line.String(), " "))
	b.WriteByte('\n')
}

// Close ends the output: for json the records array and the document, with problems as its
// errors (the run's, an empty array when none); an empty array or sequence when nothing was
// written.
func (s *Sink) Close(problems []explain.Problem) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var tail string
	switch s.format {
	case output.JSON:
		tail = "\n  ]"
		if s.n == 0 {
			tail = jsonHead + "]"
		}
		if problems == nil {
			problems = []explain.Problem{}
		}
		var errs bytes.Buffer
		enc := json.NewEncoder(&errs)
		enc.SetEscapeHTML(false)
		enc.SetIndent("  ", "  ")
		if err := enc.Encode(problems); err != nil {
			return err
		}
		tail += ",\n  \"errors\": " + strings.TrimSuffix(errs.String(), "\n") + "\n}\n"
	case output.YAML:
		if s.n == 0 {
			tail = "[]\n"
		}
	case output.Table, "":
		if s.tty && !s.flushed {
			return s.flushLocked()
		}
	}
	_, err := io.WriteString(s.w, tail)
	return err
}

// RecordCells are the cells every record table shows: KIND, GROUP, TOPIC, PARTITION, OFFSET,
// COMMITTED and DETAIL (what else matters for the kind: metadata, generation and members,
// producer id, the error).
func RecordCells(r *offsetlog.Record) []string {
	cells := []string{string(r.Kind), output.Dash(r.Group), output.Dash(r.Topic), "-", "-", "-", ""}
	if r.Partition != nil {
		cells[3] = strconv.Itoa(int(*r.Partition))
	}
	if r.Offset != nil {
		cells[4] = strconv.FormatInt(*r.Offset, 10)
	}
	if r.CommitTimestamp != nil {
		cells[5] = r.CommitTimestamp.String()
	} else if r.CurrentStateTimestamp != nil {
		cells[5] = r.CurrentStateTimestamp.String()
	}
	var d []string
	switch r.Kind {
	case offsetlog.KindUndecodable:
		d = append(d, r.Error)
	case offsetlog.KindGroupMetadata:
		if r.Generation != nil {
			d = append(d, "generation="+strconv.Itoa(int(*r.Generation)))
		}
		if r.ProtocolType != nil && *r.ProtocolType != "" {
			d = append(d, "protocolType="+*r.ProtocolType)
		}
		if r.Protocol != nil && *r.Protocol != "" {
			d = append(d, "protocol="+*r.Protocol)
		}
		if r.Leader != nil && *r.Leader != "" {
			d = append(d, "leader="+*r.Leader)
		}
		d = append(d, "members="+strconv.Itoa(len(r.Members)))
	default:
		if r.Metadata != nil && *r.Metadata != "" {
			d = append(d, "metadata="+strconv.Quote(*r.Metadata))
		}
		if r.LeaderEpoch != nil {
			d = append(d, "leaderEpoch="+strconv.Itoa(int(*r.LeaderEpoch)))
		}
	}
	if r.ProducerID != nil {
		d = append(d, "producerId="+strconv.FormatInt(*r.ProducerID, 10))
	}
	if r.Transactional {
		d = append(d, "transactional")
	}
	cells[6] = output.Dash(strings.Join(d, " "))
	return cells
}

// RecordColumns are the headers of RecordCells.
var RecordColumns = []Column{
	{"KIND", 0}, {"GROUP", 0}, {"TOPIC", 0}, {"PARTITION", 0}, {"OFFSET", 0}, {"COMMITTED", 0}, {"DETAIL", 0},
}

// Summary counts records by kind.
type Summary struct {
	Messages int64
	ByKind   map[offsetlog.Kind]int64
}

// Add counts one record.
func (s *Summary) Add(k offsetlog.Kind) {
	if s.ByKind == nil {
		s.ByKind = map[offsetlog.Kind]int64{}
	}
	s.ByKind[k]++
}

// Records is the number of records counted.
func (s *Summary) Records() int64 {
	var n int64
	for _, c := range s.ByKind {
		n += c
	}
	return n
}

// Undecodable is the number of undecodable records.
func (s *Summary) Undecodable() int64 { return s.ByKind[offsetlog.KindUndecodable] }

// String renders "12 messages, 14 records: 10 offset_commit, 2 group_metadata, 2 undecodable".
func (s *Summary) String() string {
	var parts []string
	for _, k := range offsetlog.Kinds {
		if c := s.ByKind[k]; c > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c, k))
		}
	}
	out := fmt.Sprintf("%d messages, %d records", s.Messages, s.Records())
	if len(parts) > 0 {
		out += ": " + strings.Join(parts, ", ")
	}
	return out
}
