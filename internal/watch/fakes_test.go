package watch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/reload"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

const topic1 = "persistent://public/default/topic-1"

// memTail is an in-memory Tailer: messages appended with commit are delivered to every
// open Tail, in order.
type memTail struct {
	n      int32
	mu     sync.Mutex
	msgs   map[int32][]pulsarx.TailMessage
	wake   chan struct{}
	down   error // Partitions fails (admin down)
	tailEr error // Tail fails at once
	tails  map[int32]int
	kept   int // kept translations written (Keep)
}

func newMemTail(n int32) *memTail {
	return &memTail{n: n, msgs: map[int32][]pulsarx.TailMessage{}, wake: make(chan struct{}), tails: map[int32]int{}}
}

// commit appends commits as KoP would write them; from names the cluster they were
// replicated from ("" for local commits).
func (m *memTail) commit(from string, cs ...kop.OffsetCommit) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range cs {
		p := loader.PartitionFor(c.Group, m.n)
		msg := kop.Message(p, len(m.msgs[p]), c)
		msg.ReplicatedFrom = from // as pulsarx sets both
		m.msgs[p] = append(m.msgs[p], pulsarx.TailMessage{Message: msg, ReplicatedFrom: from})
	}
	close(m.wake)
	m.wake = make(chan struct{})
}

// group appends a group record of group with members members, as KoP writes one when a
// rebalance completes or the group goes empty.
func (m *memTail) group(group string, members int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := loader.PartitionFor(group, m.n)
	key := (&kmsg.GroupMetadataKey{Version: 2, Group: group}).AppendTo(nil)
	v := kmsg.GroupMetadataValue{Version: 1, ProtocolType: "consumer", Generation: int32(len(m.msgs[p]) + 1)}
	if members > 0 {
		v.Protocol, v.Leader = kmsg.StringPtr("range"), kmsg.StringPtr("m-0")
	}
	for i := range members {
		v.Members = append(v.Members, kmsg.GroupMetadataValueMember{MemberID: fmt.Sprintf("m-%d", i), ClientID: "c", ClientHost: "/127.0.0.1"})
	}
	val := kop.EncodeBatch(key, v.AppendTo(nil), time.Now())
	msg := loader.Message{Partition: p, MessageID: fmt.Sprintf("1:%d:%d:-1", len(m.msgs[p]), p), Key: kop.PulsarKey(group), Value: val}
	m.msgs[p] = append(m.msgs[p], pulsarx.TailMessage{Message: msg})
	close(m.wake)
	m.wake = make(chan struct{})
}

// keep is a standby.Writer that appends the kept translation to the tail, as Pulsar would
// deliver it to the cluster's own readers.
func (m *memTail) KeepAsync(_ context.Context, cs []kop.OffsetCommit, mark loader.KeptMark, done func(error)) {
	key, v, err := kop.EncodeKeep(cs)
	if err != nil {
		done(err)
		return
	}
	m.mu.Lock()
	p := loader.PartitionFor(cs[0].Group, m.n)
	msg := loader.Message{Partition: p, MessageID: fmt.Sprintf("1:%d:%d:-1", len(m.msgs[p]), p), Key: key, Value: v, Kept: &mark}
	m.msgs[p] = append(m.msgs[p], pulsarx.TailMessage{Message: msg})
	m.kept++
	close(m.wake)
	m.wake = make(chan struct{})
	m.mu.Unlock()
	go done(nil) // as the producer does: from its own goroutine
}

// keptCount is how many kept translations were written.
func (m *memTail) keptCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.kept
}

func (m *memTail) setDown(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.down = err
}

func (m *memTail) tailCalls(p int32) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tails[p]
}

func (m *memTail) Partitions(context.Context) (int32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down != nil {
		return 0, m.down
	}
	return m.n, nil
}

