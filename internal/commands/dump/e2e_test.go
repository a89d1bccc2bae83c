//go:build e2e

package dump_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/commands/root"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
)

func TestMain(m *testing.M) { labtest.Main(m) }

// run executes kop-offsets with args against the lab and returns stdout, stderr and the exit code.
func run(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	f, s := clitest.NewFactory("e2e", false)
	s.In.WriteString(stdin)
	r := clitest.Run(context.Background(), root.NewCmdRoot(f), s, args...)
	return r.Out, r.ErrOut, r.Code
}

type record struct {
	Cluster          string          `json:"cluster"`
	OffsetsPartition int32           `json:"offsetsPartition"`
	MessageID        string          `json:"messageId"`
	PublishTime      *string         `json:"publishTime"`
	Kind             offsetlog.Kind  `json:"kind"`
	Group            string          `json:"group"`
	Topic            string          `json:"topic"`
	Partition        int32           `json:"partition"`
	Offset           int64           `json:"offset"`
	CommitTimestamp  string          `json:"commitTimestamp"`
	Key, Value       json.RawMessage `json:"-"`
}

func parse(t *testing.T, ndjson string) []record {
	t.Helper()
	var out []record
	for _, line := range strings.Split(strings.TrimSpace(ndjson), "\n") {
		if line == "" {
			continue
		}
		var r record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		out = append(out, r)
	}
	return out
}

// TestE2EDumpReplicatedCommits writes commits of group G on scus as KoP would (kopcommit, KoP
// being unavailable in the lab), and dumps them on both clusters once replicated.
func TestE2EDumpReplicatedCommits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	l := labtest.Lab(t)
	cfg := "--config=" + l.ConfigPath
	w := labtest.Writer(t, l.Cluster("scus"))

	const group = "G"
	wantPart := loader.PartitionFor(group, lab.OffsetsTopicPartitions)
	topic := "persistent://public/default/" + labtest.Name("kop-offsets-e2e-dump")
	commitTime := time.Now().UTC().Truncate(time.Millisecond)
	for i := int32(0); i < 3; i++ {
		p, _, err := w.Commit(ctx, kop.OffsetCommit{Group: group, Topic: topic, Partition: i, Offset: 10900 + int64(i), CommitTime: commitTime})
		if err != nil || p != wantPart {
			t.Fatalf("commit: partition %d, %v", p, err)
		}
	}

	// Both clusters, only G's partition; wait for the replicator to bring them to wus.
	var recs []record
	deadline := time.Now().Add(90 * time.Second)
	for {
		start := time.Now()
		out, errOut, code := run(t, "", cfg, "dump", "--group", group, "--topic", topic, "-o", "ndjson")
		if code != 0 {
			t.Fatalf("dump: exit %d: %s", code, errOut)
		}
		recs = parse(t, out)
		t.Logf("dump --group G: %d records in %v", len(recs), time.Since(start))
		if len(recs) == 6 || time.Now().After(deadline) {
			break
		}
		time.Sleep(2 * time.Second)
	}
	byCluster := map[string][]record{}
	for _, r := range recs {
		byCluster[r.Cluster] = append(byCluster[r.Cluster], r)
	}
	for _, c := range []string{"scus", "wus"} {
		rs := byCluster[c]
		if len(rs) != 3 {
			t.Errorf("%s: %d records, want 3: %+v", c, len(rs), rs)
			continue
		}
		for i, r := range rs {
			if r.Kind != offsetlog.KindOffsetCommit || r.Group != group || r.Topic != topic || r.Partition != int32(i) ||
				r.Offset != 10900+int64(i) || r.OffsetsPartition != wantPart || r.MessageID == "" || r.PublishTime == nil ||
				r.CommitTimestamp != commitTime.Format("2006-01-02T15:04:05.000Z") {
				t.Errorf("%s record %d: %+v", c, i, r)
			}
		}
	}

	// dump --raw | decode --input -: the same records again, offline.
	raw, errOut, code := run(t, "", cfg, "dump", "--cluster", "wus", "--group", group, "--topic", topic, "--raw", "-o", "ndjson")
	if code != 0 {
		t.Fatalf("dump --raw: exit %d: %s", code, errOut)
	}
	dec, errOut, code := run(t, raw, "decode", "--input", "-", "--strict", "-o", "ndjson")
	if code != 0 {
		t.Fatalf("decode: exit %d: %s", code, errOut)
	}
	a, b := parse(t, raw), parse(t, dec)
	if len(a) != 3 || len(b) != 3 {
		t.Fatalf("round trip: %d raw, %d decoded", len(a), len(b))
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Kind != y.Kind || x.Group != y.Group || x.Topic != y.Topic || x.Partition != y.Partition ||
			x.Offset != y.Offset || x.CommitTimestamp != y.CommitTimestamp {
			t.Errorf("round trip %d: %+v != %+v", i, x, y)
		}
	}
	if !bytes.Contains([]byte(dec), []byte(`"line":3`)) {
		t.Errorf("decode lines: %s", dec)
	}

	// --compacted: the live state (one offset per topic partition) on both clusters.
	out, errOut, code := run(t, "", cfg, "dump", "--compacted", "--group", group, "--topic", topic, "-o", "ndjson")
	if code != 0 {
		t.Fatalf("dump --compacted: exit %d: %s", code, errOut)
	}
	if live := parse(t, out); len(live) != 6 {
		t.Errorf("compacted: %d records, want 6: %s", len(live), out)
	}
	// An unreachable cluster: its error, the other cluster's records, exit 3.
	_, errOut, code = run(t, "", "--admin-url", "http://127.0.0.1:1", "--service-url", "pulsar://127.0.0.1:1", "--timeout", "3s", "dump", "--partition", "0")
	if code != 3 || !strings.Contains(errOut, "cluster 127.0.0.1:1") {
		t.Errorf("unreachable: exit %d, stderr %q", code, errOut)
	}
}
