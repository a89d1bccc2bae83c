package failover

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/reload"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

// requestCounter counts the Kafka requests a client sends, by API key (a kgo hook).
type requestCounter struct {
	mu sync.Mutex
	n  map[int16]int
}

func (c *requestCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, _ error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[key]++
}

// take returns the counts since the last call, as "OffsetFetch 12, Metadata 3".
func (c *requestCounter) take() (map[int16]int, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	got := c.n
	c.n = map[int16]int{}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(got)) {
		parts = append(parts, fmt.Sprintf("%s %d", kmsg.NameForKey(k), got[k]))
	}
	return got, strings.Join(parts, ", ")
}

// disaster is wus after scus's region is gone at fleet scale: n groups, each with keys
// topics whose scus commit (40) was replicated and kept (aligned: 40 on wus too), and a
// KoP that serves none of them until its bundle is looked up (it then loads what the offsets
// topic holds, as KoP's loader does).
type disaster struct {
	planner  *Planner
	executor *Executor
	kop      *fakes.KoP
	admin    *fakes.Admin
	requests *requestCounter
}

func newDisaster(t testing.TB, n, keys int) *disaster {
	at := time.Now().Add(-time.Minute)
	var topics []string
	for i := range keys {
		topics = append(topics, fmt.Sprintf("t%d", i))
	}
	dst := fakes.NewMemReader(8)
	for i := range n {
		g := fmt.Sprintf("g%06d", i)
		var cs []kop.OffsetCommit
		var sources []int64
		for _, tp := range topics {
			cs = append(cs, kop.OffsetCommit{Group: g, Topic: "persistent://public/default/" + tp, Offset: 40, CommitTime: at})
			sources = append(sources, 40)
		}
		dst.Replicated("scus", cs...).Kept(loader.KeptMark{From: "scus", Sources: sources, At: at}, cs...)
	}
	wk := fakes.NewKoP(t, topics...)
	admin := fakes.NewAdmin("wus")
	admin.OnLookup = func(topic string) { loadPartition(t, wk, dst, topic) }
	rc := &requestCounter{n: map[int16]int{}}
	cl := wk.Client(t, kgo.WithHooks(rc))
	kg := kop.KafkaGroups{Admin: wk.Admin(t, kgo.WithHooks(rc)), Client: cl, KafkaNamespace: "public/default"}
	ref := reload.ClusterRef{Name: "wus"}
	rp := &reload.Planner{Cluster: ref, Admin: admin, Reader: dst, Describers: map[string]reload.GroupDescriber{"wus": kg}, Fetcher: kg}
	rx := &reload.Executor{Cluster: ref, Admin: admin, Fetcher: kg, Reader: dst, Wait: 30 * time.Second, PollInterval: 50 * time.Millisecond}
	from := Side{Name: "scus", KafkaNamespace: "public/default"}
	to := Side{Name: "wus", KafkaNamespace: "public/default", Reader: dst, Groups: kg}
	return &disaster{
		planner:  &Planner{From: from, To: to, SourceDown: errors.New("said gone")},
		executor: &Executor{From: from, To: to, Reloader: SessionReloader{Planner: rp, Executor: rx}, Writer: &fakeTarget{}, Holder: &fakeTarget{}},
		kop:      wk, admin: admin, requests: rc,
	}
}

// loadPartition is KoP loading one offsets partition after a lookup: it serves what the
// loader model predicts from the topic.
func loadPartition(t testing.TB, k *fakes.KoP, r loader.OffsetTopicReader, topic string) {
	i := strings.LastIndex(topic, "-partition-")
	p, err := strconv.Atoi(topic[i+len("-partition-"):])
	if err != nil {
		t.Errorf("lookup of %s: %v", topic, err)
		return
	}
	po, err := loader.ReplayPartition(context.Background(), r, int32(p), 0)
	if err != nil {
		t.Errorf("replay of partition %d: %v", p, err)
		return
	}
	for co := range po.AllOffsets() {
		k.Set(co.Group, loader.ShortName(co.Topic, "public/default"), co.Partition, co.Offset)
	}
}

// TestDisasterScaleFakes runs `failover --source-gone` of many groups against fakes and
// counts the Kafka requests of each phase: the plan, the reloads (with their verification)
// and the proof must ask KoP about many groups per request, not one each (issue 47: 10,000
// groups took 92 s on the lab, a request or two per group per phase). FAILOVER_SCALE sets
// the groups (default 400) and FAILOVER_FETCH_DELAY what each OffsetFetch answer costs KoP.
func TestDisasterScaleFakes(t *testing.T) {
	n := 400
	if v, err := strconv.Atoi(os.Getenv("FAILOVER_SCALE")); err == nil && v > 0 {
		n = v
	}
	const keys = 5
	d := newDisaster(t, n, keys)
	if v, err := time.ParseDuration(os.Getenv("FAILOVER_FETCH_DELAY")); err == nil {
		d.kop.SetDelay(v)
	}
	ctx := context.Background()
	start := time.Now()
	d.executor.Reloader.(SessionReloader).Executor.Log = func(format string, a ...any) {
		t.Logf("+%.2fs "+format, append([]any{time.Since(start).Seconds()}, a...)...)
	}
	plan, err := d.planner.Plan(ctx, Scope{})
	if err != nil {
		t.Fatal(err)
	}
	planned := time.Since(start)
	planReqs, planText := d.requests.take()
	res := d.executor.Apply(ctx, plan)
	applied := time.Since(start) - planned
	applyReqs, applyText := d.requests.take()
	t.Logf("%d groups x %d keys: plan %s (%s); apply %s (%s); exit %d %s", n, keys, planned.Round(time.Millisecond), planText,
		applied.Round(time.Millisecond), applyText, res.ExitCode, res.Error)
	if res.ExitCode != 0 || plan.Landings[LandingKept] != n*keys || res.Proven != n*keys {
		t.Fatalf("exit %d (%s), landings %v, %d rows proven; want every row kept and proven", res.ExitCode, res.Error, plan.Landings, res.Proven)
	}
	for _, k := range []string{"plan", "apply"} {
		reqs := map[string]map[int16]int{"plan": planReqs, "apply": applyReqs}[k]
		// Batched: a request asks up to kop.DefaultBatchSize groups; the bound leaves room for
		// the probes of each offsets partition and the polls of the verification.
		if got, most := reqs[kmsg.OffsetFetch.Int16()], 4*n/kop.DefaultBatchSize+64; got > most {
			t.Errorf("%s: %d OffsetFetch requests for %d groups, want at most %d (batched)", k, got, n, most)
		}
		if got, most := reqs[kmsg.Metadata.Int16()], 64; got > most {
			t.Errorf("%s: %d Metadata requests, want at most %d (none per group)", k, got, most)
		}
	}
}
