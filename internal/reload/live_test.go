package reload

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

// committing is a group that keeps committing on the cluster written to, as KoP's commit
// path does it: each commit is appended to the offsets topic first, then cached. It commits
// once before every OffsetFetch KoP answers for it and, while hot, before every read of the
// topic, so that every comparison of the cache with the topic races with its commits.
type committing struct {
	*fakes.MemReader
	k     *kopModel
	group string

	mu     sync.Mutex
	offset int64
	hot    bool
}

func newCommitting(group string, start int64) *committing {
	c := &committing{MemReader: fakes.NewMemReader(8), group: group, offset: start}
	c.k = &kopModel{cache: map[string][]TopicOffset{}, stuck: map[int32]int{}}
	c.Commit(kop.OffsetCommit{Group: group, Topic: topic1, Partition: 0, Offset: start})
	c.k.cache[group] = []TopicOffset{{Topic: "topic-1", Partition: 0, Offset: start}}
	c.k.onFetch = func(g string) { // called with k.mu held
		if g == group && c.isHot() {
			c.k.cache[g] = []TopicOffset{{Topic: "topic-1", Partition: 0, Offset: c.commitToTopic()}}
		}
	}
	return c
}

func (c *committing) isHot() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hot
}

func (c *committing) setHot(h bool) {
	c.mu.Lock()
	c.hot = h
	c.mu.Unlock()
}

// commitToTopic appends the next commit (+10) to the topic and returns it.
func (c *committing) commitToTopic() int64 {
	c.mu.Lock()
	c.offset += 10
	o := c.offset
	c.mu.Unlock()
	c.Commit(kop.OffsetCommit{Group: c.group, Topic: topic1, Partition: 0, Offset: o})
	return o
}

// commit is a whole commit: topic, then cache.
func (c *committing) commit() {
	o := c.commitToTopic()
	c.k.mu.Lock()
	c.k.cache[c.group] = []TopicOffset{{Topic: "topic-1", Partition: 0, Offset: o}}
	c.k.mu.Unlock()
}

func (c *committing) ReadPartition(ctx context.Context, p int32, fn func(loader.Message) error) error {
	if c.isHot() && p == loader.PartitionFor(c.group, 8) {
		c.commit()
	}
	return c.MemReader.ReadPartition(ctx, p, fn)
}

func (c *committing) served() int64 {
	c.k.mu.Lock()
	defer c.k.mu.Unlock()
	return c.k.cache[c.group][0].Offset
}

