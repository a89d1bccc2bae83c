package recordio

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

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
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestSink(t *testing.T) {
	off := int64(5)
	recs := []offsetlog.Record{{Kind: offsetlog.KindOffsetCommit, Group: "g<&>", Topic: "t", Offset: &off}, {Kind: offsetlog.KindPlaceholder}}
	var arr []map[string]any
	if out := write(t, output.JSON, false, recs...); json.Unmarshal([]byte(out), &arr) != nil || len(arr) != 2 || arr[0]["group"] != "g<&>" {
		t.Errorf("json %q", out)
	}
	if out := write(t, output.JSON, false); out != "[]\n" {
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
