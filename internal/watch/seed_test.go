package watch

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// TestSyncOnceSeeds: sync setup's seed syncs every group once and reports what it did: a
// member-less group of scus lands on wus translated, one of wus on scus, a group live on
// both is split brain and left; and it stops. (Misaligned: scus N is wus N-300.)
func TestSyncOnceSeeds(t *testing.T) {
	e, scus, wus := syncEnv(t, Options{})
	e.scus.commit("", commit("orders", 0, 6000))
	e.wus.commit("", commit("payments", 0, 100))
	e.scus.commit("", commit("billing", 0, 700))
	e.wus.commit("", commit("billing", 0, 300))
	scus.setMembers("billing", 1)
	wus.setMembers("billing", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sw, err := e.w.SyncOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sw.Groups != 3 || sw.Synced != 2 || sw.Offsets != 2 || !slices.Equal(sw.SplitBrain, []string{"billing"}) || len(sw.Down) != 0 {
		t.Errorf("sweep %+v: want 3 groups, 2 synced (2 offsets), billing split brain", sw)
	}
	if o, ok := e.kWus.Get("orders", "topic-1", 0); !ok || o != 5700 {
		t.Errorf("wus serves orders %d (%v), want 5700 (scus 6000 translated)", o, ok)
	}
	// A group that ran on wus never read the 300 messages only scus holds: it starts there
	// at scus's first (never skip what nobody read).
	if o, ok := e.kScus.Get("payments", "topic-1", 0); !ok || o != 0 {
		t.Errorf("scus serves payments %d (%v), want 0 (wus 100 translated: scus's own 300 unread)", o, ok)
	}
	if n := scus.count() + wus.count(); n != 2 {
		t.Errorf("%d OffsetCommits, want 2 (orders to wus, payments to scus; billing left)", n)
	}
	// It stopped: no cycle runs after it returned.
	n := e.w.cycles.Load()
	time.Sleep(300 * time.Millisecond)
	if e.w.cycles.Load() != n {
		t.Error("cycles go on after SyncOnce returned")
	}
}

// TestSyncOnceStandby: while another process holds a synced cluster's lease, the seed
// commits nothing and says so.
func TestSyncOnceStandby(t *testing.T) {
	e, _, wus := syncEnv(t, Options{})
	e.w.clusters[0].SyncLease, e.w.clusters[1].SyncLease = &fakeLease{}, &fakeLease{other: true}
	e.syncEngine()
	e.scus.commit("", commit("orders", 0, 6000))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.w.SyncOnce(ctx); !errors.Is(err, ErrSyncStandby) {
		t.Fatalf("err %v, want ErrSyncStandby", err)
	}
	if wus.count() != 0 {
		t.Errorf("%d commits while another process holds the lease", wus.count())
	}
}

// TestSyncOnceNeedsSync: a watcher without Options.Sync refuses.
func TestSyncOnceNeedsSync(t *testing.T) {
	e := newEnv(t, Options{})
	if _, err := e.w.SyncOnce(context.Background()); err == nil {
		t.Fatal("SyncOnce without Options.Sync: no error")
	}
}
