package output_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
)

type member struct {
	MemberID string `json:"memberId"`
	ClientID string `json:"clientId,omitempty"`
}

type doc struct {
	SchemaVersion   int            `json:"schemaVersion"`
	Group           string         `json:"group"`
	Offset          *int64         `json:"offset"`
	LeaderEpoch     *int32         `json:"leaderEpoch,omitempty"`
	CommitTimestamp *output.Time   `json:"commitTimestamp"`
	Metadata        string         `json:"metadata"`
	Members         []member       `json:"members"`
	Clusters        map[string]int `json:"clusters"`
}

func sample() doc {
	off := int64(42)
	return doc{
		SchemaVersion: 1, Group: "g<&>", Offset: &off,
		CommitTimestamp: output.NewTime(time.Date(2025, 3, 4, 5, 6, 7, 891234567, time.FixedZone("X", 3600))),
		Metadata:        "true", // must stay a string in YAML
		Members:         []member{{MemberID: "m-1", ClientID: "c"}, {MemberID: "m-2"}},
		Clusters:        map[string]int{"wus": 2, "scus": 1},
	}
}

func TestJSONAndYAMLGolden(t *testing.T) {
	var j, y bytes.Buffer
	if err := output.WriteJSON(&j, sample()); err != nil {
		t.Fatal(err)
	}
	if err := output.WriteYAML(&y, sample()); err != nil {
		t.Fatal(err)
	}
	clitest.Golden(t, "testdata/doc.json.golden", j.Bytes())
	clitest.Golden(t, "testdata/doc.yaml.golden", y.Bytes())
}

func TestNDJSON(t *testing.T) {
	var b bytes.Buffer
	w := output.NewNDJSONWriter(&b)
	_ = w.Write(map[string]any{"kind": "offset_commit", "offset": 1})
	_ = w.Write(map[string]any{"kind": "group_tombstone", "group": "<g>"})
	clitest.Golden(t, "testdata/records.ndjson.golden", b.Bytes())
}

func tableRows(tp *output.TablePrinter) {
	tp.AddHeader("GROUP", "TOPIC", "PARTITION", "STATUS")
	tp.AddRow("orders-consumer", "orders", "0", "ok")
	tp.AddField("g")
	tp.AddField("a\ttab")
	tp.AddField("12")
	tp.AddField("stale_cache")
	tp.EndRow()
	tp.AddRow("ünïcode", "", "3", "missing")
}

func TestTableGolden(t *testing.T) {
	for _, tty := range []bool{true, false} {
		var b bytes.Buffer
		tp := output.NewTablePrinterTo(&b, output.Layout{TTY: tty})
		tableRows(tp)
		if err := tp.Render(); err != nil {
			t.Fatal(err)
		}
		name := "table.piped"
		if tty {
			name = "table.tty"
		}
		clitest.Golden(t, "testdata/"+name+".golden", b.Bytes())
	}
}

func TestResolve(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	tests := []struct {
		spec  output.Spec
		value string
		tty   bool
		want  output.Format
		err   bool
	}{
		{output.StandardSpec, "", true, output.Table, false},
		{output.StandardSpec, "", false, output.Table, false},
		{output.StandardSpec, "JSON", false, output.JSON, false},
		{output.StandardSpec, "yaml", true, output.YAML, false},
		{output.StandardSpec, "ndjson", true, "", true},
		{output.StandardSpec, "xml", true, "", true},
		{output.StreamingSpec, "", true, output.Table, false},
		{output.StreamingSpec, "", false, output.NDJSON, false},
		{output.StreamingSpec, "ndjson", true, output.NDJSON, false},
		{output.StreamingSpec, "table", false, output.Table, false},
		{output.Spec{Allowed: output.Standard, DefaultTTY: output.YAML, DefaultPiped: output.YAML}, "", true, output.YAML, false},
	}
	for _, tt := range tests {
		ios.SetStdoutTTY(tt.tty)
		got, err := tt.spec.Resolve(tt.value, ios)
		var fe *output.FormatError
		if tt.err != (err != nil) || (err != nil && !errors.As(err, &fe)) || got != tt.want {
			t.Errorf("Resolve(%q, tty=%v) = %q, %v; want %q", tt.value, tt.tty, got, err, tt.want)
		}
	}
}

func TestPrint(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	if err := output.Print(ios, output.Table, sample(), tableRows); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "GROUP\tTOPIC\tPARTITION\tSTATUS\norders-consumer\t") {
		t.Errorf("piped table: want its header line, then tab-separated rows: %q", out)
	}
	out.Reset()
	if err := output.Print(ios, output.NDJSON, map[string]int{"a": 1}, nil); err != nil || out.String() != "{\"a\":1}\n" {
		t.Errorf("ndjson %q %v", out, err)
	}
}

func TestTime(t *testing.T) {
	var zero output.Time
	b, _ := zero.MarshalJSON()
	if string(b) != "null" {
		t.Errorf("zero time %s", b)
	}
	var back output.Time
	if err := back.UnmarshalJSON([]byte(`"2025-03-04T04:06:07.891Z"`)); err != nil || output.FormatTime(back.Time) != "2025-03-04T04:06:07.891Z" {
		t.Errorf("round trip %v %v", back, err)
	}
	if output.NewTime(time.Time{}) != nil {
		t.Error("NewTime(zero) != nil")
	}
}
