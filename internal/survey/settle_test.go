package survey

import (
	"context"
	"sync"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// duringCheck is an offsets topic whose group commits through KoP while check runs:
// onRead(n, done) is called before (done false) and after (done true) the n-th read of the
// group's partition, to commit (to the topic and KoP's cache, in that order, as KoP does).
type duringCheck struct {
	*fakes.MemReader
	mu     sync.Mutex
	reads  int
	part   int32
	onRead func(n int, done bool)
}

func (d *duringCheck) ReadPartition(ctx context.Context, p int32, fn func(loader.Message) error) error {
	if p != d.part {
		return d.MemReader.ReadPartition(ctx, p, fn)
	}
	d.mu.Lock()
	d.reads++
	n := d.reads
	d.mu.Unlock()
	d.onRead(n, false)
	err := d.MemReader.ReadPartition(ctx, p, fn)
	d.onRead(n, true)
	return err
}

// A live group commits 7 right after check read 5 from the topic: KoP serves 7. The second
// read holds 7 too, so the row is ok (not cache_ahead, exit 0). If it commits again (9)
// after KoP answered, the second read differs from the answer and the first read stands:
// cache_ahead, with the detail naming a commit after the read.
func TestCommitDuringCheckIsNotAhead(t *testing.T) {
	run := func(t *testing.T, again bool) (verdict.Row, *Report) {
		t.Helper()
		k := newKoP(t, 100)
		mem := fakes.NewMemReader(8).Commit(commit("live", 0, 5))
		k.Set("live", "topic-1", 0, 5)
		rd := &duringCheck{MemReader: mem, part: loader.PartitionFor("live", 8), onRead: func(n int, done bool) {
			switch {
			case n == 1 && done:
				mem.Commit(commit("live", 0, 7))
				k.Set("live", "topic-1", 0, 7)
			case n == 2 && !done && again:
				mem.Commit(commit("live", 0, 9))
				k.Set("live", "topic-1", 0, 9)
			}
		}}
		rep, err := Run(context.Background(), []Cluster{{Name: "scus", KafkaNamespace: "public/default", Reader: rd, Fetcher: fetcher(t, k), Replication: StaticReplication{}}},
			Options{Now: testNow})
		if err != nil || len(rep.Rows) != 1 {
			t.Fatalf("%v %+v", err, rep)
		}
		return rep.Rows[0], rep
	}
	t.Run("committed once during the check", func(t *testing.T) {
		r, rep := run(t, false)
		c := r.Cell("scus")
		if r.Status != verdict.StatusOK || *c.Cached != 7 || *c.Persisted != 7 || rep.ExitCode != outcome.OK {
			t.Errorf("row %s, cell %+v, exit %d; want ok at 7, exit 0", r.Status, c, rep.ExitCode)
		}
	})
	t.Run("committed again after KoP answered", func(t *testing.T) {
		r, rep := run(t, true)
		c := r.Cell("scus")
		if r.Status != verdict.StatusCacheAhead || *c.Cached != 7 || *c.Persisted != 5 || rep.ExitCode != outcome.Found {
			t.Errorf("row %s, cell %+v, exit %d; want cache_ahead 7 over 5, exit 1", r.Status, c, rep.ExitCode)
		}
	})
}
