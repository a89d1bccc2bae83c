package watch

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/standby"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

// keptEnv is ordersAgreeAt500 with wus kept: topic-1 holds 300 messages on scus that never
// replicated, so scus offset N is wus offset N-300.
func keptEnv(t *testing.T, o Options) *env {
	t.Helper()
	return keptEnvLeased(t, o, nil)
}

// keptEnvLeased is keptEnv with wus's writer lease l taken for each keeping (nil: none).
func keptEnvLeased(t *testing.T, o Options, l SyncLease) *env {
	t.Helper()
	e := newEnv(t, o)
	e.w.clusters[1].KeepLease = l
	src := fakes.MemCopies{Topics: map[string][]uint64{"topic-1": append(fakes.Sequence(1<<40, 1<<40+300), fakes.Sequence(0, 20_000)...)}}
	dst := fakes.MemCopies{Topics: map[string][]uint64{"topic-1": fakes.Sequence(0, 20_000)}}
	e.w.clusters[1].Keeper = &standby.Keeper{Cluster: "wus", KafkaNamespace: "public/default",
		Sources: map[string]align.Source{"scus": src, "wus": dst}, Writer: e.wus}
	e.startWithOrders(800, 500)
	return e
}

func TestKeepTranslationsOnTheStandby(t *testing.T) {
	e := keptEnv(t, Options{})
	// The replicated 800 is kept as wus's 500 and read back by wus's follower.
	e.cycleUntil("kept 800", persistedIs("orders", "wus", 500))
	if e.wus.kept != 1 {
		t.Fatalf("%d kept translations written, want 1", e.wus.kept)
	}
	// A newer commit replicates: kept too, one write each, none for scus's own commits.
	e.scus.commit("", commit("orders", 0, 10900))
	e.wus.commit("scus", commit("orders", 0, 10900))
	e.cycleUntil("kept 10900", persistedIs("orders", "wus", 10600))
	for range 3 {
		e.w.Cycle(e.ctx)
	}
	if e.wus.kept != 2 || e.scus.kept != 0 {
		t.Fatalf("kept translations: wus %d (want 2), scus %d (want 0)", e.wus.kept, e.scus.kept)
	}
	if n := testutil.ToFloat64(e.w.m.keep.Kept.WithLabelValues("wus", "scus", "written")); n != 2 {
		t.Fatalf("kept metric %v, want 2", n)
	}
}

func TestKeepTranslationsDryRun(t *testing.T) {
	e := keptEnv(t, Options{DryRun: true})
	for range 5 {
		e.w.Cycle(e.ctx)
	}
	if e.wus.kept != 0 {
		t.Fatalf("dry run wrote %d kept translations", e.wus.kept)
	}
	if n := testutil.ToFloat64(e.w.m.keep.Kept.WithLabelValues("wus", "scus", "dry_run")); n < 1 {
		t.Fatalf("dry-run metric %v", n)
	}
}

func TestKeepTranslationsWaitForTheSource(t *testing.T) {
	e := keptEnv(t, Options{})
	e.cycleUntil("kept 800", persistedIs("orders", "wus", 500))
	e.scus.setDown(errDown)
	e.wus.commit("scus", commit("orders", 0, 10900))
	e.cycleUntil("replicated 10900", persistedIs("orders", "wus", 10900))
	for range 3 {
		e.w.Cycle(e.ctx)
	}
	if e.wus.kept != 1 {
		t.Fatalf("kept with the source down: %d writes", e.wus.kept)
	}
	e.scus.setDown(nil)
	e.cycleUntil("kept once scus is back", persistedIs("orders", "wus", 10600))
}

// TestKeepWaitsForTheWriterLease: while another process holds wus's writer lease (a watch
// --sync, a failover), nothing is kept there and the pause is logged once; once the lease is
// free the translation is kept, and the lease is given back after each cycle's keeping (a
// failover can take it once the keeper is idle).
func TestKeepWaitsForTheWriterLease(t *testing.T) {
	l := &fakeLease{other: true}
	e := keptEnvLeased(t, Options{}, l)
	e.waitFor("pause logged", func() bool { return strings.Contains(e.logText(), "keeping paused") })
	e.settle()
	if e.wus.keptCount() != 0 {
		t.Fatalf("kept %d translations while another process held wus's lease", e.wus.keptCount())
	}
	if n := strings.Count(e.logText(), "keeping paused"); n != 1 {
		t.Errorf("pause logged %d times, want once", n)
	}
	l.set(false)
	e.cycleUntil("kept once the lease is free", persistedIs("orders", "wus", 500))
	e.waitFor("the lease given back a second after the last write", func() bool { mine, n := l.state(); return !mine && n >= 1 })
	if !strings.Contains(e.logText(), "keeping again") {
		t.Error("the end of the pause is not logged")
	}
}

// TestKeepTakesNoLeaseWithTheSourceGone: the lease is given back a second after the last
// write; with the source down, keeping writes nothing and takes no lease: a failover run then
// finds the cluster's writer lease free.
func TestKeepTakesNoLeaseWithTheSourceGone(t *testing.T) {
	l := &fakeLease{}
	e := keptEnvLeased(t, Options{}, l)
	e.cycleUntil("kept 800", persistedIs("orders", "wus", 500))
	e.waitFor("the lease given back a second after the last write", func() bool { mine, _ := l.state(); return !mine })
	if _, n := l.state(); n != 1 {
		t.Fatalf("after the first keeping: lease taken %d times, want once", n)
	}
	e.scus.setDown(errDown)
	e.wus.commit("scus", commit("orders", 0, 10900))
	e.cycleUntil("replicated 10900", persistedIs("orders", "wus", 10900))
	e.settle()
	if mine, n := l.state(); mine || n != 1 {
		t.Fatalf("with scus down: lease held %v, taken %d times (want not taken again)", mine, n)
	}
}

// TestKeepTranslationsAsTheyAreRead: a replicated commit is kept as the follower reads it,
// with no watch cycle in between (issue 47: keeping once a cycle fell behind a busy source,
// and the re-read bound after a disaster was a cycle long).
func TestKeepTranslationsAsTheyAreRead(t *testing.T) {
	e := keptEnv(t, Options{})
	e.cycleUntil("kept 800", persistedIs("orders", "wus", 500))
	cycles := e.w.cycles.Load()
	for i, o := range []int64{900, 1000, 10900} {
		e.wus.commit("scus", commit("orders", 0, o))
		deadline := time.Now().Add(5 * time.Second)
		for e.wus.keptCount() != i+2 {
			if time.Now().After(deadline) {
				t.Fatalf("%d not kept 5 s after it was read, with no cycle (%d kept)", o, e.wus.keptCount())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if n := e.w.cycles.Load(); n != cycles {
		t.Fatalf("%d cycles ran meanwhile", n-cycles)
	}
}
