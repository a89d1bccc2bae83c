package output

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/iostreams"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n--- got\n%s--- want\n%s", name, got, want)
	}
}

type member struct {
	MemberID string `json:"memberId"`
	ClientID string `json:"clientId,omitempty"`
}

type doc struct {
	SchemaVersion   int            `json:"schemaVersion"`
	Group           string         `json:"group"`
	Offset          *int64         `json:"offset"`
	LeaderEpoch     *int32         `json:"leaderEpoch,omitempty"`
	CommitTimestamp *Time          `json:"commitTimestamp"`
	Metadata        string         `json:"metadata"`
	Members         []member       `json:"members"`
	Clusters        map[string]int `json:"clusters"`
}

func sample() doc {
	off := int64(42)
	return doc{
		SchemaVersion: 1, Group: "g<&>", Offset: &off,
		CommitTimestamp: NewTime(time.Date(2025, 3, 4, 5, 6, 7, 891234567, time.FixedZone("X", 3600))),
		Metadata:        "true", // must stay a string in YAML
		Members:         []member{{MemberID: "m-1", ClientID: "c"}, {MemberID: "m-2"}},
		Clusters:        map[string]int{"wus": 2, "scus": 1},
	}
}

func TestJSONAndYAMLGolden(t *testing.T) {
	var j, y bytes.Buffer
	if err := WriteJSON(&j, sample()); err != nil {
		t.Fatal(err)
	}
	if err := WriteYAML(&y, sample()); err != nil {
		t.Fatal(err)
	}
	golden(t, "doc.json", j.Bytes())
	golden(t, "doc.yaml", y.Bytes())
}

func TestNDJSON(t *testing.T) {
	var b bytes.Buffer
	w := NewNDJSONWriter(&b)
	_ = w.Write(map[string]any{"kind": "offset_commit", "offset": 1})
	_ = w.Write(map[string]any{"kind": "group_tombstone", "group": "<g>"})
	golden(t, "records.ndjson", b.Bytes())
}

func tableRows(tp *TablePrinter) {
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
		tp := NewTablePrinterTo(&b, tty)
		tableRows(tp)
		if err := tp.Render(); err != nil {
			t.Fatal(err)
		}
		name := "table.piped"
		if tty {
			name = "table.tty"
		}
		golden(t, name, b.Bytes())
	}
}

func TestResolve(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	tests := []struct {
		spec  Spec
		value string
		tty   bool
		want  Format
		err   bool
	}{
		{StandardSpec, "", true, Table, false},
		{StandardSpec, "", false, Table, false},
		{StandardSpec, "JSON", false, JSON, false},
		{StandardSpec, "yaml", true, YAML, false},
		{StandardSpec, "ndjson", true, "", true},
		{StandardSpec, "xml", true, "", true},
		{StreamingSpec, "", true, Table, false},
		{StreamingSpec, "", false, NDJSON, false},
		{StreamingSpec, "ndjson", true, NDJSON, false},
		{StreamingSpec, "table", false, Table, false},
		{Spec{Allowed: Standard, DefaultTTY: YAML, DefaultPiped: YAML}, "", true, YAML, false},
	}
	for _, tt := range tests {
		ios.SetStdoutTTY(tt.tty)
		got, err := tt.spec.Resolve(tt.value, ios)
		var fe *FormatError
		if tt.err != (err != nil) || (err != nil && !errors.As(err, &fe)) || got != tt.want {
			t.Errorf("Resolve(%q, tty=%v) = %q, %v; want %q", tt.value, tt.tty, got, err, tt.want)
		}
	}
}

func TestPrint(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	if err := Print(ios, Table, sample(), tableRows); err != nil {
		t.Fatal(err)
	}
	if out.String() == "" || bytes.Contains(out.Bytes(), []byte("GROUP")) {
		t.Errorf("piped table has a header or is empty: %q", out)
	}
	out.Reset()
	if err := Print(ios, NDJSON, map[string]int{"a": 1}, nil); err != nil || out.String() != "{\"a\":1}\n" {
		t.Errorf("ndjson %q %v", out, err)
	}
}

func TestTime(t *testing.T) {
	var zero Time
	b, _ := zero.MarshalJSON()
	if string(b) != "null" {
		t.Errorf("zero time %s", b)
	}
	var back Time
	if err := back.UnmarshalJSON([]byte(`"2025-03-04T04:06:07.891Z"`)); err != nil || FormatTime(back.Time) != "2025-03-04T04:06:07.891Z" {
		t.Errorf("round trip %v %v", back, err)
	}
	if NewTime(time.Time{}) != nil {
		t.Error("NewTime(zero) != nil")
	}
}
