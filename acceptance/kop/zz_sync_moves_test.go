//go:build kop

package kop

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
)

// TestSyncFaultsPartitionMoves is issue 46 item 5's "two brokers per cluster with the
// source's offsets partition moving to the other broker mid-stream" on real KoP, through
// streaming sync (sync setup + watch --sync), then the same for the target's. Three groups
// commit on scus every ~100 ms, one further each time: two on a misaligned topic (300
// messages on scus alone: scus N is wus N-300), one on an aligned one; they sit in two
// offsets partitions of different bundles of scus. Mid-stream, every bundle of scus holding
// them is unloaded to the other broker (Pulsar's destinationBroker), and the move is checked
// (the owner broker changed, KoP's FindCoordinator names the new one); later the same on wus.
// At each move's stages (before, unloaded, moved) a fresh group commits once on scus in
// those partitions: a record the sync read around a reconnection and then dropped would
// leave it unserved. In the end every group on wus serves exactly the translation of scus's
// last commit, wus never served a value older than one it served before nor one no commit
// translates to, nothing was synced back to scus, and the sync's interruption around each
// move (the slowest commit from its acknowledgement on scus to wus serving it) is logged.
// On a lab with one broker per cluster it is skipped.
func TestSyncFaultsPartitionMoves(t *testing.T) {
	for _, c := range []string{"scus", "wus"} {
		if n := theLab.Cluster(c).BrokerCount(); n < 2 {
			t.Skipf("needs two brokers per cluster (%s has %d) for an offsets partition to move to the other one: run the suite on a lab started with KOP_LAB_BROKERS=2 (kop-lab up --brokers 2)", c, n)
		}
	}
	const local, msgs = 300, 5000
	base := labtest.Name("sync-move")
	mis, aligned := labtest.NewTopic(t, theLab, "sync-move-mis"), labtest.NewTopic(t, theLab, "sync-move-al")
	shiftedCopies(t, mis, local, msgs)
	labtest.Produce(t, theLab.Cluster("scus"), aligned, msgs)
	labtest.WaitEndOffset(t, theLab.Cluster("wus"), aligned, msgs)
	pA, pB := twoBundles(t, theLab.Cluster("scus"), loader.PartitionFor(base, lab.OffsetsTopicPartitions))
	groups := []*moveCommitter{
		newMoveCommitter(lab.GroupInPartition(base+"-mis-a", pA), mis, local, msgs),
		newMoveCommitter(lab.GroupInPartition(base+"-al-a", pA), aligned, 0, msgs),
		newMoveCommitter(lab.GroupInPartition(base+"-mis-b", pB), mis, local, msgs),
	}
	labtest.Settle(t, theLab, groups[0].group, groups[2].group) // one a partition: Settle reloads partitions
	glob := base + "-*"
	syncSetUp(t, "--group", glob)
	scus, wus := kafkaAdmin(t, "scus"), kafkaAdmin(t, "wus")
	cfg := labtest.ConfigCopy(t, theLab, "sync-move")
	listen := labtest.FreeListen(t)
	p := startSync(t, cfg, listen, "10s", glob)
	keepSyncLog(t, p)
	t.Logf("groups %s, %s (offsets partition %d) and %s (%d); sync of %s", groups[0].group, groups[1].group, pA, groups[2].group, pB, glob)

	sctx, scancel := context.WithCancel(context.Background())
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { stop(); wg.Wait(); scancel() }) // before the clients close
	for _, g := range groups {
		g.onWus = sampleServed(sctx, wus, g.group, g.topic)
		wg.Go(func() { g.run(ctx, scus) })
	}
	once := &onceGroups{t: t, adm: scus, base: base, topic: mis, shift: local, parts: []int32{pA, pB}, want: map[string]int64{}}
	time.Sleep(10 * time.Second)
	steadyTo := time.Now()
	src := moveOffsetsPartitions(t, "scus", once.parts, func(stage string) { once.commit("scus", stage) })
	src.caughtUp = catchUp(t, p, groups, src)
	time.Sleep(15 * time.Second)
	dst := moveOffsetsPartitions(t, "wus", once.parts, func(stage string) { once.commit("wus", stage) })
	dst.caughtUp = catchUp(t, p, groups, dst)
	time.Sleep(15 * time.Second)
	stop()
	wg.Wait()

	// The end: one more acknowledged commit each, served exactly on wus; so are the once-groups.
	for _, g := range groups {
		final := g.finalCommit(t, scus)
		if d, got, ok := servedWithin(context.Background(), wus, g.group, g.topic, final, time.Minute); !ok {
			t.Errorf("%s: scus's last commit %d; wus serves %d a minute later, want %d; sync log:\n%s",
				g.group, final+g.shift, got, final, grepLines(p.stderr(), g.group, 20))
		} else {
			t.Logf("%s: scus's last commit %d served on wus as %d %s after its acknowledgement", g.group, final+g.shift, final, d.Round(time.Millisecond))
		}
		if got, ok := servedBy(context.Background(), scus, g.group, g.topic); !ok || got != final+g.shift {
			t.Errorf("%s: scus serves %d (%v) at the end, want its last commit %d", g.group, got, ok, final+g.shift)
		}
	}
	for g, want := range once.want {
		if _, got, ok := servedWithin(context.Background(), wus, g, mis, want, 30*time.Second); !ok {
			t.Errorf("%s committed %d once on scus; wus serves %d, want %d: the sync skipped it; sync log:\n%s",
				g, want+local, got, want, grepLines(p.stderr(), g, 10))
		}
	}
	time.Sleep(500 * time.Millisecond) // the samplers see the last values too
	scancel()
	movesReport(t, groups, steadyTo, src, dst)
	syncCountsAfterMoves(t, p, listen, groups, len(once.want))
}

