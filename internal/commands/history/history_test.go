package history

import (
	"encoding/json"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/audit"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
)

func TestNewCmdHistoryFlags(t *testing.T) {
	tests := []clitest.FlagCase[Options]{
		{Args: []string{"--audit-file", "a.jsonl"}, Want: Options{File: "a.jsonl", Named: true}},
		// --file, the old spelling of --audit-file, still works and names the trail.
		{Args: []string{"--file", "a.jsonl"}, Want: Options{File: "a.jsonl", Named: true}},
		{Args: []string{"--audit-file", "a", "--cluster", "wus,scus", "--group", "o-*", "--since", "24h"},
			Want: Options{File: "a", Named: true, Clusters: []string{"wus", "scus"}, Groups: []string{"o-*"}, Since: "24h"}},
		{Args: []string{"--audit-file", "a", "--since", "2026-12-01T00:00:00Z"}, Want: Options{File: "a", Named: true, Since: "2026-12-01T00:00:00Z"}},
		{Args: []string{"--since", "yesterday"}, Err: "neither an RFC 3339 time"},
		{Args: []string{"--since", "-1h"}, Err: "must not be negative"},
		{Args: []string{"-o", "ndjson"}, Err: "invalid output format"},
		{Args: []string{"x"}, Err: `unexpected argument "x"`},
	}
	clitest.CheckFlags(t, NewCmdHistory, tests, func(got, want *Options) bool {
		return got.File == want.File && got.Named == want.Named && strings.Join(got.Clusters, ",") == strings.Join(want.Clusters, ",") &&
			strings.Join(got.Groups, ",") == strings.Join(want.Groups, ",") && got.Since == want.Since
	})
}

var now = time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)

func trail() string {
	recs := []audit.Record{
		{Time: output.Time{Time: now.Add(-48 * time.Hour)}, Cluster: "wus", Action: audit.ActionUnload, Namespace: "public/__kafka",
			Bundle: "0x00000000_0x40000000", Groups: []string{"orders", "a", "b", "c"}, Result: audit.ResultOK,
			Who: audit.Who{Host: "jump-1", User: "ops", PID: 42, Command: "kop-offsets repair --yes"}},
		{Time: output.Time{Time: now.Add(-time.Hour)}, Cluster: "wus", Action: audit.ActionLookup,
			Topic: "persistent://public/__kafka/__consumer_offsets-partition-1", Groups: []string{"orders"}, Result: audit.ResultOK,
			Owner: "pulsar://b1:6650", Who: audit.Who{Host: "pod-7", User: "nobody", PID: 1, Command: "kop-offsets watch --repair"}},
		{Time: output.Time{Time: now.Add(-time.Minute)}, Cluster: "scus", Action: audit.ActionUnload, Namespace: "public/__kafka",
			Bundle: "0x40000000_0x80000000", Groups: []string{"billing"}, Result: audit.ResultError, Error: "503",
			Who: audit.Who{Host: "pod-7", User: "nobody", PID: 1, Command: "kop-offsets watch --repair"}},
	}
	var b strings.Builder
	for _, r := range recs {
		j, _ := json.Marshal(r)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

func run(t *testing.T, format output.Format, files fstest.MapFS, mod func(*Options)) (clitest.Streams, error) {
	t.Helper()
	f, s := clitest.NewFactory("x", false)
	opts := &Options{IO: f.IOStreams, Format: format, Open: files.Open, Now: func() time.Time { return now }, File: "audit.jsonl"}
	if mod != nil {
		mod(opts)
	}
	return s, historyRun(opts)
}

func TestHistoryFilters(t *testing.T) {
	files := fstest.MapFS{"audit.jsonl": {Data: []byte(trail())}}
	for name, tc := range map[string]struct {
		mod  func(*Options)
		want int
	}{
		"all":     {nil, 3},
		"cluster": {func(o *Options) { o.Clusters = []string{"wus"} }, 2},
		"group":   {func(o *Options) { o.Groups = []string{"ord*"} }, 2},
		"since":   {func(o *Options) { o.Since = "2h" }, 2},
		"time":    {func(o *Options) { o.Since = "2026-12-01T23:30:00Z" }, 1},
		"none":    {func(o *Options) { o.Clusters = []string{"east"} }, 0},
	} {
		s, err := run(t, output.JSON, files, tc.mod)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var doc Document
		if err := json.Unmarshal(s.Out.Bytes(), &doc); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, s.Out)
		}
		if doc.SchemaVersion != 1 || len(doc.Records) != tc.want || doc.Records == nil {
			t.Errorf("%s: %d records, want %d", name, len(doc.Records), tc.want)
		}
	}
}

