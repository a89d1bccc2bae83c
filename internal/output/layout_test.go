package output_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/output"
)

// table renders n rows of two columns in layout l, streamed or not.
func table(t *testing.T, l output.Layout, n int, stream bool) string {
	t.Helper()
	var b bytes.Buffer
	tp := output.NewTablePrinterTo(&b, l)
	if stream {
		tp.StreamPiped()
	}
	tp.AddHeader("GROUP", "OFFSET")
	for i := range n {
		tp.AddRow(fmt.Sprintf("g%d", i), fmt.Sprint(i*10))
	}
	if err := tp.Render(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The one rule of -o table: a header line on a terminal and piped, --no-headers drops it.
func TestLayoutHeaders(t *testing.T) {
	for _, tc := range []struct {
		l    output.Layout
		want string
	}{
		{output.Layout{TTY: true}, "GROUP  OFFSET\ng0     0\ng1     10\n"},
		{output.Layout{TTY: true, NoHeaders: true}, "g0  0\ng1  10\n"},
		{output.Layout{}, "GROUP\tOFFSET\ng0\t0\ng1\t10\n"},
		{output.Layout{NoHeaders: true}, "g0\t0\ng1\t10\n"},
	} {
		for _, stream := range []bool{false, true} {
			if got := table(t, tc.l, 2, stream); got != tc.want {
				t.Errorf("%+v stream=%v:\n%q\nwant\n%q", tc.l, stream, got, tc.want)
			}
		}
	}
	// A piped table of no rows still says what its columns are (a script reads the header).
	if got := table(t, output.Layout{}, 0, true); got != "GROUP\tOFFSET\n" {
		t.Errorf("empty piped table %q", got)
	}
}

// A cut table shows MaxRows rows and one trailer line; --show-all every row.
func TestLayoutCut(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	cut := output.StdoutLayout(ios).Cut(false)
	for _, stream := range []bool{false, true} {
		got := table(t, cut, 25, stream)
		lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		if len(lines) != 1+output.MaxRows+1 || lines[output.MaxRows] != "g9\t90" ||
			lines[len(lines)-1] != "... and 15 more (all of them in -o json, or with --show-all)" {
			t.Errorf("cut, stream=%v:\n%s", stream, got)
		}
	}
	if got := table(t, cut, output.MaxRows, false); strings.Contains(got, "more") {
		t.Errorf("a table of exactly MaxRows rows has a trailer:\n%s", got)
	}
	all := output.StdoutLayout(ios).Cut(true)
	if got := table(t, all, 25, false); strings.Count(got, "\n") != 26 || strings.Contains(got, "more") {
		t.Errorf("--show-all:\n%s", got)
	}
	ios.SetStdoutTTY(true)
	got := table(t, output.StdoutLayout(ios).Cut(false), 12, false)
	if !strings.HasPrefix(got, "GROUP  OFFSET\n") || !strings.HasSuffix(got, "g9     90\n... and 2 more (all of them in -o json, or with --show-all)\n") {
		t.Errorf("cut on a terminal:\n%s", got)
	}
}

func TestDash(t *testing.T) {
	if got := output.Dash(""); got != "-" {
		t.Errorf("Dash(\"\") = %q, want -", got)
	}
	if got := output.Dash("x"); got != "x" {
		t.Errorf("Dash(x) = %q", got)
	}
}
