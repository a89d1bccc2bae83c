package streamsync

import (
	"context"
	"sync"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/match"
	"github.com/kop-offsets/kop-offsets/internal/offsetsync"
	"github.com/kop-offsets/kop-offsets/internal/reload"
)

// chunk is how many groups one step decides at once (one DescribeGroups per cluster at most).
const chunk = 1000

// reads is how many topic partitions a step reads ahead at once (Syncer.Warm).
const reads = 8

// Run syncs due groups until ctx ends, then waits for the commits in flight and gives back
// the leases.
func (e *Engine) Run(ctx context.Context) {
	defer e.leases.release()
	defer e.syncer.Pool.Wait() // the reads left in the background end with ctx
	defer e.flying.Wait()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		timer.Reset(e.q.wait(time.Now()))
		select {
		case <-ctx.Done():
			return
		case <-e.kick:
		case <-timer.C:
		}
		// Coalesce: the commits of the next Window are synced with this one.
		if reload.Sleep(ctx, e.o.Window) != nil {
			return
		}
		e.probe(ctx)
		for ctx.Err() == nil && e.ready() && e.leases.hold(ctx) {
			groups := e.q.take(time.Now(), chunk)
			if len(groups) == 0 {
				break
			}
			e.step(ctx, groups, nil)
		}
	}
}

// probeGroup is the group a probe describes: any name does (KoP answers Dead for a group it
// does not know); this one says whose it is.
const probeGroup = "kop-offsets-sync-probe"

// probe asks every cluster the watch cycle's probe saw down, once its quiet ends, whether it
// answers (one DescribeGroups, a second at most): the first answer makes every group due (it
// missed what the others committed), up to a cycle before the watch's probe would say so.
func (e *Engine) probe(ctx context.Context) {
	now := time.Now()
	for _, c := range e.clusters {
		if c.Members == nil || e.health.up(c.Name) || !e.health.answers(c.Name, now) {
			continue
		}
		_ = e.ask(ctx, c, []string{probeGroup}, map[string]int{}) // still down: the cycle said so
	}
}

// step syncs groups: their members where not known, their views, the plans, the commits.
// sw, when set, sums what was done (a sweep).
func (e *Engine) step(ctx context.Context, groups []string, sw *Sweep) {
	t0 := time.Now()
	members := e.describe(ctx, groups)
	t1 := time.Now()
	views := make(map[string]map[string]offsetsync.View, len(groups))
	now := time.Now()
	var answering []Cluster
	for _, c := range e.clusters {
		if e.health.answers(c.Name, now) {
			answering = append(answering, c)
		}
	}
	for _, g := range groups {
		views[g] = e.views(g, answering, members, now)
	}
	wait := e.o.ReadWait
	if sw != nil {
		wait = 0 // a sweep (setup's seed) syncs every group it can now: it waits for the reads
	}
	e.syncer.WarmFor(ctx, views, reads, wait)
	t2 := time.Now()
	plans := make([]*offsetsync.Plan, len(groups))
	sent := 0
	for i, g := range groups {
		plans[i] = e.syncer.Plan(ctx, g, views[g])
		if plans[i].Sends() {
			sent++
		}
	}
	t3 := time.Now()
	for i, p := range plans {
		if !e.launch(ctx, groups[i], p, sw) {
			for _, g := range groups[i:] {
				e.q.done(g)
			}
			return // stopping: what was sent is in KoP, the rest is read back at start
		}
	}
	t4 := time.Now()
	e.obs.Step(StepStats{Groups: len(groups), Sent: sent, Describe: t1.Sub(t0), Read: t2.Sub(t1), Plan: t3.Sub(t2), Apply: t4.Sub(t3), All: t4.Sub(t0)})
}

