package audit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/kop"
)

type fakeSync struct{ err error }

func (f fakeSync) Commit(context.Context, string, []kop.SyncCommit) error   { return f.err }
func (f fakeSync) Delete(context.Context, string, map[string][]int32) error { return f.err }
func (f fakeSync) DeleteGroup(context.Context, string) error                { return f.err }

func TestSyncCommitsRecordsEachCommitAndDelete(t *testing.T) {
	sink := &memSink{}
	s := SyncCommits{SyncCommitter: fakeSync{}, Cluster: "wus", Reason: "watch --sync: translated offsets", Sink: sink, Now: func() time.Time { return t0 }}
	md := "kop-offsets-sync:from=scus,source=6000|"
	if err := s.Commit(context.Background(), "orders", []kop.SyncCommit{{Topic: "t", Partition: 0, Offset: 5700, Metadata: md}, {Topic: "t", Partition: 1, Offset: 9}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(context.Background(), "orders", map[string][]int32{"u": {2, 0}, "a": {1}}); err != nil {
		t.Fatal(err)
	}
	if len(sink.recs) != 2 {
		t.Fatalf("%d records, want 2: %+v", len(sink.recs), sink.recs)
	}
	c, d := sink.recs[0], sink.recs[1]
	if c.Action != ActionCommit || c.Cluster != "wus" || len(c.Groups) != 1 || c.Groups[0] != "orders" || c.Result != ResultOK ||
		len(c.Offsets) != 2 || c.Offsets[0] != (Offset{Group: "orders", Topic: "t", Partition: 0, Offset: 5700, Metadata: md}) ||
		c.Reason != "watch --sync: translated offsets" || !c.Time.Equal(t0) {
		t.Errorf("commit record %+v", c)
	}
	want := []Offset{{Group: "orders", Topic: "a", Partition: 1, Offset: -1}, {Group: "orders", Topic: "u", Partition: 2, Offset: -1}, {Group: "orders", Topic: "u", Partition: 0, Offset: -1}}
	if d.Action != ActionDelete || len(d.Offsets) != len(want) {
		t.Fatalf("delete record %+v", d)
	}
	for i := range want {
		if d.Offsets[i] != want[i] {
			t.Errorf("delete offset %d: %+v, want %+v", i, d.Offsets[i], want[i])
		}
	}
	// A failed write is recorded as failed and its error returned.
	s.SyncCommitter = fakeSync{err: errors.New("NOT_COORDINATOR")}
	if err := s.Commit(context.Background(), "g", []kop.SyncCommit{{Topic: "t"}}); err == nil {
		t.Fatal("error swallowed")
	}
	if r := sink.recs[2]; r.Result != ResultError || r.Error != "NOT_COORDINATOR" {
		t.Errorf("%+v", r)
	}
}

func TestSyncCommitsReportsATrailThatFails(t *testing.T) {
	var reported error
	s := SyncCommits{SyncCommitter: fakeSync{}, Cluster: "wus", Sink: failingSink{}, OnError: func(err error) { reported = err }}
	if err := s.Commit(context.Background(), "g", []kop.SyncCommit{{Topic: "t"}}); err != nil {
		t.Fatalf("the commit happened; a trail that fails must not fail it: %v", err)
	}
	if reported == nil {
		t.Error("trail error not reported")
	}
}

type failingSink struct{}

func (failingSink) Write(Record) error { return errors.New("disk full") }
