package failover

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/reload"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

// unread is an offsets-topic reader that must not be read: the reload's plan gets the
// failover's replay instead.
type unread struct {
	loader.OffsetTopicReader
	reads int
}

func (u *unread) ReadPartition(ctx context.Context, p int32, fn func(loader.Message) error) error {
	u.reads++
	return u.OffsetTopicReader.ReadPartition(ctx, p, fn)
}

// memWriter writes the failover's requests into a MemReader, as the target's offsets topic
// gets them; the requests of the groups in fail are not written.
type memWriter struct {
	dst     *fakes.MemReader
	fail    map[string]error
	batches int
	hold    bool
}

func (w *memWriter) CommitRequests(_ context.Context, reqs [][]kop.OffsetCommit) []kop.Sent {
	w.batches++
	out := make([]kop.Sent, len(reqs))
	for i, cs := range reqs {
		if out[i].Err = w.fail[cs[0].Group]; out[i].Err != nil {
			continue
		}
		if w.hold {
			w.dst.Replicated("scus", cs...)
		} else {
			w.dst.Commit(cs...)
		}
	}
	return out
}

// disasterReads is newDisaster whose reload plan may not read the target's topic itself,
// with the target's offsets topic and a writer into it.
func disasterReads(t *testing.T, n int) (*disaster, *fakes.MemReader, *unread) {
	d := newDisaster(t, n, 2)
	sr := d.executor.Reloader.(SessionReloader)
	dst := d.planner.To.Reader.(*fakes.MemReader)
	u := &unread{OffsetTopicReader: dst}
	sr.Planner.Reader, sr.Executor.Reader = u, u
	d.executor.Writer = &memWriter{dst: dst}
	d.executor.Holder = &memWriter{dst: dst, hold: true}
	return d, dst, u
}

// TestTargetTopicReadOnce: the failover's plan reads the target's offsets topic, the
// reload's plan and each bundle's verification read only what was appended since (nothing
// here): each partition is read whole once, where it was read three times (issue 47: 2.3 s
// a read at 10,000 groups).
func TestTargetTopicReadOnce(t *testing.T) {
	ctx := context.Background()
	d, _, u := disasterReads(t, 40)
	plan, err := d.planner.Plan(ctx, Scope{})
	if err != nil {
		t.Fatal(err)
	}
	res := d.executor.Apply(ctx, plan)
	if res.ExitCode != outcome.OK || res.Proven != 80 {
		t.Fatalf("exit %d (%s), %d proven", res.ExitCode, res.Error, res.Proven)
	}
	whole, tails := plan.target.Reads()
	if u.reads != 0 || whole != 8 || tails != 16 {
		t.Fatalf("the reload read its own reader %d times; the failover's replay read %d partitions whole and %d tails, want 8 and 16 (the plan's, the verifications')", u.reads, whole, tails)
	}
}

// TestReloadPlanSeesWhatCameAfter: the reload's plan is decided on the topic as it is when
// it runs: the failover's own writes (a row landing on an older kept translation) and a
// group that committed on the target after the failover's plan are in it.
func TestReloadPlanSeesWhatCameAfter(t *testing.T) {
	ctx := context.Background()
	d, dst, _ := disasterReads(t, 40)
	// g000003's t0: scus's newer 45 replicated after the kept translation of its 40: the
	// row lands on the kept 40 (older_kept), written over the untranslated 45.
	dst.Replicated("scus", kop.OffsetCommit{Group: "g000003", Topic: "persistent://public/default/t0", Offset: 45})
	plan, err := d.planner.Plan(ctx, Scope{})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Count(ActionWrite) != 1 || plan.Landings[LandingOlderKept] != 1 {
		t.Fatalf("%d writes, landings %v", plan.Count(ActionWrite), plan.Landings)
	}
	dst.Commit(kop.OffsetCommit{Group: "late", Topic: "persistent://public/default/t1", Offset: 7})
	res := d.executor.Apply(ctx, plan)
	if res.ExitCode != outcome.Reread || res.Proven != 80 || strings.Join(res.Written, ",") != "g000003" {
		t.Fatalf("exit %d (%s), %d proven, written %v", res.ExitCode, res.Error, res.Proven, res.Written)
	}
	var late bool
	for _, g := range res.Reload.Groups {
		if g.Group == "late" {
			late = true
		}
		if g.Group == "g000003" && !slices.ContainsFunc(g.Persisted, func(o reload.TopicOffset) bool { return o.Topic == "t0" && o.Offset == 40 }) {
			t.Errorf("the reload predicts %+v for g000003, want the written 40 on t0", g.Persisted)
		}
	}
	if !late {
		t.Error("the group that committed after the failover's plan is not in the reload's plan")
	}
	if whole, tails := plan.target.Reads(); whole != 8 || tails != 24 {
		t.Errorf("%d whole reads, %d tails: want 8, and three tails a partition (the plans before and after the write, the verification)", whole, tails)
	}
}

// TestWritesBatchedPerRowErrors: the landings are sent as one batch, not a round trip per
// group; a row that fails is named with its cluster, group, topic and partition, the others
// are written, and nothing is reloaded.
func TestWritesBatchedPerRowErrors(t *testing.T) {
	ctx := context.Background()
	d, dst, _ := disasterReads(t, 10)
	for i := range 10 { // every group lands on an older kept translation: 10 writes
		dst.Replicated("scus", kop.OffsetCommit{Group: fmt.Sprintf("g%06d", i), Topic: "persistent://public/default/t1", Offset: 45})
	}
	plan, err := d.planner.Plan(ctx, Scope{})
	if err != nil {
		t.Fatal(err)
	}
	w := d.executor.Writer.(*memWriter)
	w.fail = map[string]error{"g000004": errors.New("send to persistent://public/__kafka/__consumer_offsets-partition-2: producer closed")}
	res := d.executor.Apply(ctx, plan)
	if w.batches != 1 || len(res.Written) != 9 || slices.Contains(res.Written, "g000004") {
		t.Fatalf("%d batches, written %v: want one batch, every group but g000004", w.batches, res.Written)
	}
	want := WriteError{Cluster: "wus", Group: "g000004", Topic: "t1", Partition: 0, Offset: 40, Error: w.fail["g000004"].Error()}
	if res.ExitCode != outcome.WriteFailed || len(res.WriteErrors) != 1 || res.WriteErrors[0] != want || res.Execution != nil {
		t.Fatalf("exit %d, errors %+v, execution %v", res.ExitCode, res.WriteErrors, res.Execution)
	}
	if !strings.Contains(res.Error, "cluster wus: write of group g000004 t1[0] failed: send to") || !strings.Contains(res.Error, "run failover again") {
		t.Errorf("error %q", res.Error)
	}
}
