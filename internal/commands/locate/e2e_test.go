//go:build e2e

package locate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/locate"
	"github.com/kop-offsets/kop-offsets/internal/commands/root"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
)

func TestMain(m *testing.M) { labtest.Main(m) }

// TestE2ELocate: after a commit of G on scus (replicated to wus, so both clusters serve the
// partition), locate names G's partition, the bundle the broker reports and its owner.
func TestE2ELocate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	l := labtest.Lab(t)
	w := labtest.Writer(t, l.Cluster("scus"))
	topic := "persistent://public/default/" + labtest.Name("kop-offsets-e2e-locate")
	if _, _, err := w.Commit(ctx, kop.OffsetCommit{Group: "G", Topic: topic, Offset: 1}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // let the replicator write to wus, which loads the bundle there

	f, s := clitest.NewFactory("e2e", false)
	out, errOut := s.Out, s.ErrOut
	start := time.Now()
	err := clitest.Execute(ctx, root.NewCmdRoot(f), "--config", l.ConfigPath, "locate", "G", "-o", "json")
	t.Logf("locate G took %v:\n%s%s", time.Since(start), out, errOut)
	if cmdutil.ExitCode(err) != 0 {
		t.Fatalf("exit %d: %v", cmdutil.ExitCode(err), err)
	}
	var doc locate.Document
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc.SchemaVersion != 1 {
		t.Fatalf("not a document with schemaVersion 1 (%v):\n%s", err, out)
	}
	rows := doc.Locations
	want := loader.PartitionFor("G", lab.OffsetsTopicPartitions)
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		c := l.Cluster(r.Cluster)
		a := labtest.PulsarxAdmin(t, c)
		pt := pulsarx.PartitionTopic(lab.OffsetsTopic, want)
		broker, err := a.BrokerBundleForTopic(ctx, pt)
		if err != nil {
			t.Fatal(err)
		}
		if r.OffsetsPartition == nil || *r.OffsetsPartition != want || r.PartitionTopic != pt || r.Bundle != broker.Range ||
			r.ComputedBundle != broker.Range || r.Error != "" {
			t.Errorf("%s: %+v, want partition %d, bundle %s", c.Name, r, want, broker.Range)
		}
		if r.Owner == nil || *r.Owner != fmt.Sprintf("%s:%d", lab.Host, c.Ports.Web) {
			t.Errorf("%s: owner %v, want the cluster's broker %s:%d", c.Name, r.Owner, lab.Host, c.Ports.Web)
		}
	}
}
