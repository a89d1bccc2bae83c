package watch

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/survey"
)

// retained is what watch keeps per group, summed over the clusters.
type retained struct{ rowGroups, cached, pending, topics int }

func (w *Watcher) retained() retained {
	r := retained{rowGroups: len(w.exp.rows.groups)}
	for _, c := range w.clusters {
		r.cached += len(c.cached)
		r.pending += len(c.pending)
		r.topics += len(c.leo)
	}
	return r
}

// TestGroupChurnKeepsStateFlat: groups are created and deleted (their offsets tombstoned,
// KoP forgets them) round after round, on a topic of their own each round; what watch keeps
// (rows, replicated commits tracked, log-end offsets; KoP's answers only within a cycle)
// follows the live groups and does not grow with the rounds.
func TestGroupChurnKeepsStateFlat(t *testing.T) {
	const perRound, rounds = 20, 60
	scus, wus := newMemTail(nParts), newMemTail(nParts)
	kScus, kWus := newHistory(nParts), newHistory(nParts) // wus's KoP serves nothing: its commits stay pending
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	w := New([]Cluster{
		{Name: "scus", KafkaNamespace: "public/default", Tailer: scus, Fetcher: kScus, Replication: survey.StaticReplication{}},
		{Name: "wus", KafkaNamespace: "public/default", Tailer: wus, Fetcher: kWus, Replication: survey.StaticReplication{}},
	}, Options{Now: clk.Now, Resync: time.Minute, Backoff: 10 * time.Millisecond, CallTimeout: 5 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	wait := w.Start(ctx)
	defer func() { cancel(); wait() }()

	live := map[string]bool{}
	group := func(r, i int) string { return fmt.Sprintf("g-%03d-%02d", r, i) }
	var first, peak retained
	var heapAt10 uint64
	for r := range rounds {
		topic := fmt.Sprintf("persistent://public/default/topic-%03d", r)
		for i := range perRound {
			g := group(r, i)
			c := kop.OffsetCommit{Group: g, Topic: topic, Partition: 0, Offset: int64(r*100 + i), CommitTime: clk.Now()}
			scus.commit("", c)
			wus.commit("scus", c)
			kScus.serveTopic(g, topic, 0, c.Offset)
			live[g] = true
		}
		if r >= 2 {
			for i := range perRound {
				g := group(r-2, i)
				c := kop.OffsetCommit{Group: g, Topic: fmt.Sprintf("persistent://public/default/topic-%03d", r-2), Partition: 0, Tombstone: true}
				scus.commit("", c)
				wus.commit("scus", c)
				kScus.drop(g)
				delete(live, g)
			}
		}
		clk.add(20 * time.Second)
		want := slices.Sorted(maps.Keys(live))
		for i := 0; ; i++ {
			w.Cycle(ctx)
			if slices.Equal(reportGroups(w.Report()), want) {
				break
			}
			if i > 500 {
				t.Fatalf("round %d: watch shows %v, want %v", r, reportGroups(w.Report()), want)
			}
			time.Sleep(2 * time.Millisecond)
		}
		got := w.retained()
		// Every live group: a row on both clusters, a replicated commit wus's KoP does not
		// serve; no answer of KoP's (the cycle's only); topics: those of the live groups and,
		// until the next resync, of groups deleted since the last one.
		if got.rowGroups != len(live) || got.cached != 0 || got.pending > len(live) || got.topics > 2*5 {
			t.Fatalf("round %d: retained %+v for %d live groups", r, got, len(live))
		}
		switch {
		case r == 10:
			first = got
			heapAt10 = heapAlloc()
		case r > 10:
			peak = retained{max(peak.rowGroups, got.rowGroups), max(peak.cached, got.cached), max(peak.pending, got.pending), max(peak.topics, got.topics)}
		}
	}
	// Topics vary with where the resyncs fall (bounded above each round); the rest is exact.
	if peak.rowGroups > first.rowGroups || peak.cached > first.cached || peak.pending > first.pending {
		t.Errorf("retained state grew: round 10 %+v, peak after %+v", first, peak)
	}
	t.Logf("%d groups created and %d deleted; retained %+v (round 10 %+v); heap %d KB at round 10, %d KB at the end",
		rounds*perRound, (rounds-2)*perRound, w.retained(), first, heapAt10/1024, heapAlloc()/1024)
}

func reportGroups(rep *survey.Report) []string {
	var out []string
	if rep == nil {
		return nil
	}
	for _, r := range rep.Rows {
		if len(out) == 0 || out[len(out)-1] != r.Group {
			out = append(out, r.Group)
		}
	}
	return out
}

func heapAlloc() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
