package watch

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/lease"
	"github.com/kop-offsets/kop-offsets/internal/survey"
)

// fakeGuard counts the guard calls and refuses with err.
type fakeGuard struct {
	mu            sync.Mutex
	err           error
	before, after int
	heldDuring    []bool // whether the guard was held at each Reload
}

func (g *fakeGuard) BeforeWrite(context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.before++
	return g.err
}

func (g *fakeGuard) AfterWrite() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.after++
}

func (g *fakeGuard) held() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err == nil && g.before > g.after
}

// guardedEnv is newEnv with wus's reloader behind g.
func guardedEnv(t *testing.T, g *fakeGuard) *env {
	e := newEnv(t, Options{Repair: true})
	e.reloader.onReload = func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.heldDuring = append(g.heldDuring, g.err == nil && g.before > g.after)
	}
	e.w = New([]Cluster{
		{Name: "scus", KafkaNamespace: "public/default", Tailer: e.scus, Fetcher: fetcher(t, e.kScus), Replication: e.repl},
		{Name: "wus", KafkaNamespace: "public/default", Tailer: e.wus, Fetcher: fetcher(t, e.kWus), Replication: survey.StaticReplication{},
			Reloader: GuardedReloader{Reloader: e.reloader, Guard: g}},
	}, Options{Repair: true, Now: e.clock.Now, Backoff: 10 * time.Millisecond, CallTimeout: 5 * time.Second,
		Logger: slog.New(slog.NewJSONHandler(syncWriter{e.logs}, nil))})
	return e
}

func TestRepairHoldsTheLeaseOnlyWhileItWrites(t *testing.T) {
	g := &fakeGuard{}
	e := guardedEnv(t, g)
	staleOnWus(e, "orders")
	e.start()
	e.cycleUntilReady()
	e.cycleUntil("reloaded", func(*survey.Report) bool { return len(e.reloader.reloads()) > 0 })
	if len(g.heldDuring) != 1 || !g.heldDuring[0] {
		t.Errorf("lease held during the reloads: %v, want [true]", g.heldDuring)
	}
	if g.held() || g.before != 1 || g.after != 1 {
		t.Errorf("guard taken %d, given back %d times; want 1, 1 (given back after the cycle)", g.before, g.after)
	}
}

func TestRepairRefusesWhileAnotherProcessHoldsTheLease(t *testing.T) {
	g := &fakeGuard{err: &lease.HeldError{Cluster: "wus", Topic: "persistent://public/kop-offsets/writer-lease"}}
	e := guardedEnv(t, g)
	staleOnWus(e, "orders")
	e.start()
	e.cycleUntilReady()
	e.cycleUntil("refused", func(*survey.Report) bool { return refusals(e, "lease_held") > 0 })
	if got := e.reloader.reloads(); len(got) != 0 {
		t.Errorf("reloaded without the lease: %v", got)
	}
	if g.after != 0 {
		t.Errorf("a lease never taken was given back %d times", g.after)
	}
	// The lease frees up: the next cycle reloads.
	g.mu.Lock()
	g.err = nil
	g.mu.Unlock()
	e.cycleUntil("reloaded", func(*survey.Report) bool { return len(e.reloader.reloads()) > 0 })
}

func TestRepairCountsOtherLeaseFailures(t *testing.T) {
	g := &fakeGuard{err: io.ErrUnexpectedEOF}
	e := guardedEnv(t, g)
	staleOnWus(e, "orders")
	e.start()
	e.cycleUntilReady()
	e.cycleUntil("refused", func(*survey.Report) bool { return refusals(e, "lease_failed") > 0 })
	if refusals(e, "lease_held") != 0 || len(e.reloader.reloads()) != 0 {
		t.Errorf("lease_held %v, reloads %v", refusals(e, "lease_held"), e.reloader.reloads())
	}
}

func get(t *testing.T, w *Watcher, path string) (int, string) {
	t.Helper()
	srv := httptest.NewServer(Handler(w))
	defer srv.Close()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestReadyzNotReadyWhileEveryClusterIsDown(t *testing.T) {
	e := newEnv(t, Options{})
	e.scus.commit("", commit("orders", 0, 500))
	e.wus.commit("scus", commit("orders", 0, 500))
	e.start()
	e.cycleUntilReady()
	e.cycleUntil("initial", persistedIs("orders", "wus", 500))
	if code, body := get(t, e.w, "/readyz"); code != http.StatusOK {
		t.Fatalf("both up: /readyz %d %s", code, body)
	}

	e.wus.setDown(errDown)
	e.w.Cycle(e.ctx)
	if code, body := get(t, e.w, "/readyz"); code != http.StatusOK {
		t.Errorf("one down: /readyz %d %s, want 200", code, body)
	}
	e.scus.setDown(errDown)
	e.w.Cycle(e.ctx)
	code, body := get(t, e.w, "/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "every cluster is down") {
		t.Errorf("all down: /readyz %d %q, want 503 naming it", code, body)
	}
	if code, _ := get(t, e.w, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz %d while clusters are down: the loop runs, it is alive", code)
	}

	e.scus.setDown(nil)
	e.w.Cycle(e.ctx)
	if code, body := get(t, e.w, "/readyz"); code != http.StatusOK {
		t.Errorf("scus back: /readyz %d %s", code, body)
	}
}
