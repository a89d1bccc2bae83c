package promexport

import (
	"bufio"
	"io"
	"strconv"
	"strings"

	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// Rows calls fn with every row of a report, in order; a row is fn's only during the call.
// WriteText calls it once per family.
type Rows func(fn func(*verdict.Row))

// WriteText writes the Series of a report, its rows given by rows and the rest by head
// (exit code, unserved offsets partitions; head's own rows are not read), in Prometheus's
// text format (version 0.0.4), as the Series' registry would expose them. It writes each
// sample as it comes: a family's samples must be together, so it walks the rows once per
// family, and holds no more than one row, where the registry holds every series of every row
// (about 22 KB per key at a scrape of watch). Labels are written in name order, as the
// registry does; the samples of a family are in row order, not sorted.
func WriteText(out io.Writer, head *survey.Report, rows Rows) error {
	w := &textWriter{w: bufio.NewWriterSize(out, 64<<10)}
	for _, g := range cellGauges {
		w.family(g.name, "gauge")
		rows(func(r *verdict.Row) {
			for i := range r.Cells {
				if v, ok := g.value(&r.Cells[i]); ok {
					w.cellSample(r, &r.Cells[i], "", v)
				}
			}
		})
	}
	w.family(MetricStatus, "gauge")
	rows(func(r *verdict.Row) {
		for i := range r.Cells {
			for _, st := range verdict.Statuses {
				w.cellSample(r, &r.Cells[i], st, b2f(r.Cells[i].Status == st))
			}
		}
	})
	w.family(MetricUnserved, "gauge")
	for _, u := range head.Unserved {
		w.sample(func() {
			w.label("cluster", u.Cluster)
			w.label("offsets_partition", strconv.Itoa(int(u.OffsetsPartition)))
			if u.Tenant != "" {
				w.label("tenant", u.Tenant)
			}
		}, 1)
	}
	w.family(MetricExitCode, "gauge")
	w.sample(nil, float64(head.ExitCode))
	return w.flush()
}

// textWriter writes the text format. A family's HELP and TYPE lines are written before its
// first sample, so a family without samples is left out, as the registry leaves it out.
type textWriter struct {
	w            *bufio.Writer
	name, typ    string
	headerDone   bool
	labels, line []byte
	err          error
}

func (w *textWriter) family(name, typ string) { w.name, w.typ, w.headerDone = name, typ, false }

// cellSample writes a sample of cell c of row r, with the status label when st is set.
func (w *textWriter) cellSample(r *verdict.Row, c *verdict.Cell, st verdict.Status, v float64) {
	w.sample(func() {
		w.label("cluster", c.Cluster)
		w.label("group", r.Group)
		w.label("partition", strconv.Itoa(int(r.Partition)))
		if st != "" {
			w.label("status", string(st))
		}
		if r.Tenant != "" {
			w.label("tenant", r.Tenant)
		}
		w.label("topic", r.Topic)
	}, v)
}

// sample writes one sample of the current family; labels writes its labels (nil: none).
func (w *textWriter) sample(labels func(), v float64) {
	if w.err != nil {
		return
	}
	if !w.headerDone {
		w.line = append(w.line[:0], "# HELP "...)
		w.line = append(w.line, w.name...)
		w.line = append(w.line, ' ')
		w.line = appendEscaped(w.line, helps[w.name], false)
		w.line = append(w.line, "\n# TYPE "...)
		w.line = append(w.line, w.name...)
		w.line = append(w.line, ' ')
		w.line = append(w.line, w.typ...)
		w.line = append(w.line, '\n')
		w.write(w.line)
		w.headerDone = true
	}
	w.line = append(w.line[:0], w.name...)
	w.labels = w.labels[:0]
	if labels != nil {
		labels()
	}
	if len(w.labels) > 0 {
		w.line = append(w.line, '{')
		w.line = append(w.line, w.labels[:len(w.labels)-1]...) // without the last comma
		w.line = append(w.line, '}')
	}
	w.line = append(w.line, ' ')
	w.line = strconv.AppendFloat(w.line, v, 'g', -1, 64)
	w.line = append(w.line, '\n')
	w.write(w.line)
}

// label adds name="value", to the sample being written.
func (w *textWriter) label(name, value string) {
	w.labels = append(w.labels, name...)
	w.labels = append(w.labels, '=', '"')
	w.labels = appendEscaped(w.labels, value, true)
	w.labels = append(w.labels, '"', ',')
}

func (w *textWriter) write(b []byte) {
	if w.err == nil {
		_, w.err = w.w.Write(b)
	}
}

func (w *textWriter) flush() error {
	if w.err != nil {
		return w.err
	}
	return w.w.Flush()
}

// appendEscaped escapes s as the text format wants it: backslash and newline everywhere, the
// double quote in label values.
func appendEscaped(b []byte, s string, quote bool) []byte {
	if !strings.ContainsAny(s, "\\\n\"") {
		return append(b, s...)
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, '\\', '\\')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '"' && quote:
			b = append(b, '\\', '"')
		default:
			b = append(b, c)
		}
	}
	return b
}
