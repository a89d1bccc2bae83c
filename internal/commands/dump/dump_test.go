package dump

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/wait"
)

var ts = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

func TestNewCmdDumpFlags(t *testing.T) {
	now := time.Now()
	tests := []struct {
		args  []string
		check func(*Options) bool
		err   string
	}{
		{args: nil, check: func(o *Options) bool {
			return o.Concurrency == 4 && o.Format == output.NDJSON && o.Limit == 0 && !o.Follow && o.NewReader != nil
		}},
		{args: []string{"--partition", "1,3", "--partition", "5", "--group", "G", "--group", "orders*", "--topic", "t1",
			"--kind", "offset_commit,undecodable", "--limit", "10", "--raw", "--strict", "--concurrency", "2", "-o", "table"},
			check: func(o *Options) bool {
				return len(o.Partitions) == 3 && o.Partitions[2] == 5 && len(o.Groups) == 2 &&
					o.Topics[0] == "t1" && len(o.kinds) == 2 && o.Limit == 10 && o.Raw && o.Strict && o.Concurrency == 2 &&
					o.Format == output.Table
			}},
		{args: []string{"--since", "2025-03-04T05:06:07Z", "--follow"}, check: func(o *Options) bool { return o.From.Equal(ts) && o.Follow }},
		// --from, the old spelling of --since, still works.
		{args: []string{"--from", "1h", "--compacted"}, check: func(o *Options) bool {
			return o.Compacted && o.From.Before(now.Add(-59*time.Minute)) && o.From.After(now.Add(-61*time.Minute))
		}},
		{args: []string{"--follow", "--compacted"}, err: "--follow cannot be combined with --compacted"},
		{args: []string{"--since", "yesterday"}, err: "neither an RFC 3339 time"},
		{args: []string{"--since", "-1h"}, err: "must not be negative"},
		{args: []string{"--kind", "commit"}, err: `--kind "commit": valid kinds are`},
		{args: []string{"--partition", "-1"}, err: "must not be negative"},
		{args: []string{"--partition", "x"}, err: "invalid argument"},
		{args: []string{"--concurrency", "0"}, err: "--concurrency must be at least 1"},
		{args: []string{"--limit", "-1"}, err: "--limit must not be negative"},
		{args: []string{"--group", "a[b"}, err: "unterminated ["},
		{args: []string{"-o", "xml"}, err: `invalid output format "xml"`},
		{args: []string{"extra"}, err: `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		got := clitest.ParseArgs(t, NewCmdDump, false, tt.err, tt.args...)
		if got != nil && !tt.check(got) {
			t.Errorf("%v: %+v", tt.args, got)
		}
	}
}

// fakeReader is an in-memory loader.OffsetTopicReader (fakes.MemReader) that can also
// hold hand-made messages; it implements neither AllReader nor Follower.
type fakeReader struct {
	*fakes.MemReader
	extra map[int32][]loader.Message
}

func (f *fakeReader) ReadPartition(ctx context.Context, p int32, fn func(loader.Message) error) error {
	if err := f.MemReader.ReadPartition(ctx, p, fn); err != nil {
		return err
	}
	for _, m := range f.extra[p] {
		if err := fn(m); err != nil {
			return err
		}
	}
	return nil
}

func commit(group, topic string, partition int32, offset int64) kop.OffsetCommit {
	return kop.OffsetCommit{Group: group, Topic: topic, Partition: partition, Offset: offset, CommitTime: ts}
}

// lab returns two clusters: scus with commits of G (partition 7 of 8) and other groups, a
// group record, a tombstone and an undecodable message; wus with only G's first commit.
func lab() (map[string]*fakeReader, []config.Cluster) {
	t1 := "persistent://public/default/t1"
	scus := &fakeReader{MemReader: fakes.NewMemReader(8).Commit(
		commit("G", t1, 0, 100), commit("G", t1, 1, 200), commit("kop-offsets", t1, 0, 5),
		commit("orders-a", "persistent://other/ns/t2", 0, 7), commit("G", t1, 0, 150),
	), extra: map[int32][]loader.Message{}}
	tomb := commit("G", t1, 1, 0)
	tomb.Tombstone = true
	scus.Commit(tomb)
	gk := (&kmsg.GroupMetadataKey{Version: 2, Group: "G"}).AppendTo(nil)
	gv := kmsg.GroupMetadataValue{Version: 1, ProtocolType: "consumer", Generation: 2, Protocol: kmsg.StringPtr("range"),
		Leader: kmsg.StringPtr("m-1"), Members: []kmsg.GroupMetadataValueMember{{MemberID: "m-1", ClientID: "c", ClientHost: "/h", SessionTimeoutMillis: 10000, RebalanceTimeoutMillis: 20000}}}
	scus.extra[7] = []loader.Message{
		{Partition: 7, MessageID: "9:1:7:-1", PublishTime: ts, Key: gk, Value: kop.EncodeBatch(gk, gv.AppendTo(nil), ts)},
		{Partition: 7, MessageID: "9:2:7:-1", PublishTime: ts, Key: []byte("k"), Value: []byte("garbage")},
		{Partition: 7, MessageID: "9:3:7:-1", PublishTime: ts}, // placeholder
	}
	wus := &fakeReader{MemReader: fakes.NewMemReader(8).Commit(commit("G", t1, 0, 100))}
	return map[string]*fakeReader{"scus": scus, "wus": wus}, []config.Cluster{
		{Name: "scus", Tenant: "public", MetadataNamespace: "__kafka", KafkaNamespace: "public/default"},
		{Name: "wus", Tenant: "public", MetadataNamespace: "__kafka", KafkaNamespace: "public/default"},
	}
}

func runDump(t *testing.T, args []string, readers map[string]*fakeReader, clusters []config.Cluster) (string, string, *pulsarx.ReaderOptions, error) {
	t.Helper()
	return runDumpAs(t, "", args, readers, clusters)
}

// runDumpAs is runDump of tenant of a multi-tenant config ("": a config without tenants).
func runDumpAs(t *testing.T, tenant string, args []string, readers map[string]*fakeReader, clusters []config.Cluster) (string, string, *pulsarx.ReaderOptions, error) {
	t.Helper()
	f, s := clitest.NewFactory("x", false)
	var ro pulsarx.ReaderOptions
	var runErr error
	root := clitest.NewTestRoot(f, NewCmdDump(f, func(o *Options) error {
		o.Clusters = func() ([]config.Cluster, error) { return clusters, nil }
		o.NamedTenant = func() (string, error) { return tenant, nil }
		o.NewReader = func(cl config.Cluster, r pulsarx.ReaderOptions) (loader.OffsetTopicReader, func(), error) {
			ro = r
			return readers[cl.Name], nil, nil
		}
		runErr = dumpRun(context.Background(), o)
		return runErr
	}))
	r := clitest.Run(context.Background(), root, s, append([]string{"dump"}, args...)...)
	if !errors.Is(r.Err, runErr) {
		t.Fatalf("%v: parse error %v", args, r.Err)
	}
	return r.Out, r.ErrOut, &ro, r.Err
}

func TestDumpAll(t *testing.T) {
	readers, clusters := lab()
	out, errOut, _, err := runDump(t, []string{"-o", "ndjson"}, readers, clusters)
	if err != nil {
		t.Fatal(err)
	}
	clitest.Golden(t, "testdata/all.ndjson.golden", []byte(out))
	want := "scus: read 9 messages of 8 partitions, wrote 9 records (5 offset_commit, 1 offset_tombstone, 1 group_metadata, 1 placeholder, 1 undecodable)\n" +
		"wus: read 1 messages of 8 partitions, wrote 1 records (1 offset_commit)\n"
	if errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
	for p := int32(0); p < 8; p++ {
		if readers["scus"].Reads[p] != 1 {
			t.Errorf("partition %d read %d times", p, readers["scus"].Reads[p])
		}
	}
}

func TestDumpNamesTheTenant(t *testing.T) {
	// A dump of one tenant of a multi-tenant config names it in every record, in every format
	// (the table without a terminal has no header: the tenant is the first cell).
	for _, format := range []string{"ndjson", "json", "table"} {
		readers, clusters := lab()
		out, _, _, err := runDumpAs(t, "acme", []string{"-o", format}, readers, clusters)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		switch format {
		case "table":
			for line := range strings.Lines(out) {
				n++
				if !strings.HasPrefix(line, "acme\t") {
					t.Errorf("table: a row without its tenant: %q", line)
				}
			}
		case "ndjson":
			for line := range strings.Lines(out) {
				n++
				if !strings.HasPrefix(line, `{"tenant":"acme","cluster":`) {
					t.Errorf("ndjson: a record without its tenant: %s", line)
				}
			}
		case "json":
			var doc struct{ Records []map[string]any }
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("json: %v:\n%s", err, out)
			}
			for _, r := range doc.Records {
				n++
				if r["tenant"] != "acme" {
					t.Errorf("json: a record without its tenant: %v", r)
				}
			}
		}
		if n != 10 {
			t.Errorf("%s: %d records, want the 10 of the lab:\n%s", format, n, out)
		}
	}
	// Without tenants the records are what they always were.
	readers, clusters := lab()
	out, _, _, _ := runDumpAs(t, "", []string{"-o", "ndjson"}, readers, clusters)
	if strings.Contains(out, "tenant") {
		t.Errorf("a config without tenants names one: %s", out)
	}
}

func TestDumpGroupReadsOnlyItsPartition(t *testing.T) {
	readers, clusters := lab()
	readers["wus"].NumPartitions = 50 // the real count decides the partition: G is in 21 of 50
	readers["wus"].Commit(commit("G", "persistent://public/default/t1", 0, 100))
	out, _, _, err := runDump(t, []string{"--group", "G", "--kind", "offset_commit", "-o", "table"}, readers, clusters)
	if err != nil {
		t.Fatal(err)
	}
	clitest.Golden(t, "testdata/group.table.golden", []byte(out))
	for p, n := range readers["scus"].Reads {
		if p != 7 && n > 0 {
			t.Errorf("scus: partition %d read", p)
		}
	}
	if readers["wus"].Reads[21] != 1 || len(readers["wus"].Reads) != 1 {
		t.Errorf("wus reads %v, want only partition 21", readers["wus"].Reads)
	}
	// A glob reads every partition.
	readers, clusters = lab()
	out, _, _, _ = runDump(t, []string{"--group", "kop-*", "--cluster", "scus"}, readers, clusters[:1])
	if len(readers["scus"].Reads) != 8 || strings.Count(out, "\n") != 2 || !strings.Contains(out, `"group":"kop-offsets"`) {
		t.Errorf("glob: reads %v out %s", readers["scus"].Reads, out)
	}
}

func TestDumpFilters(t *testing.T) {
	readers, clusters := lab()
	tests := []struct {
		args []string
		want int
	}{
		{[]string{"--topic", "t1"}, 7},                // scus: 4 commits, 1 tombstone, the undecodable record; wus: 1
		{[]string{"--topic", "public/default/t1"}, 7}, // spellings normalise alike
		{[]string{"--topic", "other/ns/t2"}, 2},       // + the undecodable record
		{[]string{"--topic", "t?"}, 7},                // a glob against the short name: t1 only
		{[]string{"--topic", "*/t2"}, 2},              // and against the full name
		{[]string{"--group", "orders-*", "--kind", "offset_commit"}, 1},
		{[]string{"--topic", "persistent://other/ns/t2", "--kind", "offset_commit"}, 1},
		{[]string{"--kind", "group_metadata", "--kind", "placeholder"}, 2},
		{[]string{"--partition", "7", "--kind", "undecodable"}, 1},
		{[]string{"--limit", "3"}, 3},
	}
	for _, tt := range tests {
		out, _, _, err := runDump(t, tt.args, readers, clusters)
		if err != nil || strings.Count(out, "\n") != tt.want {
			t.Errorf("%v: %v, %d records, want %d:\n%s", tt.args, err, strings.Count(out, "\n"), tt.want, out)
		}
	}
}

func TestDumpPartitionOutOfRange(t *testing.T) {
	readers, clusters := lab()
	_, _, _, err := runDump(t, []string{"--partition", "8"}, readers, clusters)
	if cmdutil.ExitCode(err) != 2 || !strings.Contains(err.Error(), "cluster scus: --partition 8: the offsets topic has 8 partitions") {
		t.Errorf("%v", err)
	}
}

func TestDumpCompacted(t *testing.T) {
	readers, clusters := lab()
	out, errOut, ro, err := runDump(t, []string{"--compacted", "-o", "json", "--since", "2025-03-04T05:06:07Z"}, readers, clusters)
	if err != nil {
		t.Fatal(err)
	}
	if !ro.Compacted || !ro.From.Equal(ts) {
		t.Errorf("reader options %+v", ro)
	}
	clitest.Golden(t, "testdata/compacted.json.golden", []byte(out))
	var doc struct {
		SchemaVersion int      `json:"schemaVersion"`
		Records       []Record `json:"records"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.SchemaVersion != 1 {
		t.Fatalf("not a document with schemaVersion 1 (%v):\n%s", err, out)
	}
	recs := doc.Records
	// scus: undecodable (as met), then by partition and group: orders-a; group G, its one
	// live offset (t1/0 = 150: t1/1 is deleted), kop-offsets; wus: G t1/0.
	var got []string
	for _, r := range recs {
		s := r.Cluster + " " + string(r.Kind) + " " + r.Group
		if r.Offset != nil {
			s += " " + r.Topic + " " + strings.TrimSpace(jsonNum(*r.Offset))
		}
		got = append(got, s)
	}
	want := []string{
		"scus undecodable ",
		"scus offset_commit orders-a persistent://other/ns/t2 7", // partition 1
		"scus group_metadata G",                                  // partition 7
		"scus offset_commit G persistent://public/default/t1 150",
		"scus offset_commit kop-offsets persistent://public/default/t1 5",
		"wus offset_commit G persistent://public/default/t1 100",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(errOut, "scus: read 9 messages of 8 partitions, wrote 5 records (3 offset_commit, 1 group_metadata, 1 undecodable)") {
		t.Errorf("stderr %q", errOut)
	}
}

func jsonNum(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestDumpRawDecodesAgain(t *testing.T) {
	readers, clusters := lab()
	out, _, _, err := runDump(t, []string{"--raw", "--cluster", "scus"}, readers, clusters[:1])
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		recs, _ := offsetlog.Decode(r.Key, r.Value)
		if len(recs) != 1 || recs[0].Kind != r.Kind || recs[0].Group != r.Group {
			t.Errorf("%s: decodes to %+v", line, recs)
		}
	}
}

// --compacted --raw prints each live record with the key and value of the message that last
// wrote it, which decodes to a record of the same key.
func TestDumpCompactedRaw(t *testing.T) {
	readers, clusters := lab()
	out, _, _, err := runDump(t, []string{"--compacted", "--raw", "--cluster", "scus", "--kind", "offset_commit,group_metadata"}, readers, clusters[:1])
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d records:\n%s", len(lines), out)
	}
	for _, line := range lines {
		var r Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		recs, _ := offsetlog.Decode(r.Key, r.Value)
		found := false
		for _, d := range recs {
			found = found || d.Kind == r.Kind && d.Group == r.Group && d.Topic == r.Topic &&
				(d.Offset == nil) == (r.Offset == nil) && (d.Offset == nil || *d.Offset == *r.Offset)
		}
		if !found || r.MessageID == "" {
			t.Errorf("%s: its message decodes to %+v", line, recs)
		}
	}
}

func TestDumpStrictAndUnreachable(t *testing.T) {
	readers, clusters := lab()
	_, _, _, err := runDump(t, []string{"--strict"}, readers, clusters)
	if cmdutil.ExitCode(err) != 1 || !strings.Contains(err.Error(), "1 undecodable") {
		t.Errorf("strict: %v", err)
	}
	// --kind hides the undecodable record; --strict still counts it.
	_, _, _, err = runDump(t, []string{"--strict", "--kind", "offset_commit"}, readers, clusters)
	if cmdutil.ExitCode(err) != 1 {
		t.Errorf("strict with kind: %v", err)
	}

	readers["scus"].Err = errors.New("cluster scus: get partitioned metadata: unreachable: connection refused")
	out, errOut, _, err := runDump(t, []string{"--strict"}, readers, clusters)
	if cmdutil.ExitCode(err) != 3 || !strings.Contains(err.Error(), "1 of 2 clusters: scus") {
		t.Errorf("unreachable: %v", err)
	}
	if !strings.Contains(errOut, "error: cluster scus: pulsar: connection refused\n  fix: start its brokers") || !strings.Contains(out, `"cluster":"wus"`) {
		t.Errorf("other cluster must be dumped: out %q err %q", out, errOut)
	}
}

// followReader implements Follower: it sends its messages, then waits for cancellation.
type followReader struct {
	*fakes.MemReader
}

func (f *followReader) FollowAll(ctx context.Context, parts []int32, fn func(loader.Message) error) error {
	for _, p := range parts {
		if err := f.ReadPartition(ctx, p, fn); err != nil {
			return err
		}
	}
	<-ctx.Done()
	return nil
}

func TestDumpFollowStopsAtLimit(t *testing.T) {
	t1 := "persistent://public/default/t1"
	newReader := func() *followReader {
		return &followReader{MemReader: fakes.NewMemReader(4).Commit(commit("G", t1, 0, 1), commit("G", t1, 1, 2), commit("H", t1, 0, 3))}
	}
	ios, _, out, _ := iostreams.Test()
	opts := &Options{IO: ios, Format: output.NDJSON, Follow: true, Limit: 2, Concurrency: 1,
		Clusters: func() ([]config.Cluster, error) { return []config.Cluster{{Name: "a"}, {Name: "b"}}, nil },
		NewReader: func(config.Cluster, pulsarx.ReaderOptions) (loader.OffsetTopicReader, func(), error) {
			return newReader(), nil, nil
		}}
	done := make(chan error, 1)
	go func() { done <- dumpRun(context.Background(), opts) }()
	if err := wait.Await(t, done, 5*time.Second, "--follow --limit did not stop"); err != nil || strings.Count(out.String(), "\n") != 2 {
		t.Errorf("%v %q", err, out)
	}
	// Without a limit, cancellation ends it cleanly.
	ctx, cancel := context.WithCancel(context.Background())
	opts.Limit = 0
	go func() { done <- dumpRun(ctx, opts) }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("cancelled follow: %v", err)
	}
}
