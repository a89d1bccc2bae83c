package reload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

// staticFetcher serves a fixed cache; groups it lacks have no offsets; an error value is
// returned as is.
type staticFetcher map[string][]TopicOffset

func (f staticFetcher) FetchOffsets(_ context.Context, g string) ([]TopicOffset, error) {
	if offs, ok := f[g]; ok {
		return append([]TopicOffset(nil), offs...), nil
	}
	return []TopicOffset{}, nil
}

type errFetcher struct{ err error }

func (f errFetcher) FetchOffsets(context.Context, string) ([]TopicOffset, error) { return nil, f.err }

func TestPlanRefusesLoss(t *testing.T) {
	ctx := context.Background()
	g := groupIn("g", 3, 8)
	idle := map[string]GroupDescriber{"scus": &staticDescriber{}}
	plan := func(t *testing.T, rd loader.OffsetTopicReader, f OffsetFetcher, accept bool) *Plan {
		t.Helper()
		p := &Planner{Cluster: scus, Admin: fakes.NewAdmin("scus"), Reader: rd, Describers: idle, Fetcher: f, AcceptLoss: accept}
		pl, err := p.Plan(ctx, Request{Groups: []string{g}})
		if err != nil {
			t.Fatal(err)
		}
		return pl
	}
	commit := kop.OffsetCommit{Group: g, Topic: topic1, Partition: 0, Offset: 10900}

	t.Run("the user's case: older cache, reload allowed", func(t *testing.T) {
		pl := plan(t, fakes.NewMemReader(8).Commit(commit), staticFetcher{g: {{Topic: "topic-1", Partition: 0, Offset: 500}}}, false)
		if b := pl.Bundles[0]; b.Refused || len(b.Losses) != 0 {
			t.Fatalf("%+v", b)
		}
	})
	t.Run("cache ahead of the loader: refused, named", func(t *testing.T) {
		pl := plan(t, fakes.NewMemReader(8).Commit(commit), staticFetcher{g: {{Topic: "topic-1", Partition: 0, Offset: 11000}, {Topic: "topic-1", Partition: 1, Offset: 3}}}, false)
		b := pl.Bundles[0]
		if !b.Refused || len(b.Losses) != 2 || !strings.Contains(b.Reason, g+" topic-1[0]: serves 11000, would serve 10900") ||
			!strings.Contains(b.Reason, "topic-1[1]: serves 3, would serve none") || !strings.Contains(b.Reason, "--accept-loss") {
			t.Fatalf("%+v", b)
		}
		if pl := plan(t, fakes.NewMemReader(8).Commit(commit), staticFetcher{g: {{Topic: "topic-1", Partition: 0, Offset: 11000}}}, true); pl.Bundles[0].Refused {
			t.Errorf("--accept-loss: %+v", pl.Bundles[0])
		}
	})
	t.Run("transactional commit only the live path applied", func(t *testing.T) {
		rd := &txnReader{MemReader: fakes.NewMemReader(8), group: g, offset: 600}
		pl := plan(t, rd, staticFetcher{g: {{Topic: "topic-1", Partition: 0, Offset: 600}}}, false)
		b := pl.Bundles[0]
		if !b.Refused || len(b.Losses) != 1 || !strings.Contains(b.Losses[0].Why, "transactional commit (600)") {
			t.Fatalf("%+v", b)
		}
	})
	t.Run("partition KoP cannot load", func(t *testing.T) {
		rd := fakes.NewMemReader(8).Commit(commit)
		rd.Append(loader.PartitionFor(g, 8), loader.Message{Key: []byte("e2e-key"), Value: []byte("kop-lab e2e raw")})
		pl := plan(t, rd, staticFetcher{g: {{Topic: "topic-1", Partition: 0, Offset: 10900}}}, false)
		b := pl.Bundles[0]
		if !b.Refused || len(b.LoadFailures) != 1 || !strings.Contains(b.Losses[0].Why, "KoP cannot load the offsets partition") {
			t.Fatalf("%+v", b)
		}
		if ag, _ := pl.Group(g); len(ag.Persisted) != 0 {
			t.Errorf("predicted %v, want nothing", ag.Persisted)
		}
	})
	t.Run("KoP cannot be asked: refused", func(t *testing.T) {
		pl := plan(t, fakes.NewMemReader(8).Commit(commit), errFetcher{errors.New("dial tcp: connection refused")}, false)
		if b := pl.Bundles[0]; !b.Refused || !b.Losses[0].Unknown {
			t.Fatalf("%+v", b)
		}
	})
	t.Run("KoP loading or not coordinator: serves nothing, reload allowed", func(t *testing.T) {
		pl := plan(t, fakes.NewMemReader(8).Commit(commit), errFetcher{kerr.NotCoordinator}, false)
		if b := pl.Bundles[0]; b.Refused {
			t.Fatalf("%+v", b)
		}
	})
}

// txnReader adds a transactional commit of group without its marker (as KoP's loader sees
// it: the marker is a Pulsar marker entry no reader gets) to a MemReader.
type txnReader struct {
	*fakes.MemReader
	group  string
	offset int64
	once   sync.Once // the planner reads partitions concurrently
}

