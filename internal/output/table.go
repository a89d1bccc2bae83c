package output

import (
	"bytes"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/kop-offsets/kop-offsets/internal/iostreams"
)

// TablePrinter prints rows: on a terminal as aligned columns under a header line (built on
// tablewriter), otherwise as plain tab-separated rows without the header, like cli/cli's
// TablePrinter. Cells may carry ANSI colour (only colour on a terminal: see
// iostreams.ColorScheme).
type TablePrinter struct {
	w      io.Writer
	tty    bool
	header []string
	rows   [][]string
	cur    []string
	stream bool  // piped: rows are written as they end
	err    error // of a streamed row
}

// NewTablePrinter returns a TablePrinter writing to io.Out.
func NewTablePrinter(io *iostreams.IOStreams) *TablePrinter {
	return &TablePrinter{w: io.Out, tty: io.IsStdoutTTY()}
}

// NewTablePrinterTo returns a TablePrinter writing to w; tty chooses the layout.
func NewTablePrinterTo(w io.Writer, tty bool) *TablePrinter { return &TablePrinter{w: w, tty: tty} }

// StreamPiped makes a piped table (stdout not a terminal) write each row as it ends, so a
// table of a million rows is never held; a terminal's aligned columns still need every row
// first. Render writes the rest and returns the first write error.
func (t *TablePrinter) StreamPiped() *TablePrinter {
	t.stream = !t.tty
	return t
}

// IsTTY reports whether the aligned layout is used.
func (t *TablePrinter) IsTTY() bool { return t.tty }

// AddHeader sets the column headers (shown only on a terminal). Write them UPPER CASE.
func (t *TablePrinter) AddHeader(columns ...string) { t.header = columns }

// AddField adds a cell to the current row.
func (t *TablePrinter) AddField(s string) { t.cur = append(t.cur, s) }

// EndRow ends the current row.
func (t *TablePrinter) EndRow() {
	if t.stream {
		if t.err == nil {
			t.err = writePlain(t.w, [][]string{t.cur})
		}
		t.cur = t.cur[:0]
		return
	}
	t.rows = append(t.rows, t.cur)
	t.cur = nil
}

// AddRow adds a whole row.
func (t *TablePrinter) AddRow(fields ...string) {
	if t.stream {
		t.cur = append(t.cur[:0], fields...)
		t.EndRow()
		return
	}
	t.rows = append(t.rows, append([]string(nil), fields...))
}

// Render writes the table.
func (t *TablePrinter) Render() error {
	if len(t.cur) > 0 {
		t.EndRow()
	}
	if !t.tty {
		if t.err != nil {
			return t.err
		}
		return writePlain(t.w, t.rows)
	}
	if len(t.rows) == 0 && len(t.header) == 0 {
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
	if len(t.header) > 0 {
		h := make([]any, len(t.header))
		for i, s := range t.header {
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
