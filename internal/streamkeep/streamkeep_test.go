package streamkeep

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/standby"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

const topic = "persistent://public/default/orders"

// topicLog is wus's one-partition offsets topic: what replicates in and what the keeper
// writes, each fed to the Store as watch's follower would.
type topicLog struct {
	mu    sync.Mutex
	store func() interface {
		Live(int32, pulsarx.TailMessage, []offsetlog.Record)
	}
	seq    int
	writes []int64 // the offsets of kept translations written, in order
}

func (l *topicLog) feed(m loader.Message, from string) {
	m.MessageID, m.ReplicatedFrom = fmt.Sprintf("1:%d:0:-1", l.seq), from
	l.seq++
	recs, _ := offsetlog.Decode(m.Key, m.Value)
	l.store().Live(0, pulsarx.TailMessage{Message: m}, recs)
}

func (l *topicLog) replicate(group string, offset int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.feed(kop.Message(0, 0, kop.OffsetCommit{Group: group, Topic: topic, Offset: offset, CommitTime: time.UnixMilli(1000 + offset)}), "scus")
}

func (l *topicLog) KeepAsync(_ context.Context, cs []kop.OffsetCommit, mark loader.KeptMark, done func(error)) {
	key, v, err := kop.EncodeKeep(cs)
	if err == nil {
		l.mu.Lock()
		l.writes = append(l.writes, cs[0].Offset)
		l.feed(loader.Message{Key: key, Value: v, Kept: &mark}, "")
		l.mu.Unlock()
	}
	go done(err)
}

func (l *topicLog) written() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int64(nil), l.writes...)
}

type lease struct {
	mu        sync.Mutex
	other     bool
	held      bool
	acquired  int
	releasedN int
}

func (l *lease) Acquire(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.other {
		return errors.New("held by another process")
	}
	l.held = true
	l.acquired++
	return nil
}

func (l *lease) Release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held = false
	l.releasedN++
}

func (l *lease) state() (held bool, acquired int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held, l.acquired
}

type observer struct {
	mu             sync.Mutex
	kept           int
	paused, resume int
}

func (o *observer) Kept(res standby.Result)          { o.mu.Lock(); o.kept += len(res.Kept); o.mu.Unlock() }
func (o *observer) WouldKeep(loader.CommittedOffset) {}
func (o *observer) Read(align.TrackerStats)          {}
func (o *observer) Paused(error)                     { o.mu.Lock(); o.paused++; o.mu.Unlock() }
func (o *observer) Resumed()                         { o.mu.Lock(); o.resume++; o.mu.Unlock() }
func (o *observer) counts() (kept, paused, resumed int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.kept, o.paused, o.resume
}

// env is an Engine keeping wus from scus (aligned copies), running.
type env struct {
	t   *testing.T
	e   *Engine
	log *topicLog
	l   *lease
	obs *observer
}

func newEnv(t *testing.T, caughtUp bool) *env {
	log := &topicLog{}
	k := &standby.Keeper{Cluster: "wus", KafkaNamespace: "public/default", Writer: log,
		Sources: map[string]align.Source{"scus": fakes.MemCopies{Topics: map[string][]uint64{"orders": fakes.Sequence(0, 100_000)}},
			"wus": fakes.MemCopies{Topics: map[string][]uint64{"orders": fakes.Sequence(0, 100_000)}}}}
	l, obs := &lease{}, &observer{}
	e := New(k, l, obs, Options{Idle: 100 * time.Millisecond})
	log.store = func() interface {
		Live(int32, pulsarx.TailMessage, []offsetlog.Record)
	} {
		return e.Store()
	}
	e.Store().SetPartitions(1)
	e.Store().Begin(0)
	if caughtUp {
		e.Store().CaughtUp(0)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return &env{t: t, e: e, log: log, l: l, obs: obs}
}

func (v *env) waitFor(what string, cond func() bool) {
	v.t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			v.t.Fatalf("%s: not reached after 5 s (written %v)", what, v.log.written())
		}
	}
}

func (v *env) last() int64 {
	w := v.log.written()
	if len(w) == 0 {
		return -1
	}
	return w[len(w)-1]
}

// TestKeptAsRead: each replicated commit is kept as it is read; a burst of one group's commits
// within the window costs one write, of the newest; the lease is held while writes go on and
// given back after Idle without one.
func TestKeptAsRead(t *testing.T) {
	v := newEnv(t, true)
	v.log.replicate("G", 500)
	v.waitFor("kept 500", func() bool { return v.last() == 500 })
	if held, n := v.l.state(); !held || n != 1 {
		t.Fatalf("lease held %v, taken %d times: want held once while keeping", held, n)
	}
	for o := int64(501); o <= 520; o++ {
		v.log.replicate("G", o)
	}
	v.waitFor("kept 520", func() bool { return v.last() == 520 })
	if w := v.log.written(); len(w) > 6 {
		t.Fatalf("%d writes for a burst of 20 commits: %v", len(w), w)
	}
	v.waitFor("the lease given back after Idle", func() bool { held, _ := v.l.state(); return !held })
	v.log.replicate("G", 600)
	v.waitFor("kept 600", func() bool { return v.last() == 600 })
	if _, n := v.l.state(); n != 2 {
		t.Fatalf("lease taken %d times, want again for the new write", n)
	}
}

// TestKeepWaitsForTheStore: nothing is kept before the offsets partition has been replayed
// (the newest state is not known yet); catching up makes every group due.
func TestKeepWaitsForTheStore(t *testing.T) {
	v := newEnv(t, false)
	m := kop.Message(0, 0, kop.OffsetCommit{Group: "G", Topic: topic, Offset: 700, CommitTime: time.UnixMilli(1700)})
	m.ReplicatedFrom = "scus"
	v.e.Store().Replayed(0, m)
	v.e.Retry()
	time.Sleep(50 * time.Millisecond)
	if w := v.log.written(); len(w) != 0 {
		t.Fatalf("kept %v before the partition was replayed", w)
	}
	v.e.Store().CaughtUp(0)
	v.waitFor("kept 700 once replayed", func() bool { return v.last() == 700 })
}

// TestKeepPausedByAnotherWriter: while another process holds the lease nothing is written,
// the pause is told once; once it is free, Retry (watch's cycle) keeps what waited.
func TestKeepPausedByAnotherWriter(t *testing.T) {
	v := newEnv(t, true)
	v.l.mu.Lock()
	v.l.other = true
	v.l.mu.Unlock()
	v.log.replicate("G", 500)
	v.log.replicate("H", 300)
	v.waitFor("paused", func() bool { _, p, _ := v.obs.counts(); return p == 1 })
	v.e.Retry()
	time.Sleep(50 * time.Millisecond)
	if w := v.log.written(); len(w) != 0 {
		t.Fatalf("kept %v while another process held the lease", w)
	}
	if _, p, _ := v.obs.counts(); p != 1 {
		t.Fatalf("the pause told %d times, want once", p)
	}
	v.l.mu.Lock()
	v.l.other = false
	v.l.mu.Unlock()
	v.e.Retry()
	v.waitFor("both kept after the pause", func() bool { k, _, _ := v.obs.counts(); return k == 2 })
	if _, _, r := v.obs.counts(); r != 1 {
		t.Fatalf("resumed told %d times", r)
	}
}