// moveCommitter is one group committing its topic/0 on scus every ~100 ms, one further each
// time, and what wus served for it.
type moveCommitter struct {
	group, topic string
	shift, limit int64     // scus N is wus N-shift; limit: wus's last offset with a message
	acked        commitLog // acknowledged commits, in wus's numbering
	onWus        *served
	mu           sync.Mutex
	next         int64
	tried        map[int64]bool // every commit sent (one that failed may have landed)
	errs         []string
}

func newMoveCommitter(group, topic string, shift, limit int64) *moveCommitter {
	return &moveCommitter{group: group, topic: topic, shift: shift, limit: limit, tried: map[int64]bool{}}
}

func (c *moveCommitter) run(ctx context.Context, adm *kadm.Client) {
	for ctx.Err() == nil {
		o, ok := c.take()
		if !ok {
			return
		}
		if err := c.commit(ctx, adm, o, 10*time.Second); err == nil {
			c.acked.add(o)
		} else if ctx.Err() == nil {
			c.mu.Lock()
			c.errs = append(c.errs, err.Error())
			c.mu.Unlock()
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// take is the next offset to commit (wus's numbering), false past the messages.
func (c *moveCommitter) take() (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.next >= c.limit {
		return 0, false
	}
	c.next++
	c.tried[c.next] = true
	return c.next, true
}

func (c *moveCommitter) commit(ctx context.Context, adm *kadm.Client, o int64, limit time.Duration) error {
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: c.topic, Partition: 0, At: c.shift + o, LeaderEpoch: -1})
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	resp, err := adm.CommitOffsets(cctx, c.group, offs)
	if err == nil {
		err = resp.Error()
	}
	return err
}

// finalCommit makes the group's last commit, once the committer stopped, and returns it.
func (c *moveCommitter) finalCommit(t *testing.T, adm *kadm.Client) int64 {
	t.Helper()
	o, ok := c.take()
	if !ok {
		t.Fatalf("%s: the committer used all %d messages of %s: produce more", c.group, c.limit, c.topic)
	}
	if err := c.commit(context.Background(), adm, o, time.Minute); err != nil {
		t.Fatalf("scus: %s's last commit %d: %v", c.group, o+c.shift, err)
	}
	c.acked.add(o)
	return o
}

// newestBefore is the group's newest acknowledged commit before d (wus's numbering).
func (c *moveCommitter) newestBefore(d time.Time) int64 {
	o, _, _ := c.acked.before(d)
	return o
}

// onceGroups commit once each on scus, in the moved offsets partitions, at a move's stages.
type onceGroups struct {
	t           *testing.T
	adm         *kadm.Client
	base, topic string
	shift       int64
	parts       []int32
	n           int64
	want        map[string]int64 // group: what wus must serve
}

func (o *onceGroups) commit(cluster, stage string) {
	for _, p := range o.parts {
		o.n++
		c := &moveCommitter{group: lab.GroupInPartition(fmt.Sprintf("%s-once-%s-%s", o.base, cluster, stage), p), topic: o.topic, shift: o.shift}
		if err := c.commit(context.Background(), o.adm, 10*o.n, time.Minute); err != nil {
			// KoP's answer, not the sync's: the group is not expected on wus then.
			o.t.Logf("%s's move, %s: scus did not acknowledge %s's commit of %d: %v", cluster, stage, c.group, 10*o.n+o.shift, err)
			continue
		}
		o.want[c.group] = 10 * o.n
	}
}

// sampleServed asks adm what KoP serves for group's topic/0 every 50 ms until ctx ends.
func sampleServed(ctx context.Context, adm *kadm.Client, group, topic string) *served {
	s := &served{}
	go func() {
		for ctx.Err() == nil {
			if off, ok := servedBy(ctx, adm, group, topic); ok {
				s.add(off)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return s
}

// catchUp waits (a minute at most) until wus serves, for every group, scus's newest commit
// at the moment KoP served the moved partitions again, and returns how long that took: a
// sync whose reader or commits stay stuck after the move fails here.
func catchUp(t *testing.T, p *process, groups []*moveCommitter, m movePhase) time.Duration {
	t.Helper()
	var slowest time.Duration
	for _, g := range groups {
		want := g.newestBefore(m.served)
		for deadline := m.served.Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
			if at, ok := g.onWus.firstAtLeast(want, m.served); ok {
				slowest = max(slowest, at.Sub(m.served))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: a minute after %s's offsets partitions moved and were served again, wus serves %v, not yet %d (scus's %d then); sync log:\n%s",
					g.group, m.cluster, tail(g.onWus.values(), 5), want, want+g.shift, grepLines(strings.ReplaceAll(p.stderr(), `"level":"DEBUG"`, ""), `"level":"`, 30))
			}
		}
	}
	return slowest
}

// movesReport checks what wus served for each group (never older than before, always a
// commit of the group translated) and logs the latencies: in the steady state before the
// moves, and around each move (the sync's interruption).
func movesReport(t *testing.T, groups []*moveCommitter, steadyTo time.Time, moves ...movePhase) {
	t.Helper()
	for _, g := range groups {
		g.mu.Lock()
		tried := g.tried
		g.mu.Unlock()
		prev := int64(-1)
		for _, v := range g.onWus.values() {
			if v < prev {
				t.Errorf("%s: wus served %d after %d: older than it served before", g.group, v, prev)
			}
			if !tried[v] {
				t.Errorf("%s: wus served %d: no commit of the group on scus translates to it", g.group, v)
			}
			prev = max(prev, v)
		}
		g.mu.Lock()
		t.Logf("%s: %d commits sent to scus, %d acknowledged, %d failed %q", g.group, len(g.tried), len(g.acked.off), len(g.errs), g.errs[:min(3, len(g.errs))])
		g.mu.Unlock()
	}
	steady, _, _ := lagAround(groups, time.Time{}, steadyTo)
	t.Logf("steady state before the moves: %d commits, acknowledged on scus to served on wus p50 %s, p99 %s, max %s",
		len(steady), percentile(slices.Clone(steady), .5), percentile(slices.Clone(steady), .99), percentile(slices.Clone(steady), 1))
	var summary []string
	for _, m := range moves {
		lat, unseen, gap := lagAround(groups, m.began.Add(-time.Second), m.served.Add(5*time.Second))
		summary = append(summary, fmt.Sprintf("%s's move %s", m.cluster, percentile(slices.Clone(lat), 1).Round(time.Millisecond)))
		t.Logf("%s's move: %s; unloaded in %s, the new owner took it %s after the unload began, KoP served it %s after; "+
			"the %d commits acknowledged on scus from 1 s before to 5 s after: served on wus p50 %s, max %s (the sync's interruption), %d never seen; "+
			"longest gap between two acknowledgements of a group on scus %s; wus served scus's newest %s after KoP served the moved partitions",
			m.cluster, strings.Join(m.bundles, "; "), m.unloaded.Sub(m.began).Round(time.Millisecond), m.owned.Sub(m.began).Round(time.Millisecond),
			m.served.Sub(m.began).Round(time.Millisecond), len(lat), percentile(slices.Clone(lat), .5), percentile(slices.Clone(lat), 1), unseen,
			gap.Round(time.Millisecond), m.caughtUp.Round(time.Millisecond))
		if unseen > 0 {
			t.Errorf("%s's move: %d commits acknowledged on scus were never served on wus, nor anything newer", m.cluster, unseen)
		}
	}
	t.Logf("the sync's interruption (the slowest commit acknowledged on scus around a move until wus served it): %s; steady state max %s",
		strings.Join(summary, ", "), percentile(slices.Clone(steady), 1).Round(time.Millisecond))
}

// lagAround is, for the commits acknowledged in [from, to), the time from each
// acknowledgement to wus first serving it or more; how many wus never served; and the
// longest gap between two acknowledgements of one group on scus in that span.
func lagAround(groups []*moveCommitter, from, to time.Time) (lat []time.Duration, unseen int, gap time.Duration) {
	for _, g := range groups {
		g.acked.mu.Lock()
		offs, ats := slices.Clone(g.acked.off), slices.Clone(g.acked.at)
		g.acked.mu.Unlock()
		var prev time.Time
		for i, o := range offs {
			if ats[i].Before(from) || !ats[i].Before(to) {
				continue
			}
			if !prev.IsZero() {
				gap = max(gap, ats[i].Sub(prev))
			}
			prev = ats[i]
			if at, ok := g.onWus.firstAtLeast(o, ats[i]); ok {
				lat = append(lat, at.Sub(ats[i]))
			} else {
				unseen++
			}
		}
	}
	return lat, unseen, gap
}

// syncCountsAfterMoves checks the sync's counters: no more commits on wus than the groups
// made on scus, none on scus (the groups' source), no group skipped as split brain or
// replicated, no unload.
func syncCountsAfterMoves(t *testing.T, p *process, listen string, groups []*moveCommitter, once int) {
	t.Helper()
	made := once
	for _, g := range groups {
		g.mu.Lock()
		made += len(g.tried)
		g.mu.Unlock()
	}
	sentWus := metric(t, listen, "kop_offsets_sync_commits_total", `cluster="wus"`)
	sentScus := metric(t, listen, "kop_offsets_sync_commits_total", `cluster="scus"`)
	var skipped []string
	for _, r := range []string{"split_brain", "replicated", "unknown", "offset_delete_unsupported"} {
		n := metric(t, listen, "kop_offsets_sync_groups_skipped_total", `reason="`+r+`"`)
		skipped = append(skipped, fmt.Sprintf("%s %v", r, n))
		if n > 0 && (r == "split_brain" || r == "replicated") {
			t.Errorf("the sync skipped groups %v times as %s", n, r)
		}
	}
	t.Logf("the sync committed %v offsets on wus and %v on scus for %d commits made on scus; skipped: %s; what it logged above DEBUG:\n%s",
		sentWus, sentScus, made, strings.Join(skipped, ", "), grepLines(strings.ReplaceAll(p.stderr(), `"level":"DEBUG"`, ""), `"level":"`, 20))
	if sentWus > float64(made) {
		t.Errorf("the sync committed %v offsets on wus for %d commits made on scus", sentWus, made)
	}
	if sentScus != 0 {
		t.Errorf("the sync committed %v offsets on scus, the groups' source", sentScus)
	}
	if unloads := metric(t, listen, "kop_offsets_watch_reloads_total"); unloads != 0 {
		t.Errorf("%v unloads in sync mode", unloads)
	}
}
