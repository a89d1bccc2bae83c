package align

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrReading says a translation waits for a read of the copies that is still running: WarmFor
// left it reading in the background. Asked again once the read ends, the translation answers
// from what was read.
var ErrReading = errors.New("the copies are still being read")

// reading is a Pool's reads that run in the background: a Tracker being read is touched by
// its read's goroutine alone until the read ends, and whoever asks it meanwhile is told
// ErrReading instead of waiting. One copy that hangs (a cluster whose KoP lists messages it
// cannot fetch) then delays only the groups that commit on it, not every step of a sync.
type reading struct {
	mu   sync.Mutex
	busy map[poolKey]bool
	wg   sync.WaitGroup
	sem  chan struct{} // at most par reads at once, over every WarmFor
	// seen is what each Tracker had read when last free: Stats sums it for a busy one, so
	// the sum never goes back.
	seen map[poolKey]TrackerStats
}

func (r *reading) isBusy(k poolKey) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.busy[k]
}

func (r *reading) claim(k poolKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.busy == nil {
		r.busy = map[poolKey]bool{}
	}
	r.busy[k] = true
}

func (r *reading) release(k poolKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.busy, k)
}

// WarmFor is Warm that waits for its reads at most wait (0: until they end). A read still
// running then goes on in the background, under ctx: until it ends, Translate of its topic
// partition returns ErrReading, and a later WarmFor does not start it again. Wait waits for
// the reads in the background.
func (p *Pool) WarmFor(ctx context.Context, reqs []Request, par int, wait time.Duration) {
	upTo := map[poolKey]int64{}
	for _, r := range reqs {
		k := poolKey{from: r.From, to: r.To, topic: r.Topic, partition: r.Partition}
		if o, ok := upTo[k]; !ok || r.Offset > o {
			upTo[k] = r.Offset
		}
	}
	if p.rd.sem == nil {
		p.rd.sem = make(chan struct{}, max(par, 1))
	}
	var wg sync.WaitGroup
	for k, o := range upTo {
		if p.rd.isBusy(k) {
			continue // read by an earlier call: its goroutine alone touches the Tracker
		}
		tr, err := p.tracker(k, 0)
		if err != nil || (tr.Covered() >= o && !tr.provisional) {
			continue // no source (Translate says so), or nothing to read
		}
		p.rd.claim(k)
		wg.Add(1)
		p.rd.wg.Add(1)
		go func() {
			defer p.rd.wg.Done()
			defer wg.Done()
			defer p.rd.release(k)
			select {
			case p.rd.sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-p.rd.sem }()
			_, _ = tr.Translate(ctx, o) // an error is met again, per group, by Translate
		}()
	}
	waitFor(&wg, wait)
}

// Wait waits for the reads WarmFor left in the background (they end with their ctx).
func (p *Pool) Wait() { p.rd.wg.Wait() }

// waitFor waits for wg, at most d (0: without bound).
func waitFor(wg *sync.WaitGroup, d time.Duration) {
	if d <= 0 {
		wg.Wait()
		return
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}
