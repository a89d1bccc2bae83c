package streamsync

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"time"
)

// queue is the groups due for a sync, each once however often it committed (the latest state
// is read when it is synced), first due first taken (under a backlog no group waits behind
// groups that became due after it), and those left for later.
type queue struct {
	retry time.Duration

	mu    sync.Mutex
	due   map[string]bool      // groups to sync now
	order []string             // due, in the order they became due
	later map[string]time.Time // groups to sync again at
	// busy are the groups taken and not done: due again meanwhile, they wait in order until
	// done (a group is never planned while its last commit is in flight).
	busy map[string]bool
}

func newQueue(retry time.Duration) *queue {
	return &queue{retry: retry, due: map[string]bool{}, later: map[string]time.Time{}, busy: map[string]bool{}}
}

// add makes groups due.
func (q *queue) add(groups []string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, g := range groups {
		q.push(g)
		delete(q.later, g)
	}
}

// push makes g due, at the end of the order unless it is due already (with q.mu held).
func (q *queue) push(g string) {
	if !q.due[g] {
		q.due[g] = true
		q.order = append(q.order, g)
	}
}

// take returns the groups due at now (at most n), first due first, and removes them.
func (q *queue) take(now time.Time, n int) []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var back []string
	for g, at := range q.later {
		if !now.Before(at) {
			back = append(back, g)
		}
	}
	slices.SortFunc(back, func(a, b string) int { return cmp.Or(q.later[a].Compare(q.later[b]), strings.Compare(a, b)) })
	for _, g := range back {
		q.push(g)
		delete(q.later, g)
	}
	var groups []string
	rest := q.order[:0]
	for _, g := range q.order {
		if len(groups) < n && !q.busy[g] {
			groups = append(groups, g)
			delete(q.due, g)
			q.busy[g] = true
			continue
		}
		rest = append(rest, g)
	}
	clear(q.order[len(rest):])
	q.order = rest
	return groups
}

// done ends group's take: due again, it can be taken again.
func (q *queue) done(group string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.busy, group)
}

// retryLater makes group due after the retry delay, unless it is due already.
func (q *queue) retryLater(group string, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.due[group] {
		if _, ok := q.later[group]; !ok {
			q.later[group] = now.Add(q.retry)
		}
	}
}

// wait is how long until a group left for later is due (the retry delay at most); 0 when a
// group that is not busy is due now.
func (q *queue) wait(now time.Time) time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, g := range q.order {
		if !q.busy[g] {
			return 0
		}
	}
	d := q.retry
	for _, at := range q.later {
		d = min(d, max(at.Sub(now), 0))
	}
	return d
}

// size is how many groups are due or left for later.
func (q *queue) size() (due, later int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.due), len(q.later)
}