// launch applies group's plan p: at once when it sends nothing, else on a goroutine of its
// own once fewer than MaxInFlight groups' commits are in flight (the next step is read and
// planned while they are: a step that waited for its slowest commit left KoP idle, and
// 10,000 groups at 1,000 commits a second fell behind). The group stays taken (never
// planned twice at once) until its result is recorded. false: ctx ended first.
func (e *Engine) launch(ctx context.Context, group string, p *offsetsync.Plan, sw *Sweep) bool {
	if !p.Sends() {
		e.record(p.Apply(ctx), sw, time.Now())
		e.q.done(group)
		return true
	}
	select {
	case e.sem <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	e.flying.Go(func() {
		res := p.Apply(ctx)
		<-e.sem
		if ctx.Err() == nil {
			e.record(res, sw, time.Now())
		}
		e.q.done(group)
		e.wake()
	})
	return true
}

// record reports res and leaves the group for later when it is not done. Called from the
// goroutines of the commits in flight: one at a time.
func (e *Engine) record(res offsetsync.Result, sw *Sweep, now time.Time) {
	e.recording.Lock()
	defer e.recording.Unlock()
	e.obs.Result(res)
	for _, c := range e.clusters {
		if cs := res.Committed[c.Name]; len(cs) > 0 {
			e.acked.add(c.Name, res.Group, cs, e.entryOf(c, res.Group), now)
		}
	}
	if len(res.Errors) > 0 {
		// A commit refused may be a group that became live there: ask again.
		e.members.forget("", []string{res.Group})
	}
	again := unfinished(res, e.health.up)
	if again {
		e.q.retryLater(res.Group, now)
	}
	if sw != nil {
		sw.add(res, again)
	}
}

// unfinished reports whether the group's sync is not done: a failure, a key behind (data not
// replicated yet) or whose copies are still being read, split brain (once one side's members leave, the other is the source), or
// members unknown on a cluster that answers (up).
func unfinished(res offsetsync.Result, up func(string) bool) bool {
	if len(res.Errors) > 0 || res.SplitBrain != "" || len(res.Reading) > 0 {
		return true
	}
	for _, sy := range res.Synced {
		if sy.Behind {
			return true
		}
	}
	for _, l := range res.Left {
		if l.Partition < 0 && up(l.Cluster) {
			return true
		}
	}
	return false
}

// describe returns, by cluster, the members of groups: what is known, and for the rest what
// one DescribeGroups per cluster answers. A cluster down, quiet, or failing is missing.
func (e *Engine) describe(ctx context.Context, groups []string) map[string]map[string]int {
	now := time.Now()
	out := map[string]map[string]int{}
	type failure struct {
		cluster string
		asked   int
		err     error
	}
	var failed []failure
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range e.clusters {
		if !e.health.answers(c.Name, now) || c.Members == nil {
			continue
		}
		known := map[string]int{}
		var ask []string
		for _, g := range groups {
			if n, ok := e.members.lookup(c.Name, g, now); ok {
				known[g] = n
			} else {
				ask = append(ask, g)
			}
		}
		wg.Go(func() {
			var err error
			if len(ask) > 0 {
				err = e.ask(ctx, c, ask, known)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, failure{c.Name, len(ask), err})
				return
			}
			out[c.Name] = known
		})
	}
	wg.Wait()
	for _, f := range failed { // the Observer is called from one goroutine at a time
		if ctx.Err() == nil {
			e.obs.DescribeFailed(f.cluster, f.asked, f.err)
		}
	}
	return out
}

// ask asks c about groups and adds the answers to into; an error when c did not answer (it
// is then left quiet for Retry: a cluster that hangs delays no step after this one).
func (e *Engine) ask(ctx context.Context, c Cluster, groups []string, into map[string]int) error {
	seq := e.members.ask()
	timeout := e.o.CallTimeout
	if !e.health.up(c.Name) {
		// Seen down by the probe: asked to learn that it is back, which a KoP that answers
		// says in milliseconds; a second is all a gone cluster costs a step.
		timeout = min(timeout, time.Second)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	acts, err := c.Members.DescribeGroups(cctx, groups)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err() // stopping: nothing to report
		}
		e.health.failed(c.Name, time.Now(), e.o.Retry)
		return err
	}
	if e.health.answered(c.Name) {
		e.all() // back: it missed what the others committed
	}
	e.members.set(c.Name, acts, seq, time.Now())
	for g, a := range acts {
		if a.Err == nil {
			into[g] = a.Members
		}
	}
	return nil
}

// views is group on every cluster of answering that has read its partition, the offsets
// filtered by Topics; MembersKnown where members (describe's) has the group.
func (e *Engine) views(g string, answering []Cluster, members map[string]map[string]int, now time.Time) map[string]offsetsync.View {
	views := map[string]offsetsync.View{}
	for _, c := range answering {
		offs, ok := e.stores[c.Name].Offsets(g)
		if !ok {
			continue
		}
		var v offsetsync.View
		for _, co := range e.acked.overlay(c.Name, g, c.KafkaNamespace, offs) {
			if match.Any(e.o.Topics, loader.ShortName(co.Topic, c.KafkaNamespace), co.Topic) {
				v.Offsets = append(v.Offsets, co)
			}
		}
		v.Members, v.MembersKnown = members[c.Name][g]
		v.Replicating = e.stores[c.Name].Replicating(g, now)
		views[c.Name] = v
	}
	return views
}

// entryOf looks group's key up in c's Store as it is now (topic: the Kafka short name).
func (e *Engine) entryOf(c Cluster, group string) func(topic string, partition int32) (loader.CommittedOffset, bool) {
	offs, _ := e.stores[c.Name].Offsets(group)
	return func(topic string, partition int32) (loader.CommittedOffset, bool) {
		for _, co := range offs {
			if co.Partition == partition && loader.ShortName(co.Topic, c.KafkaNamespace) == topic {
				return co, true
			}
		}
		return loader.CommittedOffset{}, false
	}
}

var _ Describer = kop.KafkaGroups{}
