//go:build three

// The three-cluster suite: the user's story with the offsets topic replicated in a full mesh
// to two standbys. It needs a lab of three clusters with KoP (kop-lab up --clusters 3, with
// KOP_NAR) and fails, never skips, on any other lab:
//
//	KOP_NAR=/path/to/kop.nar make e2e-three
package three_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest/labcli"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

func TestMain(m *testing.M) { labtest.Main(m) }

// run runs kop-offsets in-process against the lab's config and logs what it did (labcli's
// CLI.Run: 5 minutes at most).
func run(t *testing.T, l *lab.Lab, args ...string) (int, string) {
	t.Helper()
	return labcli.CLI{Lab: l}.Run(t, args...)
}

// rowOf is the check report's row of group, failing when there is not exactly one.
func rowOf(t *testing.T, out, group string) verdict.Row {
	t.Helper()
	var rep survey.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not a check report: %v", err)
	}
	var rows []verdict.Row
	for _, r := range rep.Rows {
		if r.Group == group {
			rows = append(rows, r)
		}
	}
	if len(rows) != 1 {
		t.Fatalf("%d rows of %s, want 1", len(rows), group)
	}
	return rows[0]
}

// waitPersisted waits until every cluster's offsets topic holds want for group.
func waitPersisted(t *testing.T, l *lab.Lab, group string, want int64) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, out := run(t, l, "--timeout", "20s", "check", "--persisted-only", "--group", group, "-o", "json")
		r := rowOf(t, out, group)
		ok := len(r.Cells) == len(l.Clusters)
		for _, c := range r.Cells {
			ok = ok && c.Persisted != nil && *c.Persisted == want
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not persisted at %d on every cluster within 2 minutes", group, want)
		}
		time.Sleep(2 * time.Second)
	}
}

func served(t *testing.T, c lab.Cluster, group, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	off, ok, err := lab.FetchThroughKoP(ctx, c, group, topic, 0)
	if err != nil || !ok {
		t.Fatalf("%s: %s serves nothing on %s (%v)", c.Name, group, topic, err)
	}
	return off
}

// newTopic creates a topic of one partition on every cluster and writes n records to it
// through scus's KoP; it returns once every cluster's copy ends at n.
func newTopic(t *testing.T, l *lab.Lab, n int) string {
	t.Helper()
	name := labtest.Name("three")
	tn, err := utils.GetTopicName("persistent://public/default/" + name)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range l.Clusters {
		if err := labtest.Admin(t, c).Topics().Create(*tn, 1); err != nil && !strings.Contains(err.Error(), "409") {
			t.Fatalf("%s: create %s: %v", c.Name, tn, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// No idempotence (the lab's KoP has no transaction coordinator), and patient: a produce
	// request sent again after a timeout would write its records twice.
	cl := labtest.Kafka(t, l.Cluster("scus"), kgo.DefaultProduceTopic(name), kgo.DisableIdempotentWrite(),
		kgo.ProduceRequestTimeout(2*time.Minute), kgo.RequestTimeoutOverhead(2*time.Minute))
	for i := 0; i < n; i += 1000 {
		var rs []*kgo.Record
		for j := i; j < n && j < i+1000; j++ {
			rs = append(rs, &kgo.Record{Key: []byte(fmt.Sprintf("k-%d", j)), Value: []byte(fmt.Sprintf("v-%d", j))})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("produce to %s on scus: %v", name, err)
		}
	}
	for _, c := range l.Clusters {
		adm := kadm.NewClient(labtest.Kafka(t, c))
		for {
			ends, err := adm.ListEndOffsets(ctx, name)
			if o, ok := ends.Lookup(name, 0); err == nil && ok && o.Err == nil && o.Offset == int64(n) {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: %s does not end at %d (%v)", c.Name, name, n, err)
			}
			time.Sleep(time.Second)
		}
	}
	return name
}

// TestThreeClustersStory: a group reads a topic on scus; its commits reach wus and eus through
// the full-mesh replication of the offsets topic, where KoP keeps serving the old offset.
// check names both standbys stale, repair heals both, and each serves the new offset.
func TestThreeClustersStory(t *testing.T) {
	l := labtest.Lab(t)
	if len(l.Clusters) < 3 || !l.KoP.Enabled {
		t.Fatalf("the three-cluster suite needs three clusters with KoP (kop-lab up --clusters 3 with KOP_NAR); this lab has %d, KoP %v", len(l.Clusters), l.KoP.Enabled)
	}
	group := labtest.Name("three-group")
	part := loader.PartitionFor(group, lab.OffsetsTopicPartitions)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	scus := l.Cluster("scus")
	topic := newTopic(t, l, 11000)
	if err := lab.CommitThroughKoP(ctx, scus, group, topic, 0, 500); err != nil {
		t.Fatal(err)
	}
	waitPersisted(t, l, group, 500)
	for _, c := range l.Clusters[1:] {
		if err := lab.ReloadOffsetsPartition(ctx, c, part); err != nil {
			t.Fatal(err)
		}
		if got := served(t, c, group, topic); got != 500 {
			t.Fatalf("%s serves %d after a load, want 500", c.Name, got)
		}
	}
	if err := lab.CommitThroughKoP(ctx, scus, group, topic, 0, 10900); err != nil {
		t.Fatal(err)
	}
	waitPersisted(t, l, group, 10900)

	code, out := run(t, l, "--timeout", "20s", "check", "--group", group, "-o", "json")
	r := rowOf(t, out, group)
	if code != 1 || r.Status != verdict.StatusStaleCache {
		t.Fatalf("check: exit %d, status %s; want 1, stale_cache", code, r.Status)
	}
	for _, c := range l.Clusters[1:] {
		if cell := r.Cell(c.Name); cell.Status != verdict.StatusStaleCache || cell.Cached == nil || *cell.Cached != 500 {
			t.Errorf("%s: %+v, want stale_cache serving 500", c.Name, cell)
		}
	}
	if t.Failed() {
		return
	}
	lock := fmt.Sprintf("%s/repair.lock", t.TempDir())
	if code, _ := run(t, l, "--timeout", "20s", "repair", "--lock-file", lock, "--yes", "-o", "json"); code != 0 {
		t.Fatalf("repair: exit %d, want 0", code)
	}
	for _, c := range l.Clusters {
		if got := served(t, c, group, topic); got != 10900 {
			t.Errorf("%s serves %d after repair, want 10900", c.Name, got)
		}
	}
	if code, _ := run(t, l, "--timeout", "20s", "check", "--group", group, "-o", "json"); code != 0 {
		t.Errorf("check after repair: exit %d, want 0", code)
	}
}
