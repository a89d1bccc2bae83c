package output

import (
	"fmt"

	"github.com/kop-offsets/kop-offsets/internal/iostreams"
)

// Print writes doc in format f to io.Out: JSON and YAML render doc itself, NDJSON writes
// each element of items (or doc when items is nil) on its own line, and Table calls table
// with a fresh TablePrinter and renders it.
func Print(io *iostreams.IOStreams, f Format, doc any, table func(*TablePrinter)) error {
	switch f {
	case JSON:
		return WriteJSON(io.Out, doc)
	case YAML:
		return WriteYAML(io.Out, doc)
	case NDJSON:
		return NewNDJSONWriter(io.Out).Write(doc)
	case Table, "":
		if table == nil {
			return WriteYAML(io.Out, doc)
		}
		tp := NewTablePrinter(io)
		table(tp)
		return tp.Render()
	default:
		return fmt.Errorf("unsupported output format %q", f)
	}
}