func (r *txnReader) ReadPartition(ctx context.Context, p int32, fn func(loader.Message) error) error {
	r.once.Do(func() {
		c := kop.OffsetCommit{Group: r.group, Topic: topic1, Partition: 0, Offset: r.offset}
		r.Append(loader.PartitionFor(r.group, 8), loader.Message{Key: []byte("k"), Value: kop.EncodeTxnBatch(kop.EncodeKey(c), kop.EncodeValue(c), 42)})
	})
	return r.MemReader.ReadPartition(ctx, p, fn)
}

// The invariant, over generated offsets-topic histories: whatever a reload does, a row KoP
// serves never ends older or absent unless the plan refused the bundle. KoP's cache is
// modelled as its live path does it (commits apply, transactional ones on COMMIT, expiry
// and tombstones remove); after a reload it is exactly what the loader model predicts.
func TestReloadNeverMakesItWorse(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	groups := []string{groupIn("a", 3, 8), groupIn("b", 3, 8), groupIn("c", 7, 8)}
	for iter := range 300 {
		rd := fakes.NewMemReader(8)
		cache := map[string]map[int32]int64{}
		set := func(g string, p int32, o int64) {
			if cache[g] == nil {
				cache[g] = map[int32]int64{}
			}
			cache[g][p] = o
		}
		var history []string
		for step := range 2 + r.IntN(12) {
			g := groups[r.IntN(len(groups))]
			p := int32(r.IntN(2))
			o := int64(r.IntN(1000))
			part := loader.PartitionFor(g, 8)
			c := kop.OffsetCommit{Group: g, Topic: topic1, Partition: p, Offset: o}
			switch k := r.IntN(10); {
			case k < 4: // a plain commit: topic and cache
				rd.Commit(c)
				set(g, p, o)
				history = append(history, fmt.Sprintf("commit %s/%d=%d", g, p, o))
			case k < 6: // a transactional commit: the live path applies it, its marker is invisible
				rd.Append(part, loader.Message{Key: []byte("k"), Value: kop.EncodeTxnBatch(kop.EncodeKey(c), kop.EncodeValue(c), int64(100+step))})
				set(g, p, o)
				history = append(history, fmt.Sprintf("txn %s/%d=%d", g, p, o))
			case k < 7: // a tombstone (deletion or a replicated expiry)
				c.Tombstone = true
				rd.Commit(c)
				delete(cache[g], p)
				history = append(history, fmt.Sprintf("tombstone %s/%d", g, p))
			case k < 8: // a commit replicated in behind KoP's back: topic only
				rd.Commit(c)
				history = append(history, fmt.Sprintf("replicated %s/%d=%d", g, p, o))
			case k < 9: // a record KoP cannot parse
				rd.Append(part, loader.Message{Key: []byte("raw"), Value: []byte("not a record batch")})
				history = append(history, fmt.Sprintf("poison %d", part))
			default: // the cache alone moves (a commit the check read before it landed)
				set(g, p, o+1)
				history = append(history, fmt.Sprintf("cache-only %s/%d=%d", g, p, o+1))
			}
		}
		f := staticFetcher{}
		for g, ps := range cache {
			for p, o := range ps {
				f[g] = append(f[g], TopicOffset{Topic: "topic-1", Partition: p, Offset: o})
			}
		}
		pl, err := (&Planner{Cluster: scus, Admin: fakes.NewAdmin("scus"), Reader: rd, Describers: map[string]GroupDescriber{"scus": &staticDescriber{}}, Fetcher: f}).
			Plan(context.Background(), Request{Partitions: []int32{3, 7}})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range pl.Executable() {
			for _, ag := range pl.GroupsIn(b.Range) {
				after := map[int32]int64{}
				for _, o := range ag.Persisted {
					after[o.Partition] = o.Offset
				}
				for p, before := range cache[ag.Group] {
					if a, ok := after[p]; !ok || a < before {
						t.Fatalf("iteration %d: bundle %s reloaded although %s/%d goes from %d to %v (ok %v)\nhistory: %s",
							iter, b.Range, ag.Group, p, before, a, ok, strings.Join(history, ", "))
					}
				}
			}
		}
	}
}

// kopModel is a fake KoP for executor tests: a cache per group, offsets partitions that
// answer NOT_COORDINATOR (stuck) until unloaded `heal` times.
type kopModel struct {
	mu      sync.Mutex
	cache   map[string][]TopicOffset
	stuck   map[int32]int // partition -> unloads still needed before it answers
	unloads int
	onFetch func(group string)
}

func (k *kopModel) FetchOffsets(_ context.Context, g string) ([]TopicOffset, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.onFetch != nil {
		k.onFetch(g)
	}
	if k.stuck[loader.PartitionFor(g, 8)] > 0 {
		return nil, kerr.NotCoordinator
	}
	return append([]TopicOffset{}, k.cache[g]...), nil
}