func (m *memTail) Tail(ctx context.Context, p int32, fn func(pulsarx.TailMessage) error, caughtUp func()) error {
	m.mu.Lock()
	m.tails[p]++
	if m.tailEr != nil {
		m.mu.Unlock()
		return m.tailEr
	}
	bound := len(m.msgs[p])
	m.mu.Unlock()
	next := 0
	if bound == 0 {
		caughtUp()
	}
	for {
		m.mu.Lock()
		msgs, wake := m.msgs[p], m.wake
		m.mu.Unlock()
		for ; next < len(msgs); next++ {
			if err := fn(msgs[next]); err != nil {
				return err
			}
			if next+1 == bound {
				caughtUp()
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		}
	}
}

// fetcher is the product's fetcher of k with kgo's default retries (not ClientOpts' 500ms):
// a loaded machine must not turn a slow kfake into a KoP error.
func fetcher(t *testing.T, k *fakes.KoP) *kop.Fetcher {
	return k.Fetcher(t, fakeCoordinatorWait)
}

// fakeCoordinatorWait is the fetchers' --coordinator-wait; a test of a group KoP never
// coordinates shortens it (no test of this package runs in parallel).
var fakeCoordinatorWait = 5 * time.Second

func commit(group string, p int32, off int64) kop.OffsetCommit {
	return kop.OffsetCommit{Group: group, Topic: topic1, Partition: p, Offset: off, CommitTime: time.Unix(1_800_000_000, 0).Add(-time.Hour + time.Duration(off)*time.Millisecond)}
}

// clock is a settable Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// fakeReloader plans one bundle per offsets partition (n partitions) and records reloads.
type fakeReloader struct {
	mu   sync.Mutex
	n    int32
	live map[string]bool // groups not proven idle on the target (KoP did not answer): their bundle is refused
	// liveElsewhere: groups live on scus only (reported, not refused)
	liveElsewhere map[string]bool
	planned       [][]string
	reloaded      []string
	result        string
	onReload      func()
}

func (r *fakeReloader) Plan(_ context.Context, groups []string) (*reload.Plan, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.planned = append(r.planned, slices.Clone(groups))
	plan := &reload.Plan{Cluster: "wus"}
	byRange := map[string]int{}
	for _, g := range groups {
		rng := bundleOf(loader.PartitionFor(g, r.n))
		i, ok := byRange[rng]
		if !ok {
			i = len(plan.Bundles)
			byRange[rng] = i
			plan.Bundles = append(plan.Bundles, reload.PlannedBundle{Range: rng, OffsetsPartitions: []int32{loader.PartitionFor(g, r.n)}, Active: []string{}})
		}
		pb := &plan.Bundles[i]
		pb.Groups = append(pb.Groups, g)
		if r.live[g] {
			pb.Active = append(pb.Active, g)
			pb.Refused, pb.Reason = true, "not proven idle (KoP did not answer): "+g+"@wus"
		}
		ag := reload.AffectedGroup{Group: g, Bundle: rng, Requested: true, Activity: map[string]reload.Activity{}, Here: reload.ActivityIdle}
		if r.live[g] {
			ag.Here = reload.ActivityUnknown
		}
		if r.liveElsewhere[g] {
			pb.LiveElsewhere = append(pb.LiveElsewhere, g)
			ag.Activity["scus"] = reload.Activity{Status: reload.ActivityLive}
		}
		plan.Groups = append(plan.Groups, ag)
	}
	return plan, nil
}

func (r *fakeReloader) Reload(_ context.Context, _ *reload.Plan, pb reload.PlannedBundle) reload.BundleResult {
	if r.onReload != nil {
		r.onReload()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reloaded = append(r.reloaded, pb.Range)
	st := r.result
	if st == "" {
		st = reload.BundleVerified
	}
	return reload.BundleResult{Range: pb.Range, Status: st, Unloaded: true, Loaded: true}
}

func (r *fakeReloader) reloads() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reloaded)
}

func bundleOf(p int32) string { return "0x" + string(rune('a'+p)) }

var errDown = errors.New("connection refused")
