package output

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/kop-offsets/kop-offsets/internal/iostreams"
)

// MaxRows is how many rows a cut table (Layout.Cut) shows before its trailer line.
const MaxRows = 10

// Layout is the rule of -o table, in one place: on a terminal, aligned columns under a
// header line; otherwise (piped) the same rows tab-separated, the header line first, as
// kubectl does. NoHeaders (--no-headers) drops the header line in both. Limit, when set,
// shows that many rows, then one line saying how many more there are and where to see them.
type Layout struct {
	TTY       bool
	NoHeaders bool
	Limit     int // 0: every row
}

// StdoutLayout is the layout of a table written to ios.Out.
func StdoutLayout(ios *iostreams.IOStreams) Layout {
	return Layout{TTY: ios.IsStdoutTTY(), NoHeaders: ios.NoHeaders()}
}

// StderrLayout is the layout of a table written to ios.ErrOut (a plan shown before a
// confirmation while stdout carries JSON).
func StderrLayout(ios *iostreams.IOStreams) Layout {
	return Layout{TTY: ios.IsStderrTTY(), NoHeaders: ios.NoHeaders()}
}

// Dash is s, or "-" for an empty cell, so that a table's columns stay aligned.
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Cut limits l to MaxRows rows unless showAll (--show-all): a plan of 49,997 groups stays
// readable, the whole list is in -o json.
func (l Layout) Cut(showAll bool) Layout {
	l.Limit = MaxRows
	if showAll {
		l.Limit = 0
	}
	return l
}

// Trailer is the line a cut table ends with when more rows than its limit were added.
func Trailer(more int) string {
	return fmt.Sprintf("... and %d more (all of them in -o json, or with --show-all)", more)
}

// TablePrinter prints rows per a Layout (built on tablewriter for the aligned columns, like
// cli/cli's TablePrinter). Cells may carry ANSI colour (only colour on a terminal: see
// iostreams.ColorScheme).
type TablePrinter struct {
	w      io.Writer
	l      Layout
	header []string
	rows   [][]string
	cur    []string
	n      int   // rows added
	stream bool  // piped: rows are written as they end
	err    error // of a streamed row
}

// NewTablePrinter returns a TablePrinter writing to io.Out in its StdoutLayout.
func NewTablePrinter(io *iostreams.IOStreams) *TablePrinter {
	return NewTablePrinterTo(io.Out, StdoutLayout(io))
}

// NewTablePrinterTo returns a TablePrinter writing to w in layout l.
func NewTablePrinterTo(w io.Writer, l Layout) *TablePrinter { return &TablePrinter{w: w, l: l} }

// StreamPiped makes a piped table (stdout not a terminal) write each row as it ends, so a
// table of a million rows is never held; a terminal's aligned columns still need every row
// first. Render writes the rest and returns the first write error.
func (t *TablePrinter) StreamPiped() *TablePrinter {
	t.stream = !t.l.TTY
	return t
}

// IsTTY reports whether the aligned layout is used.
func (t *TablePrinter) IsTTY() bool { return t.l.TTY }

// AddHeader sets the column headers (dropped by Layout.NoHeaders). Write them UPPER CASE.
func (t *TablePrinter) AddHeader(columns ...string) { t.header = columns }

// AddField adds a cell to the current row.
func (t *TablePrinter) AddField(s string) { t.cur = append(t.cur, s) }

// EndRow ends the current row.
func (t *TablePrinter) EndRow() {
	t.n++
	switch {
	case t.l.Limit > 0 && t.n > t.l.Limit:
		// Cut: counted for the trailer, not kept.
	case t.stream:
		if t.err == nil && t.n == 1 {
			t.err = t.writeHeader()
		}
		if t.err == nil {
			t.err = writePlain(t.w, [][]string{t.cur})
		}
	default:
		t.rows = append(t.rows, t.cur)
		t.cur = nil
		return
	}
	t.cur = t.cur[:0]
}

// AddRow adds a whole row.
func (t *TablePrinter) AddRow(fields ...string) {
	t.cur = append(t.cur[:0], fields...)
	t.EndRow()
}

// writeHeader writes the header line of a piped table, unless there is none to write.
func (t *TablePrinter) writeHeader() error {
	if t.l.NoHeaders || len(t.header) == 0 {
		return nil
	}
	return writePlain(t.w, [][]string{t.header})
}

// Render writes the table, then the trailer of a cut table.
func (t *TablePrinter) Render() error {
	if len(t.cur) > 0 {
		t.EndRow()
	}
	if err := t.render(); err != nil {
		return err
	}
	if more := t.n - t.l.Limit; t.l.Limit > 0 && more > 0 {
		_, err := fmt.Fprintln(t.w, Trailer(more))
		return err
	}
	return nil
}

func (t *TablePrinter) render() error {
	if !t.l.TTY {
		if t.err != nil {
			return t.err
		}
		if !t.stream || t.n == 0 {
			// A streamed table wrote its header with its first row.
			if err := t.writeHeader(); err != nil {
				return err
			}
		}
		return writePlain(t.w, t.rows)
	}
	header := t.header
	if t.l.NoHeaders {
		header = nil
	}
	if len(t.rows) == 0 && len(header) == 0 {
		return nil
	}
	var buf bytes.Buffer
	tbl := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders:  tw.BorderNone,
			Symbols:  tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{Lines: tw.LinesNone, Separators: tw.SeparatorsNone},
		})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithTrimSpace(tw.Off),
		tablewriter.WithPadding(tw.Padding{Left: "", Right: "  ", Overwrite: true}),
	)
	if len(header) > 0 {
		h := make([]any, len(header))
		for i, s := range header {
			h[i] = s
		}
		tbl.Header(h...)
	}
	for _, r := range t.rows {
		if err := tbl.Append(r); err != nil {
			return err
		}
	}
	if err := tbl.Render(); err != nil {
		return err
	}
	// Drop the trailing padding of each line.
	var out strings.Builder
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if line == "" {
			continue
		}
		out.WriteString(strings.TrimRight(line, " \n"))
		out.WriteByte('\n')
	}
	_, err := io.WriteString(t.w, out.String())
	return err
}

var plainField = strings.NewReplacer("\t", " ", "\n", " ")

// writePlain writes rows tab-separated, one per line.
func writePlain(w io.Writer, rows [][]string) error {
	var b strings.Builder
	for _, r := range rows {
		for i, f := range r {
			if i > 0 {
				b.WriteByte('\t')
			}
			b.WriteString(plainField.Replace(f))
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
