package watch

// Retention: what watch holds follows the live groups.

import "time"

// forget drops what belongs to groups gone everywhere: the replicated commits tracked for
// staleness and, on a resync, the log-end offsets of topics no row names and the cooldowns
// that have passed (KoP's answers are the cycle's only). A group is gone when, asked this
// cycle, it has no row and no replayed view holds it (deleted, or expired by KoP): memory
// follows the live groups, not every group that ever existed.
func (w *Watcher) forget(asked []string, resync bool, now time.Time) {
	gone := map[string]bool{}
	isGone := func(g string) {
		if _, ok := w.rows[g]; !ok && !w.held(g) {
			gone[g] = true
		}
	}
	for _, g := range asked {
		isGone(g)
	}
	if resync {
		// A full sweep: whatever an earlier cycle left.
		for _, c := range w.clusters {
			for k := range c.pending {
				isGone(k.Group)
			}
		}
	}
	for _, c := range w.clusters {
		if len(gone) > 0 {
			for k := range c.pending {
				if gone[k.Group] {
					delete(c.pending, k)
				}
			}
		}
		if !resync {
			continue
		}
		w.forgetTopics(c)
		for r, at := range c.lastReload {
			if now.Sub(at) >= w.o.Cooldown {
				delete(c.lastReload, r)
			}
		}
	}
}

// held reports whether a replayed view of any cluster holds group.
func (w *Watcher) held(group string) bool {
	for _, c := range w.clusters {
		if p := c.partitionOf(group); p != nil && p.holds(group) {
			return true
		}
	}
	return false
}

// forgetTopics drops c's log-end offsets of topics no row names.
func (w *Watcher) forgetTopics(c *clusterRT) {
	named := map[string]bool{}
	for _, rs := range w.rows {
		for _, t := range rs.Topics() {
			named[t] = true
		}
	}
	for t := range c.leo {
		if !named[t] {
			delete(c.leo, t)
		}
	}
}