// The plan reads the topic, then asks KoP: a group that commits in between is served more
// than the first read predicts. Its own commits are in the topic: no loss, not refused.
func TestPlanLiveGroupOwnCommitsAreNoLoss(t *testing.T) {
	g := groupIn("g", 3, 8)
	c := newCommitting(g, 500)
	c.setHot(true)
	// The first read commits 510 (topic only, then the cache via the fetch's 520).
	pl, err := (&Planner{Cluster: scus, Admin: fakes.NewAdmin("scus"), Reader: c, Describers: map[string]GroupDescriber{"scus": &staticDescriber{}}, Fetcher: c.k}).
		Plan(context.Background(), Request{Groups: []string{g}})
	if err != nil {
		t.Fatal(err)
	}
	b := pl.Bundles[0]
	if b.Refused || len(b.Losses) != 0 {
		t.Fatalf("a group's own commits since the read counted as a loss: %+v", b)
	}
	if ag, _ := pl.Group(g); len(ag.Persisted) != 1 || ag.Persisted[0].Offset < ag.Served.Offsets[0].Offset {
		t.Errorf("the plan predicts %v, KoP served %v: the newer read should hold it", ag.Persisted, ag.Served)
	}

	t.Run("a value only the cache holds is still a loss", func(t *testing.T) {
		rd := fakes.NewMemReader(8).Commit(kop.OffsetCommit{Group: g, Topic: topic1, Partition: 0, Offset: 500})
		pl, err := (&Planner{Cluster: scus, Admin: fakes.NewAdmin("scus"), Reader: rd, Describers: map[string]GroupDescriber{"scus": &staticDescriber{}},
			Fetcher: staticFetcher{g: {{Topic: "topic-1", Partition: 0, Offset: 600}}}}).Plan(context.Background(), Request{Groups: []string{g}})
		if err != nil {
			t.Fatal(err)
		}
		if b := pl.Bundles[0]; !b.Refused || len(b.Losses) != 1 || rd.Reads[loader.PartitionFor(g, 8)] != 2 {
			t.Fatalf("reads %v, %+v", rd.Reads, b)
		}
	})
	t.Run("a newer value replicated from another cluster is checked for skips", func(t *testing.T) {
		rd := fakes.NewMemReader(8).Commit(kop.OffsetCommit{Group: g, Topic: topic1, Partition: 0, Offset: 500})
		f := &kopModel{cache: map[string][]TopicOffset{}, stuck: map[int32]int{}}
		once := sync.Once{}
		f.onFetch = func(string) { // after the first read: the group's own 600, then a copy of wus's 10900
			once.Do(func() {
				rd.Commit(kop.OffsetCommit{Group: g, Topic: topic1, Partition: 0, Offset: 600})
				f.cache[g] = []TopicOffset{{Topic: "topic-1", Partition: 0, Offset: 600}}
				rd.Replicated("wus", kop.OffsetCommit{Group: g, Topic: topic1, Partition: 0, Offset: 10900})
			})
		}
		pl, err := (&Planner{Cluster: scus, Admin: fakes.NewAdmin("scus"), Reader: rd, Describers: map[string]GroupDescriber{"scus": &staticDescriber{}}, Fetcher: f}).
			Plan(context.Background(), Request{Groups: []string{g}})
		if err != nil {
			t.Fatal(err)
		}
		if b := pl.Bundles[0]; !b.Refused || len(b.Skips) != 1 {
			t.Fatalf("%+v", b)
		}
	})
}

// Between the plan and the unload, and during the verification, the live group keeps
// committing: the re-check does not call its commits a loss, the verification accepts an
// answer between the topic read before it and the one after it, and the group's offset never
// goes back.
func TestExecuteLiveGroupKeepsCommitting(t *testing.T) {
	g := groupIn("g", 3, 8)
	c := newCommitting(g, 500)
	fa := fakes.NewAdmin("scus")
	var history []int64
	fa.OnUnload = func(string) {
		// The load brings what the topic holds: the group's last commit.
		history = append(history, c.served())
	}
	live := map[string]GroupDescriber{"scus": &staticDescriber{groups: map[string]GroupActivity{g: {State: "Stable", Members: 1}}}}
	pl, err := (&Planner{Cluster: scus, Admin: fa, Reader: c, Describers: live, Fetcher: c.k}).Plan(context.Background(), Request{Groups: []string{g}})
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Executable()) != 1 {
		t.Fatalf("a bundle whose only live group commits on this cluster is refused: %+v", pl.Bundles)
	}
	c.commit() // after the plan: 510 in topic and cache
	c.setHot(true)
	ex := (&Executor{Cluster: scus, Admin: fa, Fetcher: c.k, Reader: c, Wait: 2 * time.Second, PollInterval: 10 * time.Millisecond}).
		Execute(context.Background(), pl, pl.Executable())
	c.setHot(false)
	b, gr := ex.Bundles[0], ex.Groups[0]
	if ex.ExitCode != 0 || b.Status != BundleVerified || !b.Unloaded {
		t.Fatalf("exit %d %+v", ex.ExitCode, b)
	}
	if gr.Status != GroupFresh || !gr.CommittedSince || gr.After.Offsets[0].Offset < gr.Before.Offsets[0].Offset {
		t.Errorf("%+v before %v after %v", gr, gr.Before, gr.After)
	}
	if len(history) != 1 || history[0] < 510 {
		t.Errorf("unloaded with the cache at %v", history)
	}
}

