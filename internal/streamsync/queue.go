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
}

func newQueue(retry time.Duration) *queue {
	return &queue{retry: retry, due: map[string]bool{}, later: map[string]time.Time{}}
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
	k := min(n, len(q.order))
	groups := slices.Clone(q.order[:k])
	q.order = slices.Delete(q.order, 0, k)
	for _, g := range groups {
		delete(q.due, g)
	}
	return groups
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
// group is due now.
func (q *queue) wait(now time.Time) time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.due) > 0 {
		return 0
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
