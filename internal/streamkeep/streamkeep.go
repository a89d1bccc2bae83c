// Package streamkeep keeps a cluster's translations as its offsets topic is read: every
// commit replicated to the cluster makes its group due, and within a few milliseconds the
// group's kept translation is written (package standby), instead of at the next watch cycle.
// A kept translation is a sync into the cluster's own offsets topic, so the engine is sync's
// in small (package streamsync): a Store fed message by message by watch's followers, due
// groups coalesced over a short window, the writes of a step sent together and waited for
// once, under the cluster's writer lease. The re-read bound after a disaster is then the
// replication delay of the offsets topic plus a step, not a watch cycle.
package streamkeep

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/reload"
	"github.com/kop-offsets/kop-offsets/internal/standby"
	"github.com/kop-offsets/kop-offsets/internal/streamsync"
)

// Lease is the cluster's writer lease (*lease.Lease), as sync takes it.
type Lease = streamsync.Lease

// Observer is told what the engine did; its calls come from the engine's goroutine.
type Observer interface {
	// Kept: a step's translations written, and the translations or writes that failed.
	Kept(res standby.Result)
	// WouldKeep: --dry-run, co would be kept.
	WouldKeep(co loader.CommittedOffset)
	// Read: what the translations read so far (after each step that kept).
	Read(stats align.TrackerStats)
	// Paused: the lease is held by another process (err); nothing is kept until it is free.
	// Resumed: the lease was taken again.
	Paused(err error)
	Resumed()
}

// Options shape an Engine.
type Options struct {
	// Accept selects what is kept (watch's --group and --topic).
	Accept func(co loader.CommittedOffset) bool
	// Up reports whether a cluster answers (watch's probe): a source that does not is left
	// for later.
	Up     func(cluster string) bool
	DryRun bool
	// Window coalesces a group's commits (default 5 ms); Idle is how long the lease is kept
	// without a write (default 1 s: a failover with the source gone finds it free);
	// CallTimeout bounds taking the lease (default 10 s).
	Window, Idle, CallTimeout time.Duration
}

// Engine keeps one cluster's translations. Run drives it; the Store's followers and watch's
// cycle (Retry) feed it from other goroutines.
type Engine struct {
	keeper *standby.Keeper
	lease  Lease // nil: none (--no-lease)
	obs    Observer
	o      Options
	store  *streamsync.Store

	mu    sync.Mutex
	due   map[string]struct{}
	retry bool // Retry was called: the Keeper's Again groups are due
	wakeC chan struct{}

	// Run's own state.
	held, paused bool
	lastWrite    time.Time
}

// New is an Engine keeping k's cluster, its Store made for watch to feed.
func New(k *standby.Keeper, l Lease, obs Observer, o Options) *Engine {
	if o.Window <= 0 {
		o.Window = 5 * time.Millisecond
	}
	if o.Idle <= 0 {
		o.Idle = time.Second
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 10 * time.Second
	}
	if o.Accept == nil {
		o.Accept = func(loader.CommittedOffset) bool { return true }
	}
	if o.Up == nil {
		o.Up = func(string) bool { return true }
	}
	e := &Engine{keeper: k, lease: l, obs: obs, o: o, due: map[string]struct{}{}, wakeC: make(chan struct{}, 1)}
	e.store = streamsync.NewStore(k.Cluster, events{e})
	return e
}

// Store is the cluster's offsets topic as the engine reads it, for watch's followers to feed.
func (e *Engine) Store() *streamsync.Store { return e.store }

// Retry makes the groups the Keeper left for later due again (a source that did not answer,
// a failed write, replication of the data behind): watch calls it once a cycle.
func (e *Engine) Retry() {
	e.mu.Lock()
	e.retry = true
	e.mu.Unlock()
	e.wake()
}

// events is the Engine as its Store's Events: every message of a group makes it due (a
// replicated commit to keep, the group's own commit, or the engine's own write, which is
// checked for a newer commit it landed after: loader.Newer).
type events struct{ e *Engine }

func (ev events) Dirty(_ string, groups []string, _ bool) {
	ev.e.mu.Lock()
	for _, g := range groups {
		ev.e.due[g] = struct{}{}
	}
	ev.e.mu.Unlock()
	ev.e.wake()
}

