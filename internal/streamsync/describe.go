package streamsync

// Who is live where: DescribeGroups, asked only where the members are not known (the
// commit stream keeps them current), and the probe of a cluster seen down.

import (
	"context"
	"sync"
	"time"
)

// describer asks the clusters about groups' members and tells the engine's health what
// it learnt.
type describer struct {
	clusters    []Cluster
	members     *membership
	health      *health
	obs         Observer
	callTimeout time.Duration
	retry       time.Duration
	all         func() // every group due: a cluster is back, it missed what the others committed
}

// probeGroup is the group a probe describes: any name does (KoP answers Dead for a group it
// does not know); this one says whose it is.
const probeGroup = "kop-offsets-sync-probe"

// probe asks every cluster the watch cycle's probe saw down, once its quiet ends, whether it
// answers (one DescribeGroups, a second at most): the first answer makes every group due (it
// missed what the others committed), up to a cycle before the watch's probe would say so.
func (d *describer) probe(ctx context.Context) {
	now := time.Now()
	for _, c := range d.clusters {
		if c.Members == nil || d.health.up(c.Name) || !d.health.answers(c.Name, now) {
			continue
		}
		_ = d.ask(ctx, c, []string{probeGroup}, map[string]int{}) // still down: the cycle said so
	}
}

// describe returns, by cluster, the members of groups: what is known, and for the rest what
// one DescribeGroups per cluster answers. A cluster down, quiet, or failing is missing.
func (d *describer) describe(ctx context.Context, groups []string) map[string]map[string]int {
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
	for _, c := range d.clusters {
		if !d.health.answers(c.Name, now) || c.Members == nil {
			continue
		}
		known := map[string]int{}
		var ask []string
		for _, g := range groups {
			if n, ok := d.members.lookup(c.Name, g, now); ok {
				known[g] = n
			} else {
				ask = append(ask, g)
			}
		}
		wg.Go(func() {
			var err error
			if len(ask) > 0 {
				err = d.ask(ctx, c, ask, known)
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
			d.obs.DescribeFailed(f.cluster, f.asked, f.err)
		}
	}
	return out
}

// ask asks c about groups and adds the answers to into; an error when c did not answer (it
// is then left quiet for Retry: a cluster that hangs delays no step after this one).
func (d *describer) ask(ctx context.Context, c Cluster, groups []string, into map[string]int) error {
	seq := d.members.ask()
	timeout := d.callTimeout
	if !d.health.up(c.Name) {
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
		d.health.failed(c.Name, time.Now(), d.retry)
		return err
	}
	if d.health.answered(c.Name) {
		d.all() // back: it missed what the others committed
	}
	d.members.set(c.Name, acts, seq, time.Now())
	for g, a := range acts {
		if a.Err == nil {
			into[g] = a.Members
		}
	}
	return nil
}