// A cache that is ahead after the load with a value the topic does not hold (or behind it)
// is not fresh: only the group's own commits, held by the topic, are.
func TestExecuteAheadWithoutTopicIsNotFresh(t *testing.T) {
	g, rd, fa, k, pl := stalePlan(t)
	fa.OnUnload = func(string) {
		k.mu.Lock()
		k.cache[g] = []TopicOffset{{Topic: "topic-1", Partition: 0, Offset: 11000}} // not in the topic
		k.mu.Unlock()
	}
	ex := (&Executor{Cluster: scus, Admin: fa, Fetcher: k, Reader: rd, Wait: 100 * time.Millisecond, PollInterval: 10 * time.Millisecond}).
		Execute(context.Background(), pl, pl.Executable())
	if gr := ex.Groups[0]; ex.Bundles[0].Status != BundleCacheDiffers || gr.Status != GroupCacheDiffers || gr.CommittedSince {
		t.Fatalf("%+v %+v", ex.Bundles[0], gr)
	}
}

func TestBetween(t *testing.T) {
	o := func(p int32, off int64, origin string) TopicOffset {
		return TopicOffset{Topic: "t", Partition: p, Offset: off, Origin: origin}
	}
	ls := func(v ...TopicOffset) []TopicOffset { return v }
	for _, tc := range []struct {
		name                  string
		served, before, after []TopicOffset
		want                  bool
	}{
		{"what the load brought", ls(o(0, 5, "")), ls(o(0, 5, "")), ls(o(0, 9, "")), true},
		{"its own commit since", ls(o(0, 7, "")), ls(o(0, 5, "")), ls(o(0, 9, "")), true},
		{"exactly the later read", ls(o(0, 9, "")), ls(o(0, 5, "")), ls(o(0, 9, "")), true},
		{"beyond the later read", ls(o(0, 10, "")), ls(o(0, 5, "")), ls(o(0, 9, "")), false},
		{"below the earlier read (stale)", ls(o(0, 4, "")), ls(o(0, 5, "")), ls(o(0, 9, "")), false},
		{"the newer value replicated", ls(o(0, 7, "")), ls(o(0, 5, "")), ls(o(0, 9, "wus")), false},
		{"a row the load brought is missing", ls(o(0, 7, "")), ls(o(0, 5, ""), o(1, 3, "")), ls(o(0, 9, ""), o(1, 3, "")), false},
		{"a new partition committed since", ls(o(0, 5, ""), o(1, 2, "")), ls(o(0, 5, "")), ls(o(0, 5, ""), o(1, 2, "")), true},
	} {
		if got := between(tc.served, tc.before, tc.after); got != tc.want {
			t.Errorf("%s: between = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// stalePlan is the user's story on scus as the executor tests start it: the topic holds
// 10900 for g, KoP serves 500, and the plan of g (idle) reloads its bundle.
func stalePlan(t *testing.T) (string, *fakes.MemReader, *fakes.Admin, *kopModel, *Plan) {
	t.Helper()
	g := groupIn("g", 3, 8)
	rd := fakes.NewMemReader(8).Commit(kop.OffsetCommit{Group: g, Topic: topic1, Partition: 0, Offset: 10900})
	fa := fakes.NewAdmin("scus")
	k := &kopModel{cache: map[string][]TopicOffset{g: {{Topic: "topic-1", Partition: 0, Offset: 500}}}, stuck: map[int32]int{}}
	pl, err := (&Planner{Cluster: scus, Admin: fa, Reader: rd, Describers: map[string]GroupDescriber{"scus": &staticDescriber{}}, Fetcher: k}).
		Plan(context.Background(), Request{Groups: []string{g}})
	if err != nil || len(pl.Executable()) != 1 {
		t.Fatalf("%v %+v", err, pl)
	}
	return g, rd, fa, k, pl
}
