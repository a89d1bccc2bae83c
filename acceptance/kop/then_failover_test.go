//go:build kop

package kop

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest/labcli"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// TestFailoverShiftedCopies: scus held 10 messages before replication reached the topic
// (written with replication disabled), so every later message sits 10 lower on wus. The
// group consumed scus up to 60 (the next message, "k-50", is wus offset 50).
//   - check: the row is misaligned on wus with the translated offset 50;
//   - repair and reload refuse to make wus serve 60 (it would skip 10 messages);
//   - failover makes wus serve 50, a Kafka consumer on wus starts exactly at k-50, and
//     scus still serves its own 60, also after a reload of its bundle.
func TestFailoverShiftedCopies(t *testing.T) {
	topic, group, part := settledGroup(t, "shifted")
	shiftedCopies(t, topic, 10, 100)

	// wus loads 30 (stale from then on), then the group reaches 60 on scus.
	labtest.Commit(t, theLab, "scus", group, topic, 30)
	labtest.WaitReplicated(t, theLab, "scus", "wus", part)
	labtest.LoadOn(t, theLab, "wus", group)
	labtest.Commit(t, theLab, "scus", group, topic, 60)
	labtest.WaitReplicated(t, theLab, "scus", "wus", part)
	labtest.WantServed(t, theLab, "wus", group, topic, "30", "wus serves %s, want 30 (stale)")

	rep, code := cli.Check(t, "--group", group)
	r := labcli.Row(t, rep, group)
	w := r.Cell("wus")
	if code != 1 || r.Status != verdict.StatusMisaligned || w.Status != verdict.StatusMisaligned || w.Origin != "scus" ||
		labtest.Val(w.Translated) != "50" || !strings.Contains(w.Detail, "failover --source scus --target wus") {
		t.Fatalf("check: exit %d, row %s, wus %+v", code, r.Status, w)
	}
	t.Logf("wus: %s", w.Detail)

	code, d := cli.Repair(t, "--group", group, "--yes")
	if code != 1 || len(d.Left) != 1 || d.Left[0].Cluster != "wus" || d.Left[0].Status != "misaligned" {
		t.Fatalf("repair: exit %d, %+v", code, d)
	}
	code, out := cli.Run(t, "--timeout", "10s", "reload", "--cluster", "wus", "--group", group, "--yes", "-o", "json")
	if code == 0 || !strings.Contains(out, `"skipped": 10`) {
		t.Fatalf("reload of the misaligned row: exit %d, want a refusal naming 10 skipped messages", code)
	}
	labtest.WantServed(t, theLab, "wus", group, topic, "30", "after repair and reload wus serves %s: they must not make it serve 60")

	code, out = cli.Run(t, "--timeout", "10s", "failover", "--source", "scus", "--target", "wus", "--group", group, "--yes", "-o", "json")
	var doc struct {
		Plan struct {
			Rows []struct {
				Action     string
				Translated *int64
			}
		}
		Result struct {
			Proof []struct {
				OK, SourceKept bool
				TargetServes   *int64
				Message        string
			}
		}
		ExitCode int
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("failover: exit %d, not a document: %v", code, err)
	}
	if code != 0 || len(doc.Result.Proof) != 1 || !doc.Result.Proof[0].OK || !doc.Result.Proof[0].SourceKept || labtest.Val(doc.Result.Proof[0].TargetServes) != "50" {
		t.Fatalf("failover: exit %d, %+v", code, doc)
	}
	labtest.WantServed(t, theLab, "wus", group, topic, "50", "wus serves %s after failover, want 50")
	first := labtest.FirstRecord(t, theLab, "wus", group, topic)
	if first.Offset != 50 || string(first.Key) != "k-50" {
		t.Fatalf("a consumer on wus starts at offset %d key %s, want 50 k-50 (the first message the group had not read on scus)", first.Offset, first.Key)
	}
	labtest.WantServed(t, theLab, "scus", group, topic, "60", "scus serves %s after the failover, want its own 60")
	labtest.LoadOn(t, theLab, "scus", group)
	labtest.WantServed(t, theLab, "scus", group, topic, "60", "scus serves %s after a reload of its bundle, want 60 (the target's record must not replicate)")
	// Each cluster holds its own number for the same message: compared in each numbering
	// the row is ok.
	rep, code = cli.Check(t, "--group", group)
	if r := labcli.Row(t, rep, group); code != 0 || r.Status != verdict.StatusOK {
		t.Fatalf("check after the failover: exit %d, row %s, %+v", code, r.Status, r.Cells)
	}
}

// produceLocal writes n messages to topic's partition 0 on c with a Pulsar producer and
// replication disabled: they exist on c only.
// shiftedCopies writes local records on scus with replication off, then replicated ones:
// scus offset N is wus offset N-local.
func shiftedCopies(t *testing.T, topic string, local, replicated int) {
	t.Helper()
	scus, wus := theLab.Cluster("scus"), theLab.Cluster("wus")
	produceLocal(t, scus, topic, local)
	labtest.WaitEndOffset(t, scus, topic, int64(local))
	labtest.Produce(t, scus, topic, replicated)
	labtest.WaitEndOffset(t, scus, topic, int64(local+replicated))
	labtest.WaitEndOffset(t, wus, topic, int64(replicated))
}

func produceLocal(t *testing.T, c lab.Cluster, topic string, n int) {
	t.Helper()
	pc := labtest.Pulsar(t, c)
	prod, err := pc.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/default/" + topic + "-partition-0", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range n {
		if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Key: fmt.Sprintf("local-%s-%d", c.Name, i), Payload: []byte("on " + c.Name + " only"), DisableReplication: true}); err != nil {
			t.Fatalf("%s: local record: %v", c.Name, err)
		}
	}
}
