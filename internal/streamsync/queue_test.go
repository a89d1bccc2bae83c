package streamsync

import (
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// TestQueueTakeDedupesFirstDueFirst: a group added many times is due once, at the place it
// first became due; take returns the due groups first due first and removes them.
func TestQueueTakeDedupesFirstDueFirst(t *testing.T) {
	q := newQueue(time.Second)
	q.add([]string{"c", "a", "b", "a"})
	q.add([]string{"c"})
	if due, later := q.size(); due != 3 || later != 0 {
		t.Fatalf("size %d due, %d later, want 3, 0", due, later)
	}
	if got := q.take(t0, 10); !slices.Equal(got, []string{"c", "a", "b"}) {
		t.Fatalf("take = %v, want [c a b]", got)
	}
	if got := q.take(t0, 10); len(got) != 0 {
		t.Fatalf("second take = %v, want nothing (taken groups are removed)", got)
	}
	if due, _ := q.size(); due != 0 {
		t.Fatalf("%d due after every group was taken", due)
	}
	// Due again while taken (its commit in flight): it waits until done, then is taken
	// again, once, in the order it became due.
	q.add([]string{"b", "a"})
	q.add([]string{"c", "b"})
	if got := q.take(t0, 10); len(got) != 0 {
		t.Fatalf("take = %v while every group is busy, want nothing", got)
	}
	if w := q.wait(t0); w == 0 {
		t.Fatal("wait is 0 while every due group is busy")
	}
	q.done("a")
	if w := q.wait(t0); w != 0 {
		t.Fatalf("wait %s with a due group done, want 0", w)
	}
	q.done("b")
	q.done("c")
	if got := q.take(t0, 10); !slices.Equal(got, []string{"b", "a", "c"}) {
		t.Fatalf("take = %v, want [b a c]", got)
	}
}

// TestQueueTakeHonoursN: take returns the first n groups due and leaves the rest, which
// go before the groups due after them.
func TestQueueTakeHonoursN(t *testing.T) {
	q := newQueue(time.Second)
	q.add([]string{"d", "c", "b", "a", "e"})
	if got := q.take(t0, 2); !slices.Equal(got, []string{"d", "c"}) {
		t.Fatalf("take(2) = %v, want [d c]", got)
	}
	if due, _ := q.size(); due != 3 {
		t.Fatalf("%d due after take(2) of 5, want 3", due)
	}
	q.add([]string{"f", "d"})
	if got := q.take(t0, 10); !slices.Equal(got, []string{"b", "a", "e", "f"}) {
		t.Fatalf("take(10) = %v, want [b a e f] (d is busy)", got)
	}
	q.done("d")
	if got := q.take(t0, 10); !slices.Equal(got, []string{"d"}) {
		t.Fatalf("take(10) = %v, want [d] once it is done", got)
	}
	if got := q.take(t0, 0); len(got) != 0 {
		t.Fatalf("take(0) = %v", got)
	}
}

// TestQueueRetriesTakenByRetryTime: groups left for later come back after the groups due
// already, the earliest retry first.
func TestQueueRetriesTakenByRetryTime(t *testing.T) {
	const retry = time.Second
	q := newQueue(retry)
	q.retryLater("x", t0.Add(200*time.Millisecond))
	q.retryLater("y", t0)
	q.retryLater("w", t0.Add(100*time.Millisecond))
	q.retryLater("late", t0.Add(time.Hour))
	q.add([]string{"z"})
	if got := q.take(t0.Add(retry+200*time.Millisecond), 10); !slices.Equal(got, []string{"z", "y", "w", "x"}) {
		t.Fatalf("take = %v, want [z y w x]", got)
	}
	if due, later := q.size(); due != 0 || later != 1 {
		t.Fatalf("size %d due, %d later, want 0, 1", due, later)
	}
}

// TestQueueRetryLater: a group left for later is due only once the retry delay has passed.
func TestQueueRetryLater(t *testing.T) {
	const retry = 2 * time.Second
	q := newQueue(retry)
	q.retryLater("g", t0)
	if due, later := q.size(); due != 0 || later != 1 {
		t.Fatalf("size %d due, %d later, want 0, 1", due, later)
	}
	if got := q.take(t0, 10); len(got) != 0 {
		t.Fatalf("take at once = %v, want nothing", got)
	}
	if got := q.take(t0.Add(retry-time.Nanosecond), 10); len(got) != 0 {
		t.Fatalf("take just before the retry delay = %v, want nothing", got)
	}
	if got := q.take(t0.Add(retry), 10); !slices.Equal(got, []string{"g"}) {
		t.Fatalf("take at the retry delay = %v, want [g]", got)
	}
	if due, later := q.size(); due != 0 || later != 0 {
		t.Fatalf("size after the retry was taken: %d due, %d later, want 0, 0", due, later)
	}
}

// TestQueueRetryLaterKeepsTheFirstTime: leaving a group for later again does not push its
// retry further out.
func TestQueueRetryLaterKeepsTheFirstTime(t *testing.T) {
	const retry = time.Second
	q := newQueue(retry)
	q.retryLater("g", t0)
	q.retryLater("g", t0.Add(900*time.Millisecond))
	if got := q.take(t0.Add(retry), 10); !slices.Equal(got, []string{"g"}) {
		t.Fatalf("take at the first retry time = %v, want [g]", got)
	}
}

// TestQueueRetryLaterWhileDue: a group due now is not also left for later: once taken, it
// does not come back after the retry delay.
func TestQueueRetryLaterWhileDue(t *testing.T) {
	const retry = time.Second
	q := newQueue(retry)
	q.add([]string{"g"})
	q.retryLater("g", t0)
	if due, later := q.size(); due != 1 || later != 0 {
		t.Fatalf("size %d due, %d later, want 1, 0", due, later)
	}
	if got := q.take(t0, 10); !slices.Equal(got, []string{"g"}) {
		t.Fatalf("take = %v, want [g]", got)
	}
	if got := q.take(t0.Add(10*retry), 10); len(got) != 0 {
		t.Fatalf("take after the retry delay = %v, want nothing", got)
	}
}

// TestQueueAddCancelsRetry: a group left for later that commits again is due now, once.
func TestQueueAddCancelsRetry(t *testing.T) {
	const retry = time.Second
	q := newQueue(retry)
	q.retryLater("g", t0)
	q.add([]string{"g"})
	if got := q.take(t0, 10); !slices.Equal(got, []string{"g"}) {
		t.Fatalf("take = %v, want [g] at once", got)
	}
	if got := q.take(t0.Add(retry), 10); len(got) != 0 {
		t.Fatalf("take at the old retry time = %v, want nothing", got)
	}
}

// TestQueueWait: 0 with a group due; otherwise until the first retry, the retry delay at
// most.
func TestQueueWait(t *testing.T) {
	const retry = time.Second
	q := newQueue(retry)
	if d := q.wait(t0); d != retry {
		t.Fatalf("empty queue: wait %v, want the retry delay %v", d, retry)
	}
	q.retryLater("a", t0)
	q.retryLater("b", t0.Add(400*time.Millisecond))
	if d := q.wait(t0); d != retry {
		t.Fatalf("wait at the first retry's start = %v, want %v", d, retry)
	}
	if d := q.wait(t0.Add(300 * time.Millisecond)); d != 700*time.Millisecond {
		t.Fatalf("wait 300ms later = %v, want 700ms (a's retry)", d)
	}
	if d := q.wait(t0.Add(5 * retry)); d != 0 {
		t.Fatalf("wait past every retry = %v, want 0", d)
	}
	q.add([]string{"c"})
	if d := q.wait(t0); d != 0 {
		t.Fatalf("wait with a group due = %v, want 0", d)
	}
	for _, now := range []time.Time{t0, t0.Add(-time.Hour), t0.Add(time.Hour)} {
		if d := q.wait(now); d < 0 || d > retry {
			t.Fatalf("wait(%v) = %v, outside [0, retry]", now, d)
		}
	}
}
