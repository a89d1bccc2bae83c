package streamsync

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestMembershipForgetEverywhereCoversNewClusters: forget("", groups) guards every cluster,
// those with no cached answer yet too (its first DescribeGroups, or any after a clear): an
// answer asked for before it is not kept. (It once recorded only the clusters that held an
// answer.)
func TestMembershipForgetEverywhereCoversNewClusters(t *testing.T) {
	ms := newMembership(time.Minute)
	seq := ms.ask()
	ms.forget("", []string{"g"}) // e.g. record(): a commit of g was refused
	ms.set("scus", acts(map[string]int{"g": 1}), seq, t0)
	known(t, ms, "scus", "g", t0, -1)

	// The same after a clear: ms.m is empty again.
	ms.set("wus", acts(map[string]int{"x": 1}), ms.ask(), t0)
	ms.clear()
	seq = ms.ask()
	ms.forget("", []string{"g"})
	ms.set("wus", acts(map[string]int{"g": 1}), seq, t0)
	known(t, ms, "wus", "g", t0, -1)
}

// TestDescribeFailedOneAtATime: the Observer is called from one goroutine at a time, also
// when two clusters' DescribeGroups fail in the same step (describe asks them at once; it
// once reported each failure from its own goroutine).
func TestDescribeFailedOneAtATime(t *testing.T) {
	env := newEngineEnv(t, Options{Window: 10 * time.Millisecond}, nil, nil)
	// Both DescribeGroups are in flight before either fails.
	var both sync.WaitGroup
	both.Add(2)
	for _, f := range []*fakeCluster{env.scus, env.wus} {
		f.setDescribeErr(errDown)
		f.describing = func() {
			both.Done()
			both.Wait()
		}
	}
	var inflight atomic.Int32
	var overlap atomic.Bool
	env.obs.describeFailed = func() {
		if inflight.Add(1) > 1 {
			overlap.Store(true)
		}
		defer inflight.Add(-1)
		// Stay in the call a while: a second call made meanwhile is concurrent.
		for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end) && !overlap.Load(); {
			time.Sleep(time.Millisecond)
		}
	}
	env.scus.setMembers("orders", 1)
	env.scus.start()
	env.wus.start()
	env.up()
	env.run()
	env.scus.live(commitOf("orders", 0, 6000))
	waitFor(t, "both failures reported", func() bool { return len(env.obs.describeFailures()) == 2 })
	if overlap.Load() {
		t.Fatal("DescribeFailed was called from two goroutines at once")
	}
}
