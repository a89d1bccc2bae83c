package streamsync

import (
	"sync"
	"time"
)

// health is whether each cluster answers: up as the watch cycle's probe last saw it, and
// quiet for a while after a DescribeGroups failed or the probe saw it down (a cluster that
// hangs is not asked again at every step, each ask waiting for the call timeout). A cluster
// the probe saw down is still asked once its quiet ends: the engine learns that it is back
// from its own answer, not at the next cycle (up to --interval later).
type health struct {
	mu    sync.Mutex
	ups   map[string]bool
	quiet map[string]time.Time
	// pause is how long the next failure leaves a cluster quiet: doubled at each failure
	// in a row (a cluster that hangs costs a step the call timeout once per pause, not at
	// every step), back to the first at an answer.
	pause map[string]time.Duration
}

// maxQuiet bounds how long a failing cluster is left unasked.
const maxQuiet = 8 * time.Second

func newHealth() *health {
	return &health{ups: map[string]bool{}, quiet: map[string]time.Time{}, pause: map[string]time.Duration{}}
}

// set records the probe's answer and reports whether the cluster came up (or was seen up for
// the first time).
func (h *health) set(cluster string, up bool) (came bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	was, known := h.ups[cluster]
	h.ups[cluster] = up
	if up && !was {
		delete(h.quiet, cluster)
		delete(h.pause, cluster)
	}
	return up && (!was || !known)
}

// state is the probe's last answer, and whether there was one.
func (h *health) state(cluster string) (up, known bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	up, known = h.ups[cluster]
	return up, known
}

// up reports whether the probe last saw cluster up.
func (h *health) up(cluster string) bool {
	u, _ := h.state(cluster)
	return u
}

// answers reports whether cluster is known to the probe and not quiet at now.
func (h *health) answers(cluster string, now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, known := h.ups[cluster]
	return known && !now.Before(h.quiet[cluster])
}

// failed leaves cluster unasked for first, or twice as long as after its last failure (at
// most maxQuiet), from now.
func (h *health) failed(cluster string, now time.Time, first time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := first
	if p, ok := h.pause[cluster]; ok {
		d = min(2*p, max(maxQuiet, first))
	}
	h.pause[cluster] = d
	h.quiet[cluster] = now.Add(d)
}

// answered ends cluster's run of failures, and reports whether there was one (the cluster
// is back: what the others committed meanwhile was not synced to it).
func (h *health) answered(cluster string) (back bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, back = h.pause[cluster]
	delete(h.pause, cluster)
	return back
}
