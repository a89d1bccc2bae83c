package streamsync

import (
	"maps"
	"slices"
	"sync"
	"time"
)

// queue is the groups due for a sync, each once however often it committed (the latest state
// is read when it is synced), and those left for later.
type queue struct {
	retry time.Duration

	mu    sync.Mutex
	due   map[string]bool      // groups to sync now
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
		q.due[g] = true
		delete(q.later, g)
	}
}

// take returns the groups due at now (at most n), sorted, and removes them.
func (q *queue) take(now time.Time, n int) []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	for g, at := range q.later {
		if !now.Before(at) {
			q.due[g] = true
			delete(q.later, g)
		}
	}
	groups := slices.Sorted(maps.Keys(q.due))
	if len(groups) > n {
		groups = groups[:n]
	}
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
