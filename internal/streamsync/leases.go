package streamsync

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// leases are the writer leases of the synced clusters, held while this process syncs. Owned by
// the goroutine that runs steps.
type leases struct {
	e *Engine

	active, known bool
	next          time.Time // a standby tries again then
	err           error     // why the last hold failed
}

// hold takes the writer lease of every cluster that is up, in name order (two replicas never
// hold one each), and reports whether this process holds them all; else it gives back what it
// took and tries again after Retry (the holder's leases expire with its connections when it
// dies). Taking over, it syncs every group: it missed what changed.
func (l *leases) hold(ctx context.Context) bool {
	e, now := l.e, time.Now()
	if !l.active && l.known && now.Before(l.next) {
		return false
	}
	cs := slices.Clone(e.clusters)
	slices.SortFunc(cs, func(a, b Cluster) int { return strings.Compare(a.Name, b.Name) })
	var failed error
	var on string
	for _, c := range cs {
		if c.Lease == nil || !e.health.up(c.Name) {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, e.o.CallTimeout)
		err := c.Lease.Acquire(cctx)
		cancel()
		if err != nil {
			failed, on = err, c.Name
			break
		}
	}
	active := failed == nil
	l.err = nil
	if !active {
		l.release()
		l.next = now.Add(e.o.Retry)
		l.err = fmt.Errorf("cluster %s: %w", on, failed)
	}
	if !l.known || active != l.active {
		e.obs.Active(active, on, failed)
		if active && l.known {
			e.all()
		}
	}
	l.active, l.known = active, true
	return active
}

// release gives back every lease.
func (l *leases) release() {
	for _, c := range l.e.clusters {
		if c.Lease != nil {
			c.Lease.Release()
		}
	}
}
