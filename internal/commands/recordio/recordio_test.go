package recordio

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/explain"
	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
	"github.com/kop-offsets/kop-offsets/internal/output"
)

func rows(v any) []string { return RecordCells(v.(*offsetlog.Record)) }

func write(t *testing.T, f output.Format, tty bool, recs ...offsetlog.Record) string {
	t.Helper()
	var b bytes.Buffer
	s := NewSink(&b, f, tty, RecordColumns, rows)
	for i := range recs {
		if err := s.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(nil); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestSinkJSONDocument: the streamed document is byte for byte what output.WriteJSON writes
// for the same document held whole, errors included.
func TestSinkJSONDocument(t *testing.T) {
	off := int64(5)
	recs := []offsetlog.Record{{Kind: offsetlog.KindOffsetCommit, Group: "g<&>", Topic: "t", Offset: &off}, {Kind: offsetlog.KindPlaceholder}}
	probs := []explain.Problem{{Cluster: "scus", Cause: "a <cause>", Error: "cluster scus: a <cause>"}}
	var got bytes.Buffer
	s := NewSink(&got, output.JSON, false, RecordColumns, rows)
	for i := range recs {
		if err := s.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(probs); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	doc := struct {
		SchemaVersion int                `json:"schemaVersion"`
		Records       []offsetlog.Record `json:"records"`
		Errors        []explain.Problem  `json:"errors"`
	}{1, recs, probs}
	if err := output.WriteJSON(&want, doc); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("streamed\n%s\nwant\n%s", got.String(), want.String())
	}
}

func TestSink(t *testing.T) {
	off := int64(5)
	recs := []offsetlog.Record{{Kind: offsetlog.KindOffsetCommit, Group: "g<&>", Topic: "t", Offset: &off}, {Kind: offsetlog.KindPlaceholder}}
	var doc struct {
		SchemaVersion int              `json:"schemaVersion"`
		Records       []map[string]any `json:"records"`
		Errors        []any            `json:"errors"`
	}
	if out := write(t, output.JSON, false, recs...); json.Unmarshal([]byte(out), &doc) != nil || doc.SchemaVersion != 1 ||
		len(doc.Records) != 2 || doc.Records[0]["group"] != "g<&>" || doc.Errors == nil {
		t.Errorf("json %q", out)
	}
	if out := write(t, output.JSON, false); out != "{\n  \"schemaVersion\": 1,\n  \"records\": [],\n  \"errors\": []\n}\n" {
		t.Errorf("empty json %q", out)
	}
	if out := write(t, output.YAML, false, recs...); out != "- kind: offset_commit\n  group: g<&>\n  topic: t\n  offset: 5\n- kind: placeholder\n" {
		t.Errorf("yaml %q", out)
	}
	if out := write(t, output.YAML, false); out != "[]\n" {
		t.Errorf("empty yaml %q", out)
	}
	if out := write(t, output.NDJSON, false, recs...); strings.Count(out, "\n") != 2 || !strings.HasPrefix(out, `{"kind":"offset_commit","group":"g<&>"`) {
		t.Errorf("ndjson %q", out)
	}
	if out := write(t, output.Table, false, recs...); out != "offset_commit\tg<&>\tt\t-\t5\t-\t-\nplaceholder\t-\t-\t-\t-\t-\t-\n" {
		t.Errorf("piped table %q", out)
	}
	want := "KIND           GROUP  TOPIC  PARTITION  OFFSET  COMMITTED  DETAIL\n" +
		"offset_commit  g<&>   t      -          5       -          -\n" +
		"placeholder    -      -      -          -       -          -\n"
	if out := write(t, output.Table, true, recs...); out != want {
		t.Errorf("tty table\n%s\nwant\n%s", out, want)
	}
	if out := write(t, output.Table, true); !strings.HasPrefix(out, "KIND  GROUP") {
		t.Errorf("empty tty table %q", out)
	}
}

func TestSummary(t *testing.T) {
	var s Summary
	s.Messages = 3
	s.Add(offsetlog.KindOffsetCommit)
	s.Add(offsetlog.KindUndecodable)
	s.Add(offsetlog.KindOffsetCommit)
	if s.String() != "3 messages, 3 records: 2 offset_commit, 1 undecodable" || s.Undecodable() != 1 {
		t.Errorf("%s", s.String())
	}
}
