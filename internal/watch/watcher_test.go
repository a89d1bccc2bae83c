package watch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/reload"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

type env struct {
	t         *testing.T
	scus, wus *memTail
	kScus     *fakes.KoP
	kWus      *fakes.KoP
	repl      survey.StaticReplication // scus -> wus, by offsets partition
	reloader  *fakeReloader
	clock     *clock
	logs      *bytes.Buffer
	w         *Watcher
	cancel    context.CancelFunc
	ctx       context.Context
	waitStop  func()
}

const nParts = 4

func newEnv(t *testing.T, o Options) *env {
	t.Helper()
	e := &env{t: t, scus: newMemTail(nParts), wus: newMemTail(nParts), kScus: fakes.NewKoP(t), kWus: fakes.NewKoP(t),
		repl: survey.StaticReplication{}, reloader: &fakeReloader{n: nParts}, clock: &clock{t: time.Unix(1_800_000_000, 0)},
		logs: &bytes.Buffer{}}
	o.Now = e.clock.Now
	o.Logger = slog.New(slog.NewJSONHandler(syncWriter{e.logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	o.Backoff = 10 * time.Millisecond
	o.CallTimeout = 5 * time.Second
	e.w = New([]Cluster{
		{Name: "scus", KafkaNamespace: "public/default", Tailer: e.scus, Fetcher: fetcher(t, e.kScus), Replication: e.repl},
		{Name: "wus", KafkaNamespace: "public/default", Tailer: e.wus, Fetcher: fetcher(t, e.kWus), Replication: survey.StaticReplication{}, Reloader: e.reloader},
	}, o)
	return e
}

type syncWriter struct{ b *bytes.Buffer }

var logMu = make(chan struct{}, 1)

func (s syncWriter) Write(p []byte) (int, error) {
	logMu <- struct{}{}
	defer func() { <-logMu }()
	return s.b.Write(p)
}

// logText is what was logged so far (the sync engine logs from its own goroutine).
func (e *env) logText() string {
	logMu <- struct{}{}
	defer func() { <-logMu }()
	return e.logs.String()
}

func (e *env) logLines() []map[string]any {
	logMu <- struct{}{}
	defer func() { <-logMu }()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(e.logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			e.t.Fatalf("log line is not JSON: %q", l)
		}
		out = append(out, m)
	}
	return out
}

func (e *env) start() {
	e.ctx, e.cancel = context.WithCancel(context.Background())
	e.waitStop = e.w.Start(e.ctx)
	e.t.Cleanup(func() { e.cancel(); e.waitStop() })
}

// cycleUntilReady runs cycles until the watcher is ready.
func (e *env) cycleUntilReady() {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		e.w.Cycle(e.ctx)
		if e.w.Ready() {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatal("not ready after 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cycleUntil runs cycles until cond holds on the report (followers deliver asynchronously).
func (e *env) cycleUntil(what string, cond func(*survey.Report) bool) *survey.Report {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if rep := e.w.Report(); rep != nil && cond(rep) {
			return rep
		}
		e.w.Cycle(e.ctx)
		if rep := e.w.Report(); rep != nil && cond(rep) {
			return rep
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: not reached after 5s; report %+v", what, e.w.Report())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func cellOf(rep *survey.Report, group, cluster string) (verdict.Cell, bool) {
	for _, r := range rep.Rows {
		if r.Group == group {
			c, ok := r.Lookup(cluster)
			return c, ok
		}
	}
	return verdict.Cell{}, false
}

func persistedIs(group, cluster string, v int64) func(*survey.Report) bool {
	return func(rep *survey.Report) bool {
		c, ok := cellOf(rep, group, cluster)
		return ok && c.Persisted != nil && *c.Persisted == v
	}
}

func TestIncrementalFollowing(t *testing.T) {
	e := newEnv(t, Options{Resync: time.Hour})
	for _, g := range []string{"a", "b", "c", "d", "e"} {
		e.scus.commit("", commit(g, 0, 100))
		e.kScus.Set(g, "topic-1", 0, 100)
	}
	e.start()
	e.cycleUntilReady()
	rep := e.cycleUntil("initial", persistedIs("e", "scus", 100))
	if len(rep.Rows) != 5 {
		t.Fatalf("rows: %+v", rep.Rows)
	}
	if c, _ := cellOf(rep, "a", "scus"); c.Status != verdict.StatusOK || *c.Cached != 100 {
		t.Errorf("a on scus: %+v", c)
	}
	e.kScus.TakeAsked()
	// A cycle with nothing new asks KoP nothing.
	e.w.Cycle(e.ctx)
	if got := e.kScus.TakeAsked(); len(got) != 0 {
		t.Errorf("idle cycle asked %v", got)
	}
	// One new commit: only its group is asked, and no partition is read again.
	e.scus.commit("", commit("c", 0, 250))
	e.kScus.Set("c", "topic-1", 0, 250)
	rep = e.cycleUntil("commit of c", persistedIs("c", "scus", 250))
	if got := e.kScus.TakeAsked(); !slices.Equal(got, []string{"c"}) {
		t.Errorf("asked %v, want [c]", got)
	}
	for p := range int32(nParts) {
		if n := e.scus.tailCalls(p); n != 1 {
			t.Errorf("partition %d read %d times, want once (followed, not replayed)", p, n)
		}
	}
	if c, _ := cellOf(rep, "c", "scus"); c.Status != verdict.StatusOK || *c.Cached != 250 {
		t.Errorf("c: %+v", c)
	}
	if n := testutil.ToFloat64(e.w.m.messages.WithLabelValues("scus")); n != 1 {
		t.Errorf("messages after the replay: %v, want 1", n)
	}
	// A resync asks every group again.
	e.clock.add(2 * time.Hour)
	e.w.Cycle(e.ctx)
	if got := e.kScus.TakeAsked(); len(got) != 5 {
		t.Errorf("resync asked %v", got)
	}
}

// ordersAgreeAt500 starts a watcher on both clusters where group orders committed 500 on scus,
// replicated to wus, and both KoPs serve it, and cycles it until wus's persisted 500 is seen.
func ordersAgreeAt500(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, Options{})
	e.startWithOrders(500, 500)
	e.cycleUntil("initial", persistedIs("orders", "wus", 500))
	return e
}

// startWithOrders starts e with orders committed at committed on scus, replicated to wus,
// KoP on scus serving it and KoP on wus serving wusServes, and cycles until ready.
func (e *env) startWithOrders(committed, wusServes int64) {
	e.t.Helper()
	e.scus.commit("", commit("orders", 0, committed))
	e.wus.commit("scus", commit("orders", 0, committed))
	e.kScus.Set("orders", "topic-1", 0, committed)
	e.kWus.Set("orders", "topic-1", 0, wusServes)
	e.start()
	e.cycleUntilReady()
}

func TestReplicatedCommitStaleness(t *testing.T) {
	e := ordersAgreeAt500(t)

	// The user's story: scus commits 10900, it replicates to wus, KoP on wus keeps 500.
	e.scus.commit("", commit("orders", 0, 10900))
	e.kScus.Set("orders", "topic-1", 0, 10900)
	e.wus.commit("scus", commit("orders", 0, 10900))
	rep := e.cycleUntil("replicated", persistedIs("orders", "wus", 10900))
	if c, _ := cellOf(rep, "orders", "wus"); c.Status != verdict.StatusStaleCache || *c.Cached != 500 {
		t.Errorf("wus: %+v", c)
	}
	if n := testutil.ToFloat64(e.w.m.replicated.WithLabelValues("wus", "scus")); n != 1 {
		t.Errorf("replicated commits: %v", n)
	}
	e.clock.add(90 * time.Second)
	e.w.Cycle(e.ctx)
	if s := testutil.ToFloat64(e.w.m.staleness.WithLabelValues("wus")); s != 90 {
		t.Errorf("staleness %v, want 90", s)
	}
	if s := testutil.ToFloat64(e.w.m.staleness.WithLabelValues("scus")); s != 0 {
		t.Errorf("scus staleness %v", s)
	}
	// KoP on wus serves it (e.g. after a reload): the episode ends and is observed.
	e.kWus.Set("orders", "topic-1", 0, 10900)
	e.clock.add(30 * time.Second)
	e.w.Cycle(e.ctx)
	if s := testutil.ToFloat64(e.w.m.staleness.WithLabelValues("wus")); s != 0 {
		t.Errorf("staleness after serving %v", s)
	}
	if n := testutil.CollectAndCount(e.w.m.stalenessServed); n != 1 {
		t.Errorf("served histogram series %d", n)
	}
	body := scrape(t, e.w, "/metrics")
	for _, want := range []string{
		`kop_offsets_staleness_served_seconds_sum{cluster="wus"} 120`,
		`kop_offsets_persisted_offset{cluster="wus",group="orders",partition="0",topic="topic-1"} 10900`,
		`kop_offsets_cached_offset{cluster="wus",group="orders",partition="0",topic="topic-1"} 10900`,
		`kop_offsets_status{cluster="wus",group="orders",partition="0",status="ok",topic="topic-1"} 1`,
		`kop_offsets_replicated_commits_total{cluster="wus",from="scus"} 1`,
		`kop_offsets_watch_cluster_up{cluster="wus"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	var served bool
	for _, l := range e.logLines() {
		if l["msg"] == "replicated commit served" && l["cluster"] == "wus" && l["stalenessSeconds"] == 120.0 {
			served = true
		}
	}
	if !served {
		t.Errorf("no served log line:\n%s", e.logs)
	}
}

func scrape(t *testing.T, w *Watcher, path string) string {
	t.Helper()
	code, body := get(t, w, path)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	return body
}

func TestClusterDownOthersUnaffected(t *testing.T) {
	e := ordersAgreeAt500(t)

	e.wus.setDown(errDown)
	e.scus.commit("", commit("orders", 0, 600))
	e.kScus.Set("orders", "topic-1", 0, 600)
	rep := e.cycleUntil("scus goes on", persistedIs("orders", "scus", 600))
	if c, _ := cellOf(rep, "orders", "wus"); c.Status != verdict.StatusError {
		t.Errorf("wus cell: %+v", c)
	}
	if c, _ := cellOf(rep, "orders", "scus"); c.Status != verdict.StatusOK {
		t.Errorf("scus cell: %+v", c)
	}
	if rep.ExitCode != outcome.Unreachable {
		t.Errorf("exit %d", rep.ExitCode)
	}
	body := scrape(t, e.w, "/metrics")
	for _, want := range []string{`kop_offsets_watch_cluster_up{cluster="wus"} 0`, `kop_offsets_watch_cluster_up{cluster="scus"} 1`,
		`kop_offsets_watch_errors_total{cluster="wus",endpoint="admin"}`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	scrape(t, e.w, "/healthz")
	scrape(t, e.w, "/readyz") // a cluster that is down does not hold readiness back

	// Back up: marked up again.
	e.wus.setDown(nil)
	e.w.Cycle(e.ctx)
	if v := testutil.ToFloat64(e.w.m.up.WithLabelValues("wus")); v != 1 {
		t.Errorf("wus up %v after it came back", v)
	}
	var down, up bool
	for _, l := range e.logLines() {
		down = down || (l["msg"] == "cluster down" && l["cluster"] == "wus")
		up = up || (l["msg"] == "cluster up" && l["cluster"] == "wus")
	}
	if !down || !up {
		t.Errorf("logs down=%v up=%v", down, up)
	}
}

func TestReaderFailureReplaysAgainWithBackoff(t *testing.T) {
	e := newEnv(t, Options{})
	e.wus.tailEr = errDown
	e.scus.commit("", commit("orders", 0, 500))
	e.start()
	deadline := time.Now().Add(5 * time.Second)
	for e.wus.tailCalls(0) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("tail retried %d times", e.wus.tailCalls(0))
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.w.Cycle(e.ctx)
	if v := testutil.ToFloat64(e.w.m.up.WithLabelValues("wus")); v != 0 {
		t.Errorf("wus up %v with failing readers", v)
	}
	if e.w.Ready() != false {
		// wus answers its admin API but cannot be read: up is 0, so readiness is not held.
		t.Log("ready with wus failing")
	}
	e.wus.mu.Lock()
	e.wus.tailEr = nil
	e.wus.mu.Unlock()
	e.wus.commit("scus", commit("orders", 0, 500))
	e.cycleUntil("wus replayed", persistedIs("orders", "wus", 500))
	if v := testutil.ToFloat64(e.w.m.up.WithLabelValues("wus")); v != 1 {
		t.Errorf("wus up %v after recovery", v)
	}
}

func TestRunStopsPromptly(t *testing.T) {
	e := newEnv(t, Options{Interval: 50 * time.Millisecond})
	e.scus.commit("", commit("orders", 0, 500))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.w.Run(ctx) }()
	time.Sleep(300 * time.Millisecond)
	t0 := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(6 * time.Second):
		t.Fatal("Run did not return within 6s of cancel")
	}
	if d := time.Since(t0); d > 3*time.Second {
		t.Errorf("stopped in %v", d)
	}
	if e.w.cycles.Load() < 2 {
		t.Errorf("cycles %d", e.w.cycles.Load())
	}
}

// staleOnWus sets up the stale cache of the user's story on wus for group g.
func staleOnWus(e *env, g string) {
	e.scus.commit("", commit(g, 0, 10900))
	e.wus.commit("scus", commit(g, 0, 10900))
	e.kScus.Set(g, "topic-1", 0, 10900)
	e.kWus.Set(g, "topic-1", 0, 500)
}

func refusals(e *env, reason string) float64 {
	return testutil.ToFloat64(e.w.m.repair.Refused.WithLabelValues("wus", reason))
}

func TestRepairReloadsStaleBundleThenCooldown(t *testing.T) {
	e := newEnv(t, Options{Repair: true, Cooldown: 10 * time.Minute})
	staleOnWus(e, "orders")
	e.start()
	e.cycleUntilReady()
	e.cycleUntil("stale", func(rep *survey.Report) bool {
		c, _ := cellOf(rep, "orders", "wus")
		return c.Status == verdict.StatusStaleCache
	})
	if got := e.reloader.reloads(); len(got) != 1 {
		t.Fatalf("reloads %v", got)
	}
	// Still stale next cycle (the fake reload changes nothing): the cooldown refuses it.
	e.clock.add(time.Minute)
	e.w.Cycle(e.ctx)
	if got := e.reloader.reloads(); len(got) != 1 {
		t.Errorf("reloaded again within the cooldown: %v", got)
	}
	if refusals(e, "cooldown") < 1 {
		t.Errorf("no cooldown refusal counted")
	}
	e.clock.add(10 * time.Minute)
	e.w.Cycle(e.ctx)
	if got := e.reloader.reloads(); len(got) != 2 {
		t.Errorf("not reloaded after the cooldown: %v", got)
	}
	if n := testutil.ToFloat64(e.w.m.repair.Reloads.WithLabelValues("wus", reload.BundleVerified)); n != 2 {
		t.Errorf("reloads counted %v", n)
	}
}

// twoBundles returns two groups whose offsets partitions differ, so that they sit in two
// bundles.
func twoBundles() (g1, g2 string) {
	for _, g := range []string{"g0", "g1", "g2", "g3", "g4", "g5", "g6", "g7"} {
		switch {
		case g1 == "":
			g1 = g
		case loader.PartitionFor(g, nParts) != loader.PartitionFor(g1, nParts) && g2 == "":
			g2 = g
		}
	}
	return g1, g2
}

// reloadsOneOfTwo makes g1 and g2 stale on wus and cycles e until it reloads (what names the
// wait): it must have reloaded one bundle only (why says why, after the reloads) and refused
// the other for reason.
func reloadsOneOfTwo(t *testing.T, e *env, g1, g2, what, why, reason string) {
	t.Helper()
	staleOnWus(e, g1)
	staleOnWus(e, g2)
	e.start()
	e.cycleUntilReady()
	e.cycleUntil(what, func(*survey.Report) bool { return len(e.reloader.reloads()) > 0 })
	if got := e.reloader.reloads(); len(got) != 1 {
		t.Errorf("reloads %v%s", got, why)
	}
	if refusals(e, reason) < 1 {
		t.Errorf("no %s refusal", reason)
	}
}

func TestRepairPolicyRefusals(t *testing.T) {
	// Two stale groups in different bundles, max one bundle per interval.
	g1, g2 := twoBundles()
	t.Run("max bundles", func(t *testing.T) {
		e := newEnv(t, Options{Repair: true})
		reloadsOneOfTwo(t, e, g1, g2, "stale", ", want 1 (--max-bundles 1)", "max_bundles")
	})
	t.Run("backlog", func(t *testing.T) {
		e := newEnv(t, Options{Repair: true})
		staleOnWus(e, g1)
		e.repl[loader.PartitionFor(g1, nParts)] = map[string]verdict.Inbound{"wus": {Backlog: 7, Connected: true}}
		e.start()
		e.cycleUntilReady()
		e.cycleUntil("refused", func(*survey.Report) bool { return refusals(e, "replication_backlog") > 0 })
		if got := e.reloader.reloads(); len(got) != 0 {
			t.Errorf("reloaded with backlog: %v", got)
		}
	})
	t.Run("live on target", func(t *testing.T) {
		e := newEnv(t, Options{Repair: true})
		staleOnWus(e, g1)
		e.reloader.live = map[string]bool{g1: true}
		e.start()
		e.cycleUntilReady()
		e.cycleUntil("refused", func(*survey.Report) bool { return refusals(e, "live_members") > 0 })
		if got := e.reloader.reloads(); len(got) != 0 {
			t.Errorf("reloaded a live bundle: %v", got)
		}
		var logged bool
		for _, l := range e.logLines() {
			logged = logged || (l["msg"] == "reload refused" && l["reason"] == "live_members" && strings.Contains(l["detail"].(string), g1+"@wus"))
		}
		if !logged {
			t.Errorf("refusal not logged:\n%s", e.logs)
		}
	})
	t.Run("dry run", func(t *testing.T) {
		e := newEnv(t, Options{Repair: true, DryRun: true})
		staleOnWus(e, g1)
		e.start()
		e.cycleUntilReady()
		e.cycleUntil("dry", func(*survey.Report) bool {
			return testutil.ToFloat64(e.w.m.repair.Reloads.WithLabelValues("wus", "dry_run")) > 0
		})
		if got := e.reloader.reloads(); len(got) != 0 {
			t.Errorf("dry run reloaded %v", got)
		}
	})
	t.Run("failed reload stops the cycle", func(t *testing.T) {
		e := newEnv(t, Options{Repair: true, MaxBundles: 5})
		e.reloader.result = reload.BundleCacheDiffers
		reloadsOneOfTwo(t, e, g1, g2, "reload", ": the second bundle must wait after a failure", "earlier_bundle_failed")
	})
}

func TestRepairStopsAtShutdown(t *testing.T) {
	e := newEnv(t, Options{Repair: true, MaxBundles: 5})
	g1, g2 := twoBundles()
	staleOnWus(e, g1)
	staleOnWus(e, g2)
	e.start()
	// The signal arrives during the first reload: it finishes, the next is not started.
	e.reloader.onReload = e.cancel
	for i := 0; i < 500 && e.ctx.Err() == nil; i++ {
		e.w.Cycle(e.ctx)
		time.Sleep(10 * time.Millisecond)
	}
	if got := e.reloader.reloads(); len(got) != 1 {
		t.Errorf("reloads %v", got)
	}
	if refusals(e, "stopping") < 1 {
		t.Error("the second bundle was not skipped as stopping")
	}
}

func TestRepairRefusesWhatReloadSaysWouldLoseOffsets(t *testing.T) {
	e := newEnv(t, Options{Repair: true})
	staleOnWus(e, "eos")
	e.w.clusters[1].Reloader = lossReloader{e.reloader}
	e.start()
	e.cycleUntilReady()
	e.cycleUntil("refused", func(*survey.Report) bool { return refusals(e, "would_lose_offsets") > 0 })
	if got := e.reloader.reloads(); len(got) != 0 {
		t.Errorf("reloaded a bundle reload refused: %v", got)
	}
}

// lossReloader plans as fakeReloader, with every bundle refused for a loss.
type lossReloader struct{ *fakeReloader }

func (l lossReloader) Plan(ctx context.Context, groups []string) (*reload.Plan, error) {
	p, err := l.fakeReloader.Plan(ctx, groups)
	for i := range p.Bundles {
		p.Bundles[i].Refused, p.Bundles[i].Reason = true, "a reload would move eos back"
		p.Bundles[i].Losses = []reload.Loss{{}}
	}
	return p, err
}

func TestResyncForgetsGroupsGoneEverywhere(t *testing.T) {
	e := newEnv(t, Options{Resync: time.Hour})
	e.scus.commit("", commit("gone", 0, 1))
	e.kScus.Set("gone", "topic-1", 0, 1)
	e.start()
	e.cycleUntilReady()
	e.cycleUntil("known", persistedIs("gone", "scus", 1))
	if got := e.w.retained(); got.rowGroups != 1 || got.cached != 0 {
		t.Fatalf("retained %+v, want the group's rows and no answer of KoP's (those are the cycle's only)", got)
	}
	// The group is deleted (offset tombstone) and KoP forgets it.
	e.scus.commit("", kop.OffsetCommit{Group: "gone", Topic: topic1, Partition: 0, Tombstone: true})
	e.kScus.Drop("gone")
	e.cycleUntil("deleted", func(rep *survey.Report) bool { return len(rep.Rows) == 0 })
	e.clock.add(2 * time.Hour)
	e.w.Cycle(e.ctx)
	if got := e.w.retained(); got != (retained{}) {
		t.Errorf("retained %+v after a resync, want nothing of the group gone everywhere", got)
	}
}

// TestRepairLiveOnPrimaryStillRepairsStandby: the active-passive case. The group's
// consumers run on scus; reloading its bundle on wus disturbs nobody, so it is reloaded and
// the log says the cache will lag again, and by how much it is behind now.
func TestRepairLiveOnPrimaryStillRepairsStandby(t *testing.T) {
	e := newEnv(t, Options{Repair: true})
	e.reloader.liveElsewhere = map[string]bool{"orders": true}
	staleOnWus(e, "orders")
	e.start()
	e.cycleUntilReady()
	e.cycleUntil("reloaded", func(*survey.Report) bool { return len(e.reloader.reloads()) > 0 })
	var reported bool
	for _, l := range e.logLines() {
		if l["msg"] == "group live on another cluster: reloading anyway, the cache will lag again" &&
			fmt.Sprint(l["liveOn"]) == "[scus]" && l["cluster"] == "wus" && l["behindBy"] == 10400.0 {
			reported = true
		}
	}
	if !reported {
		t.Errorf("live-elsewhere not reported:\n%s", e.logs)
	}
}

// KoP on wus does not coordinate the group (its offsets partition is not served): watch
// --repair reloads that bundle too; only another load brings the partition back.
func TestRepairReloadsUnservedPartition(t *testing.T) {
	fakeCoordinatorWait = 300 * time.Millisecond // every cycle waits that long for the group
	t.Cleanup(func() { fakeCoordinatorWait = 5 * time.Second })
	e := newEnv(t, Options{Repair: true, Cooldown: 10 * time.Minute})
	e.scus.commit("", commit("orders", 0, 10900))
	e.wus.commit("scus", commit("orders", 0, 10900))
	e.kScus.Set("orders", "topic-1", 0, 10900)
	e.kWus.SetUnserved("orders", true)
	e.start()
	e.cycleUntilReady()
	e.cycleUntil("unserved", func(rep *survey.Report) bool {
		c, _ := cellOf(rep, "orders", "wus")
		return c.Status == verdict.StatusCoordinatorUnavailable
	})
	if got := e.reloader.reloads(); len(got) != 1 {
		t.Fatalf("reloads %v", got)
	}
}

// TestChunksKeepOffsetsPartitionsWhole: a cycle asking more than chunkGroups groups handles
// them in chunks of whole offsets partitions (one coordinator wait per partition KoP is
// loading, not one per chunk), every group once, each chunk sorted.
func TestChunksKeepOffsetsPartitionsWhole(t *testing.T) {
	w := New([]Cluster{{Name: "scus", Tailer: newMemTail(nParts)}}, Options{})
	w.clusters[0].n = nParts
	groups := make([]string, 0, 3*chunkGroups)
	for i := range cap(groups) {
		groups = append(groups, fmt.Sprintf("g-%05d", i))
	}
	slices.Sort(groups)
	chunks := w.clusters.chunks(groups)
	if len(chunks) < 2 {
		t.Fatalf("%d chunks of %d groups", len(chunks), len(groups))
	}
	seen := map[string]bool{}
	chunkOf := map[int32]int{}
	for i, ch := range chunks {
		if !slices.IsSorted(ch) || (i < len(chunks)-1 && len(ch) < chunkGroups) {
			t.Errorf("chunk %d: %d groups, sorted %v", i, len(ch), slices.IsSorted(ch))
		}
		for _, g := range ch {
			p := loader.PartitionFor(g, nParts)
			if j, ok := chunkOf[p]; ok && j != i {
				t.Errorf("offsets partition %d in chunks %d and %d", p, j, i)
			}
			chunkOf[p] = i
			if seen[g] {
				t.Errorf("%s twice", g)
			}
			seen[g] = true
		}
	}
	if len(seen) != len(groups) {
		t.Errorf("%d groups in the chunks, want %d", len(seen), len(groups))
	}
	if got := w.clusters.chunks(groups[:10]); len(got) != 1 || len(got[0]) != 10 {
		t.Errorf("10 groups: chunks %v", got)
	}
	if got := w.clusters.chunks(nil); got != nil {
		t.Errorf("no group: chunks %v", got)
	}
}

// TestRowSeries: --row-series all writes the series of every row, not-ok those of rows
// whose status is not ok, none no row's; kop_offsets_watch_rows counts the rows by status in
// every mode, and the rest of /metrics is the same.
func TestRowSeries(t *testing.T) {
	stale := `kop_offsets_status{cluster="wus",group="stale",partition="0",status="stale_cache",topic="topic-1"} 1`
	fine := `kop_offsets_persisted_offset{cluster="scus",group="fine",partition="0",topic="topic-1"} 7`
	counts := []string{`kop_offsets_watch_rows{status="ok"} 1`, `kop_offsets_watch_rows{status="stale_cache"} 1`,
		`kop_offsets_watch_rows{status="expired"} 0`, `kop_offsets_check_exit_code 1`, `kop_offsets_watch_cluster_up{cluster="wus"} 1`}
	for _, tc := range []struct {
		series      RowSeries
		stale, fine bool
	}{{"", true, true}, {RowSeriesAll, true, true}, {RowSeriesNotOK, true, false}, {RowSeriesNone, false, false}} {
		e := newEnv(t, Options{RowSeries: tc.series})
		staleOnWus(e, "stale")
		for _, tl := range []*memTail{e.scus, e.wus} {
			tl.commit("", commit("fine", 0, 7))
		}
		e.kScus.Set("fine", "topic-1", 0, 7)
		e.kWus.Set("fine", "topic-1", 0, 7)
		e.start()
		e.cycleUntilReady()
		e.cycleUntil("stale and fine", func(rep *survey.Report) bool {
			return rep.Summary["stale_cache"] == 1 && rep.Summary["ok"] == 1
		})
		body := scrape(t, e.w, "/metrics")
		if got := strings.Contains(body, stale); got != tc.stale {
			t.Errorf("%q: stale row's series %v, want %v", tc.series, got, tc.stale)
		}
		if got := strings.Contains(body, fine); got != tc.fine {
			t.Errorf("%q: ok row's series %v, want %v", tc.series, got, tc.fine)
		}
		for _, want := range counts {
			if !strings.Contains(body, want) {
				t.Errorf("%q: /metrics lacks %q", tc.series, want)
			}
		}
	}
	if _, err := ParseRowSeries("some"); err == nil {
		t.Error("ParseRowSeries(some): no error")
	}
}
