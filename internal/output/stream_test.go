package output_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/output"
)

type streamed struct {
	Version int              `json:"version"`
	Name    *string          `json:"name"`
	Items   []map[string]any `json:"items"`
	Notes   []string         `json:"notes,omitempty"`
	Total   int              `json:"total"`
}

// TestJSONStreamIsWriteJSON: a document streamed element by element is byte for byte the
// document WriteJSON writes whole, for no, one and several elements, with HTML characters.
func TestJSONStreamIsWriteJSON(t *testing.T) {
	name := "a<b>&c"
	for _, n := range []int{0, 1, 3} {
		var items []map[string]any
		for i := range n {
			items = append(items, map[string]any{"id": i, "html": "<&>", "nested": map[string]any{"x": []int{}, "y": []int{i}}})
		}
		whole := streamed{Version: 1, Name: &name, Items: items, Notes: []string{"n"}, Total: n}
		if whole.Items == nil {
			whole.Items = []map[string]any{}
		}
		var want, got bytes.Buffer
		if err := output.WriteJSON(&want, whole); err != nil {
			t.Fatal(err)
		}
		s := output.NewJSONStream(&got, "items")
		if err := s.Begin(streamed{Version: 1, Name: &name, Items: []map[string]any{}}); err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			if err := s.Write(it); err != nil {
				t.Fatal(err)
			}
		}
		whole.Items = []map[string]any{}
		if err := s.End(whole); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%d items:\ngot  %s\nwant %s", n, got.String(), want.String())
		}
	}
}

// TestJSONStreamRefusesAChangedHead: End fails when what precedes the array changed.
func TestJSONStreamRefusesAChangedHead(t *testing.T) {
	var got bytes.Buffer
	s := output.NewJSONStream(&got, "items")
	if err := s.Begin(streamed{Version: 1, Items: []map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	if err := s.End(streamed{Version: 2, Items: []map[string]any{}}); err == nil {
		t.Fatal("End accepted a document whose head changed")
	}
}

// TestTableStreamPiped: a piped table written row by row is the table Render writes whole.
func TestTableStreamPiped(t *testing.T) {
	var whole, streamedOut bytes.Buffer
	a := output.NewTablePrinterTo(&whole, output.Layout{})
	b := output.NewTablePrinterTo(&streamedOut, output.Layout{}).StreamPiped()
	for _, tp := range []*output.TablePrinter{a, b} {
		tp.AddHeader("A", "B")
		for i := range 3 {
			tp.AddField(fmt.Sprint(i))
			tp.AddField("x\ty")
			tp.EndRow()
		}
		tp.AddRow("last", "row")
	}
	if streamedOut.Len() == 0 {
		t.Fatal("nothing written before Render: the table is not streamed")
	}
	if err := a.Render(); err != nil {
		t.Fatal(err)
	}
	if err := b.Render(); err != nil {
		t.Fatal(err)
	}
	if whole.String() != streamedOut.String() {
		t.Errorf("streamed %q, whole %q", streamedOut.String(), whole.String())
	}
}
