package watch

// Retention: what watch holds follows the live groups.

// forget drops what belongs to groups gone everywhere: the replicated commits tracked for
// staleness and, on a resync, the log-end offsets of topics no row names (KoP's answers are
// the cycle's only; repair forgets its cooldowns itself). A group is gone when, asked this
// cycle, it has no row and no replayed view holds it (deleted, or expired by KoP): memory
// follows the live groups, not every group that ever existed.
func (b *rowBook) forget(asked []string, resync bool) {
	gone := map[string]bool{}
	isGone := func(g string) {
		if _, ok := b.groups[g]; !ok && !b.clusters.held(g) {
			gone[g] = true
		}
	}
	for _, g := range asked {
		isGone(g)
	}
	if resync {
		// A full sweep: whatever an earlier cycle left.
		for _, c := range b.clusters {
			for k := range c.pending {
				isGone(k.Group)
			}
		}
	}
	for _, c := range b.clusters {
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
		b.forgetTopics(c)
	}
}

// forgetTopics drops c's log-end offsets of topics no row names.
func (b *rowBook) forgetTopics(c *clusterRT) {
	named := map[string]bool{}
	for _, rs := range b.groups {
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
