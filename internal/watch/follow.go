package watch

import (
	"context"
	"errors"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/reload"
	"github.com/kop-offsets/kop-offsets/internal/streamsync"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// Tailer follows the offsets topic of one cluster; *pulsarx.Reader implements it.
type Tailer interface {
	// Partitions returns the partition count of the offsets topic (an admin call: watch
	// also uses it to see whether the cluster answers).
	Partitions(ctx context.Context) (int32, error)
	// Tail reads partition from the earliest message, then every new one until ctx ends
	// (nil). caughtUp is called once, from fn's goroutine, when what existed at the start
	// has been read. See pulsarx.Reader.Tail.
	Tail(ctx context.Context, partition int32, fn func(pulsarx.TailMessage) error, caughtUp func()) error
}

var _ Tailer = (*pulsarx.Reader)(nil)

// arrival is a commit that reached this cluster through replication.
type arrival struct {
	key       verdict.Key
	offset    int64
	at        time.Time // when watch read it here
	from      string    // the cluster it was replicated from
	committed time.Time // the commit timestamp the source wrote
}

// maxArrivalsPerCycle bounds the replicated commits a partition keeps between two cycles;
// beyond it the newest are dropped (counted), so a flood cannot grow memory.
const maxArrivalsPerCycle = 10000

// maxQueued bounds the live messages a partition queues between two cycles; beyond it its
// follower waits for the cycle to take them.
const maxQueued = 5000

// partition is the loader view of one offsets partition. Its tail goroutine replays the
// partition into a Replayer of its own; once caught up, the Replayer is the cycle's (swap),
// and the tail only queues what it reads: the cycle feeds the queue to the Replayer and reads
// it in between (loader.Replayer.View), so that no second copy of the live keys is made.
// Memory: the Replayer's live keys, the dirty groups, at most maxQueued messages and
// maxArrivalsPerCycle arrivals.
type partition struct {
	index int32

	mu        sync.Mutex
	rep       *loader.Replayer // after the first catch-up; nil before. Fed by take only
	queued    []loader.Message // read live since the last take
	changed   bool             // messages since the last take
	all       bool             // a new replay replaced the view: every group is dirty
	dirty     map[string]struct{}
	arrivals  []arrival
	dropped   int
	following bool // the tail is open and caught up
	lastErr   error

	// Owned by the cycle (no lock): the view at the last take (asked group by group: a copy
	// of its offsets by group would double what watch holds per key), and its transactional
	// commits left pending by group (few).
	view      *loader.PersistedOffsets
	pendingBy map[string][]loader.CommittedOffset
	caught    bool // view holds a complete replay
}

// groups yields the groups of the view (those with offsets or a group record).
func (p *partition) groups() iter.Seq[string] {
	if p.view == nil {
		return func(func(string) bool) {}
	}
	return p.view.GroupNames()
}

// holds reports whether the view holds group.
func (p *partition) holds(group string) bool { return p.view != nil && p.view.HasGroup(group) }

// offsetsOf yields the loaded offsets of group in the view.
func (p *partition) offsetsOf(group string) iter.Seq[loader.CommittedOffset] {
	if p.view == nil {
		return func(func(loader.CommittedOffset) bool) {}
	}
	return p.view.EachGroupOffset(group)
}

func newPartition(i int32) *partition {
	return &partition{index: i, dirty: map[string]struct{}{}}
}

// swap installs a replay that has just caught up.
func (p *partition) swap(r *loader.Replayer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rep, p.changed, p.all, p.following, p.lastErr = r, true, true, true, nil
	p.queued = nil // the new replay read them
	clear(p.dirty)
}

// apply feeds one live message and records what it touched. It returns the replicated
// offset commits it holds (for the metrics).
func (p *partition) apply(m pulsarx.TailMessage, recs []offsetlog.Record, now time.Time) []arrival {
	var arr []arrival
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queued = append(p.queued, m.Message)
	p.changed = true
	for _, r := range recs {
		if r.Group == "" {
			continue
		}
		if _, ok := p.dirty[r.Group]; !ok {
			p.dirty[strings.Clone(r.Group)] = struct{}{}
		}
		if m.ReplicatedFrom == "" || r.Kind != offsetlog.KindOffsetCommit || r.Offset == nil || r.Partition == nil {
			continue
		}
		a := arrival{key: verdict.Key{Group: r.Group, Topic: r.Topic, Partition: *r.Partition}, offset: *r.Offset, at: now, from: m.ReplicatedFrom}
		if r.CommitTimestamp != nil {
			a.committed = r.CommitTimestamp.Time()
		}
		arr = append(arr, a)
		if len(p.arrivals) < maxArrivalsPerCycle {
			p.arrivals = append(p.arrivals, a)
		} else {
			p.dropped++
		}
	}
	return arr
}

// waitRoom waits while the partition queues maxQueued messages, for the cycle to take them
// (or ctx to end).
func (p *partition) waitRoom(ctx context.Context) {
	for {
		p.mu.Lock()
		n := len(p.queued)
		p.mu.Unlock()
		if n < maxQueued || reload.Sleep(ctx, 10*time.Millisecond) != nil {
			return
		}
	}
}

func (p *partition) failed(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.following, p.lastErr = false, err
}

// take refreshes the cycle's view when messages arrived and returns what changed since the
// last take: the dirty groups (all: every group of the partition), the replicated commits.
func (p *partition) take() (dirty []string, all bool, arr []arrival, dropped int, following, failing bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	following, failing = p.following, p.lastErr != nil
	if p.rep == nil {
		return nil, false, nil, 0, following, failing
	}
	if p.changed {
		for _, m := range p.queued {
			_ = p.rep.ApplyMessage(m) // decode errors are counted, never fatal
		}
		p.queued = nil
		view := p.rep.View() // valid until the next take feeds the Replayer
		if p.all {
			// Groups gone from the new replay are dirty too: their rows must be rebuilt.
			dirty = slices.AppendSeq(dirty, p.groups())
		}
		pendingBy := map[string][]loader.CommittedOffset{}
		for _, co := range view.Pending() {
			pendingBy[co.Group] = append(pendingBy[co.Group], co)
		}
		p.view, p.pendingBy, p.caught, p.changed = view, pendingBy, true, false
	}
	all, p.all = p.all, false
	for g := range p.dirty {
		dirty = append(dirty, g)
	}
	clear(p.dirty)
	arr, p.arrivals = p.arrivals, nil
	dropped, p.dropped = p.dropped, 0
	slices.Sort(dirty)
	return slices.Compact(dirty), all, arr, dropped, following, failing
}

// follower reads the offsets topics: one follower per offsets partition of each cluster,
// feeding the cycle's partition views and the Store of the job that reads the commit stream.
type follower struct {
	o     *Options
	m     *Metrics
	log   *slog.Logger
	store func(cluster string) *streamsync.Store // nil: no job reads the cluster's commits
}

// startCluster learns the partition count (retrying with backoff while the cluster does
// not answer) and starts one follower per offsets partition.
func (f *follower) startCluster(ctx context.Context, c *clusterRT, wg *sync.WaitGroup) {
	backoff := f.o.Backoff
	var n int32
	for {
		cctx, cancel := context.WithTimeout(ctx, f.o.CallTimeout)
		var err error
		n, err = c.Tailer.Partitions(cctx)
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		f.m.errors.WithLabelValues(c.Name, "admin").Inc()
		f.log.Warn("offsets topic not readable; retrying", "cluster", c.Name, "err", err.Error(), "retryIn", backoff.String())
		if reload.Sleep(ctx, backoff) != nil {
			return
		}
		backoff = min(2*backoff, f.o.MaxBackoff)
	}
	parts := make([]*partition, n)
	for i := range parts {
		parts[i] = newPartition(int32(i))
	}
	c.mu.Lock()
	c.n, c.parts = n, parts
	c.mu.Unlock()
	if s := f.store(c.Name); s != nil {
		s.SetPartitions(n)
	}
	f.log.Info("following offsets topic", "cluster", c.Name, "partitions", n)
	for _, p := range parts {
		wg.Go(func() { f.follow(ctx, c, p) })
	}
}

// follow replays one offsets partition, then follows it; after a failure it starts over
// with a new replay (the old view stays in use until the new one has caught up).
func (f *follower) follow(ctx context.Context, c *clusterRT, p *partition) {
	backoff := f.o.Backoff
	st := f.store(c.Name) // a job's copy (nil when no job reads the commit stream)
	for ctx.Err() == nil {
		next := loader.NewReplayer(p.index, loader.OrderingKoP)
		live := false
		start := f.o.Now()
		if st != nil {
			st.Begin(p.index)
		}
		err := c.Tailer.Tail(ctx, p.index, func(m pulsarx.TailMessage) error {
			if !live {
				_ = next.ApplyMessage(m.Message) // decode errors are counted, never fatal
				if st != nil {
					st.Replayed(p.index, m.Message)
				}
				return nil
			}
			// Decoded once, for the sync engine and the cycle's queue (undecodable parts are
			// counted by the Replayers).
			recs, _ := offsetlog.Decode(m.Key, m.Value)
			if st != nil {
				st.Live(p.index, m, recs) // first: sync does not wait for the cycle to take the queue
			}
			p.waitRoom(ctx)
			f.m.messages.WithLabelValues(c.Name).Inc()
			for _, a := range p.apply(m, recs, f.o.Now()) {
				f.m.replicated.WithLabelValues(c.Name, a.from).Inc()
				if !a.committed.IsZero() {
					f.m.replDelay.WithLabelValues(c.Name, a.from).Observe(max(0, a.at.Sub(a.committed).Seconds()))
				}
			}
			return nil
		}, func() {
			live = true
			msgs := next.Counts().Messages // next is the cycle's after the swap
			p.swap(next)
			if st != nil {
				st.CaughtUp(p.index)
			}
			d := f.o.Now().Sub(start)
			f.m.replayDuration.WithLabelValues(c.Name).Observe(d.Seconds())
			f.log.Info("offsets partition replayed; following", "cluster", c.Name, "partition", p.index,
				"messages", msgs, "seconds", d.Seconds())
			backoff = f.o.Backoff
		})
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("reader ended")
		}
		p.failed(err)
		if st != nil {
			st.Failed(p.index)
		}
		f.m.errors.WithLabelValues(c.Name, "pulsar").Inc()
		f.log.Warn("offsets partition reader failed; replaying again", "cluster", c.Name, "partition", p.index,
			"err", err.Error(), "retryIn", backoff.String())
		if reload.Sleep(ctx, backoff) != nil {
			return
		}
		backoff = min(2*backoff, f.o.MaxBackoff)
	}
}