func TestHistoryTable(t *testing.T) {
	s, err := run(t, output.Table, fstest.MapFS{"audit.jsonl": {Data: []byte(trail())}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(s.Out.String()), "\n")
	if len(lines) != 4 || lines[0] != "TIME\tCLUSTER\tACTION\tTARGET\tGROUPS\tRESULT\tWHO\tCOMMAND" { // piped: the header, then tab-separated rows
		t.Fatalf("table:\n%s", s.Out)
	}
	lines = lines[1:]
	for i, want := range []string{
		"2026-11-30T00:00:00.000Z\twus\tunload\tpublic/__kafka/0x00000000_0x40000000\torders,a,b +1\tok\tops@jump-1 pid 42\tkop-offsets repair --yes",
		"ok (pulsar://b1:6650)\tnobody@pod-7 pid 1",
		"\terror: 503\t",
	} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("row %d %q lacks %q", i, lines[i], want)
		}
	}
}

func TestHistoryWithoutTrail(t *testing.T) {
	s, err := run(t, output.JSON, fstest.MapFS{}, nil)
	if err != nil || !strings.Contains(s.ErrOut.String(), "no audit trail at audit.jsonl") || !strings.Contains(s.Out.String(), `"records": []`) {
		t.Errorf("err %v, stderr %q, stdout %q", err, s.ErrOut, s.Out)
	}
}

// A trail --audit-file names that does not exist is a usage error (2), not an empty history: the
// operator asked for that file.
func TestHistoryNamedTrailMissing(t *testing.T) {
	s, err := run(t, output.JSON, fstest.MapFS{}, func(o *Options) { o.Named = true })
	if cmdutil.OutcomeOf(err) != outcome.Usage || !strings.Contains(err.Error(), "audit.jsonl does not exist (--audit-file)") {
		t.Errorf("err %v (outcome %d)", err, cmdutil.OutcomeOf(err))
	}
	if s.Out.Len() != 0 {
		t.Errorf("stdout %q, want nothing", s.Out)
	}
}

func TestHistoryBadTrail(t *testing.T) {
	_, err := run(t, output.Table, fstest.MapFS{"audit.jsonl": {Data: []byte("garbage\n")}}, nil)
	if cmdutil.OutcomeOf(err) != outcome.Usage || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("err %v", err)
	}
	_, err = run(t, output.Table, fstest.MapFS{"audit.jsonl": {Mode: fs.ModeDir}}, nil)
	if err == nil {
		t.Error("a directory read as a trail")
	}
}

func TestHistoryTableSyncRecords(t *testing.T) {
	who := audit.Who{Host: "pod-8", User: "nobody", PID: 1, Command: "kop-offsets watch --sync"}
	var b strings.Builder
	for _, r := range []audit.Record{
		{Time: output.Time{Time: now.Add(-2 * time.Minute)}, Cluster: "wus", Action: audit.ActionCommit, Groups: []string{"orders"}, Result: audit.ResultOK, Who: who,
			Offsets: []audit.Offset{{Group: "orders", Topic: "t", Partition: 3, Offset: 5700, Metadata: "kop-offsets-sync:from=scus,source=6000|"}, {Group: "orders", Topic: "t", Partition: 4, Offset: 1}}},
		{Time: output.Time{Time: now.Add(-time.Minute)}, Cluster: "wus", Action: audit.ActionDelete, Groups: []string{"orders"}, Result: audit.ResultOK, Who: who,
			Offsets: []audit.Offset{{Group: "orders", Topic: "u", Partition: 0, Offset: -1}}},
		{Time: output.Time{Time: now.Add(-time.Second)}, Cluster: "wus", Action: audit.ActionDeleteGroup, Groups: []string{"gone"}, Result: audit.ResultOK, Who: who},
	} {
		j, _ := json.Marshal(r)
		b.Write(j)
		b.WriteByte('\n')
	}
	s, err := run(t, output.Table, fstest.MapFS{"audit.jsonl": {Data: []byte(b.String())}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(s.Out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("table:\n%s", s.Out)
	}
	lines = lines[1:] // the header
	for i, want := range []string{"\twus\tcommit\tt[3]=5700 +1\torders\tok\t", "\twus\tdelete\tu[0]\torders\tok\t", "\twus\tdelete-group\tthe group and its offsets\tgone\tok\t"} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("row %d %q lacks %q", i, lines[i], want)
		}
	}
}