func (ev events) Wake() { ev.e.wake() }

// Received: nothing to count: the keeper keeps replicated commits, not a group's own.
func (ev events) Received(string, string, int) {}

func (e *Engine) wake() {
	select {
	case e.wakeC <- struct{}{}:
	default:
	}
}

// Run keeps until ctx ends, then gives the lease back.
func (e *Engine) Run(ctx context.Context) {
	idle := time.NewTicker(e.o.Idle)
	defer idle.Stop()
	defer e.release()
	for {
		select {
		case <-ctx.Done():
			return
		case <-idle.C:
			if e.held && time.Since(e.lastWrite) >= e.o.Idle {
				e.release()
			}
			continue
		case <-e.wakeC:
		}
		if reload.Sleep(ctx, e.o.Window) != nil {
			return
		}
		e.step(ctx, e.take())
	}
}

// take returns the due groups, sorted, and forgets them; with Retry, the Keeper's too.
func (e *Engine) take() []string {
	e.mu.Lock()
	groups := make([]string, 0, len(e.due))
	for g := range e.due {
		groups = append(groups, g)
	}
	clear(e.due)
	retry := e.retry
	e.retry = false
	e.mu.Unlock()
	if retry {
		groups = append(groups, e.keeper.Again()...)
	}
	slices.Sort(groups)
	return slices.Compact(groups)
}

// later makes groups due again at the next Retry (the store not read yet, the lease held
// elsewhere).
func (e *Engine) later(groups []string) { e.keeper.Later(groups...) }

// step keeps groups: each one's offsets read from the Store now (the newest state), its
// writes sent together and waited for once.
func (e *Engine) step(ctx context.Context, groups []string) {
	if len(groups) == 0 {
		return
	}
	if !e.store.Complete() {
		e.later(groups) // kept once every partition has been replayed (CaughtUp makes all due)
		return
	}
	sent := false
	for i, g := range groups {
		if ctx.Err() != nil {
			e.later(groups[i:])
			break
		}
		ok, wrote := e.keepGroup(ctx, g)
		if !ok {
			e.later(groups[i:]) // another process writes here: at the next Retry
			break
		}
		sent = sent || wrote
	}
	if sent {
		e.obs.Kept(e.keeper.Flush())
		e.obs.Read(e.keeper.Stats())
		e.lastWrite = time.Now()
	}
}

// keepGroup keeps g: ok false when the lease is held elsewhere; wrote when writes were sent.
func (e *Engine) keepGroup(ctx context.Context, g string) (ok, wrote bool) {
	all, read := e.store.Offsets(g)
	if !read {
		e.later([]string{g})
		return true, false
	}
	offs := slices.DeleteFunc(all, func(co loader.CommittedOffset) bool { return !e.o.Accept(co) })
	want := e.keeper.Want(offs)
	if len(want) == 0 {
		e.keeper.Done(g)
		return true, false
	}
	if e.o.DryRun {
		for _, co := range want {
			if e.o.Up(co.Origin) {
				e.obs.WouldKeep(co)
			}
		}
		return true, false
	}
	if slices.ContainsFunc(want, func(co loader.CommittedOffset) bool { return e.o.Up(co.Origin) }) && !e.acquire(ctx) {
		return false, false
	}
	res := e.keeper.Keep(ctx, g, want, e.o.Up)
	if len(res.Errors) > 0 {
		e.obs.Kept(res)
	}
	return true, true
}

// acquire takes the writer lease before a first write (held until Idle passes without one);
// false while another process holds it.
func (e *Engine) acquire(ctx context.Context) bool {
	if e.held || e.lease == nil {
		return true
	}
	cctx, cancel := context.WithTimeout(ctx, e.o.CallTimeout)
	err := e.lease.Acquire(cctx)
	cancel()
	if err != nil {
		if !e.paused {
			e.obs.Paused(err)
		}
		e.paused = true
		return false
	}
	if e.paused {
		e.obs.Resumed()
	}
	e.paused, e.held = false, true
	return true
}

func (e *Engine) release() {
	if e.held {
		e.lease.Release()
		e.held = false
	}
}