func (k *kopModel) unloaded() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.unloads++
	for p, n := range k.stuck {
		if n > 0 {
			k.stuck[p] = n - 1
		}
	}
}

// executeOnModel plans the reload of g on scus, its KoP the model k, and executes it with
// Executor.Wait wait.
func executeOnModel(t *testing.T, fa *fakes.Admin, rd *fakes.MemReader, k *kopModel, g string, wait time.Duration) *Execution {
	t.Helper()
	pl, err := (&Planner{Cluster: scus, Admin: fa, Reader: rd, Describers: map[string]GroupDescriber{"scus": &staticDescriber{}}, Fetcher: k}).
		Plan(context.Background(), Request{Groups: []string{g}})
	if err != nil {
		t.Fatal(err)
	}
	return (&Executor{Cluster: scus, Admin: fa, Fetcher: k, Reader: rd, Wait: wait, PollInterval: 10 * time.Millisecond}).
		Execute(context.Background(), pl, pl.Executable())
}

func TestExecutePacedUnloads(t *testing.T) {
	g := groupIn("g", 3, 8)
	rd := fakes.NewMemReader(8).Commit(kop.OffsetCommit{Group: g, Topic: topic1, Partition: 0, Offset: 10900})
	run := func(t *testing.T, stuckFor int) (*Execution, *fakes.Admin) {
		t.Helper()
		fa := fakes.NewAdmin("scus")
		k := &kopModel{cache: map[string][]TopicOffset{g: {{Topic: "topic-1", Partition: 0, Offset: 500}}}, stuck: map[int32]int{}}
		fa.OnUnload = func(string) {
			k.unloaded()
			k.mu.Lock()
			k.cache[g] = []TopicOffset{{Topic: "topic-1", Partition: 0, Offset: 10900}}
			// Partition 7 of the same bundle stays unloaded ("Already loading") for a while.
			if k.unloads == 1 {
				k.stuck[7] = stuckFor
			}
			k.mu.Unlock()
		}
		return executeOnModel(t, fa, rd, k, g, 200*time.Millisecond), fa
	}
	t.Run("a partition left unloaded is unloaded and looked up again", func(t *testing.T) {
		ex, fa := run(t, 1) // the second unload heals it
		if ex.ExitCode != 0 || ex.Bundles[0].Status != BundleVerified {
			t.Fatalf("exit %d %+v", ex.ExitCode, ex.Bundles)
		}
		if n := strings.Count(strings.Join(fa.Calls(), "\n"), "unload "); n != 2 {
			t.Errorf("%d unloads, want 2: %v", n, fa.Calls())
		}
	})
	t.Run("a partition that stays unloaded is named with the fix", func(t *testing.T) {
		ex, _ := run(t, 100)
		b := ex.Bundles[0]
		if ex.ExitCode != 3 || b.Status != BundleLoadFailed || !strings.Contains(b.Error, "offsets partitions [7]") ||
			!strings.Contains(b.Error, "kop-offsets reload --cluster scus --partition 7 --yes") {
			t.Fatalf("exit %d %+v", ex.ExitCode, b)
		}
	})
}

func TestExecuteFailedUnloadIsChecked(t *testing.T) {
	g := groupIn("g", 3, 8)
	rd := fakes.NewMemReader(8).Commit(kop.OffsetCommit{Group: g, Topic: topic1, Partition: 0, Offset: 10900})
	fa := fakes.NewAdmin("scus")
	fa.UnloadErr[b2] = errors.New("500 Internal Server Error")
	k := &kopModel{cache: map[string][]TopicOffset{}, stuck: map[int32]int{}} // KoP dropped the groups
	ex := executeOnModel(t, fa, rd, k, g, 100*time.Millisecond)
	b := ex.Bundles[0]
	if ex.ExitCode != 3 || b.Status != BundleUnloadFailed || !b.Loaded || !strings.Contains(b.Error, "KoP drops a bundle's groups even when its unload fails") {
		t.Fatalf("exit %d %+v", ex.ExitCode, b)
	}
	if gr := ex.Groups[0]; gr.Status != GroupCacheDiffers || gr.After == nil {
		t.Errorf("the group was not checked after the failed unload: %+v", gr)
	}
}

func TestExecuteRechecksLossBeforeUnload(t *testing.T) {
	g, rd, fa, k, pl := stalePlan(t)
	k.cache[g] = []TopicOffset{{Topic: "topic-1", Partition: 0, Offset: 20000}} // a commit after the plan
	ex := (&Executor{Cluster: scus, Admin: fa, Fetcher: k, Reader: rd, Wait: 100 * time.Millisecond}).Execute(context.Background(), pl, pl.Executable())
	if b := ex.Bundles[0]; ex.ExitCode != 4 || b.Status != BundleRefused || b.Unloaded || len(fa.Calls()) != len(slices.DeleteFunc(fa.Calls(), func(c string) bool { return strings.HasPrefix(c, "unload") })) {
		t.Fatalf("exit %d %+v calls %v", ex.ExitCode, b, fa.Calls())
	}
}
