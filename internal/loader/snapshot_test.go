package loader_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

const snapTopic = "persistent://public/default/t"

// rows renders what KoP would load, row by row.
func rows(po *loader.PersistedOffsets) string {
	s := ""
	for co := range po.AllOffsets() {
		s += fmt.Sprintf("%s %d=%d; ", co.Group, co.Partition, co.Offset)
	}
	return s
}

// whole is a replay of every partition from the start, the reference a Snapshot must equal.
func whole(t *testing.T, r *fakes.MemReader) string {
	t.Helper()
	var parts []*loader.PersistedOffsets
	for p := range r.NumPartitions {
		po, err := loader.ReplayPartition(context.Background(), r, p, loader.OrderingKoP)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, po)
	}
	return rows(loader.Merge(parts...))
}

func all(n int32) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

func commit(g string, partition int32, off int64) kop.OffsetCommit {
	return kop.OffsetCommit{Group: g, Topic: snapTopic, Partition: partition, Offset: off}
}

// TestSnapshotReadsOnlyTheTail: the second Replay reads what was appended since the first,
// nothing else, and answers what a whole read answers.
func TestSnapshotReadsOnlyTheTail(t *testing.T) {
	ctx := context.Background()
	r := fakes.NewMemReader(4)
	for i := range 40 {
		r.Commit(commit(fmt.Sprintf("g%d", i), 0, 10), commit(fmt.Sprintf("g%d", i), 1, 20))
	}
	s := loader.NewSnapshot(r, loader.OrderingKoP)
	po, err := s.Replay(ctx, all(4), 0)
	if err != nil || rows(po) != whole(t, r) {
		t.Fatalf("first replay: %v\n%s\nwant\n%s", err, rows(po), whole(t, r))
	}
	delivered := r.Delivered
	r.Commit(commit("g1", 0, 11), commit("new", 3, 5))
	r.Delivered = 0
	po, err = s.Replay(ctx, all(4), 0)
	read := r.Delivered
	if w, tails := s.Reads(); read != 2 || w != 4 || tails != 4 {
		t.Fatalf("second replay read %d messages (%d whole partitions, %d tails), want the 2 appended of %d (4 tails)", read, w-4, tails, delivered+2)
	}
	if err != nil || rows(po) != whole(t, r) {
		t.Fatalf("second replay: %v\n%s\nwant\n%s", err, rows(po), whole(t, r))
	}
	// The first result did not change under the second.
	if po2, _ := s.Replay(ctx, all(4), 0); rows(po2) != rows(po) {
		t.Fatalf("a third replay with nothing appended: %s, want %s", rows(po2), rows(po))
	}
}

// TestSnapshotCompactionReadsWhole: a compaction drops a group's older message, whose rows
// KoP no longer loads; the Snapshot sees the horizon move and reads the partition whole, as
// a tail would keep them.
func TestSnapshotCompactionReadsWhole(t *testing.T) {
	ctx := context.Background()
	r := fakes.NewMemReader(1)
	r.Commit(commit("g", 0, 10), commit("g", 1, 20)) // two messages of one group, one per row
	s := loader.NewSnapshot(r, loader.OrderingKoP)
	if _, err := s.Replay(ctx, all(1), 0); err != nil {
		t.Fatal(err)
	}
	r.Commit(commit("g", 0, 11))
	r.Compact(0) // only the group's newest message stays: row 1 is gone
	po, err := s.Replay(ctx, all(1), 0)
	if err != nil || rows(po) != whole(t, r) || rows(po) != "g 0=11; " {
		t.Fatalf("after a compaction: %v %q, want %q", err, rows(po), whole(t, r))
	}
	if w, _ := s.Reads(); w != 2 {
		t.Fatalf("%d whole reads, want 2 (the compaction read again)", w)
	}
}

// A horizon that cannot be read, or a reader that cannot read a tail, reads whole each time.
func TestSnapshotWithoutHorizonReadsWhole(t *testing.T) {
	ctx := context.Background()
	r := fakes.NewMemReader(2)
	r.HorizonErr = errors.New("403 internal stats")
	r.Commit(commit("g", 0, 10))
	s := loader.NewSnapshot(r, loader.OrderingKoP)
	for range 2 {
		if _, err := s.Replay(ctx, all(2), 0); err != nil {
			t.Fatal(err)
		}
	}
	if w, tails := s.Reads(); w != 4 || tails != 0 || r.Reads[0] != 2 {
		t.Fatalf("%d whole, %d tails, reads %v: want every read whole", w, tails, r.Reads)
	}
	plain := loader.NewSnapshot(onlyReads{r}, loader.OrderingKoP)
	for range 2 {
		if po, err := plain.Replay(ctx, all(2), 0); err != nil || rows(po) != "g 0=10; " {
			t.Fatalf("%v %q", err, rows(po))
		}
	}
	if w, tails := plain.Reads(); w != 4 || tails != 0 {
		t.Fatalf("plain reader: %d whole, %d tails", w, tails)
	}
}

// A read that fails leaves nothing half fed: the partition is read whole next time.
func TestSnapshotFailedReadIsForgotten(t *testing.T) {
	ctx := context.Background()
	r := fakes.NewMemReader(1)
	r.Commit(commit("g", 0, 10))
	s := loader.NewSnapshot(r, loader.OrderingKoP)
	if _, err := s.Replay(ctx, all(1), 0); err != nil {
		t.Fatal(err)
	}
	r.Err = errors.New("connection reset")
	if _, err := s.Replay(ctx, all(1), 0); err == nil {
		t.Fatal("error swallowed")
	}
	r.Err = nil
	r.Commit(commit("g", 1, 5))
	if po, err := s.Replay(ctx, all(1), 0); err != nil || rows(po) != whole(t, r) {
		t.Fatalf("%v %q", err, rows(po))
	}
	if w, _ := s.Reads(); w != 2 {
		t.Fatalf("%d whole reads, want 2", w)
	}
}

// onlyReads hides MemReader's tail reads.
type onlyReads struct{ r *fakes.MemReader }

func (o onlyReads) Partitions(ctx context.Context) (int32, error) { return o.r.Partitions(ctx) }
func (o onlyReads) ReadPartition(ctx context.Context, p int32, fn func(loader.Message) error) error {
	return o.r.ReadPartition(ctx, p, fn)
}
