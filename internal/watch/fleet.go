package watch

// The watched clusters as a whole: what the exporter, the row book and the jobs ask of all
// of them at once.

import (
	"slices"
	"sync"

	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// fleet is the watched clusters, in order (the cells of a row).
type fleet []*clusterRT

// names are the names of the clusters, in order.
func (cs fleet) names() []string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return names
}

// displayNamespace is the namespace rows name topics in: the first cluster's.
func (cs fleet) displayNamespace() string {
	if len(cs) > 0 {
		return cs[0].KafkaNamespace
	}
	return ""
}

// up reports whether cluster name answered at the last cycle (safe from the jobs'
// goroutines); unknown is the answer for a cluster watch does not follow (--cluster): a
// source it does not follow counts as up for keeping (its reads say otherwise).
func (cs fleet) up(name string, unknown bool) bool {
	for _, c := range cs {
		if c.Name == name {
			return c.upNow.Load()
		}
	}
	return unknown
}

// held reports whether a replayed view of any cluster holds group.
func (cs fleet) held(group string) bool {
	for _, c := range cs {
		if p := c.partitionOf(group); p != nil && p.holds(group) {
			return true
		}
	}
	return false
}

// sides are the clusters as the row engine sees them.
func (cs fleet) sides() []verdict.Side {
	sides := make([]verdict.Side, len(cs))
	for i, c := range cs {
		n, _ := c.partitions()
		sd := verdict.Side{Name: c.Name, Namespace: c.KafkaNamespace, Partitions: n, EndOffsets: c.leo,
			Persisted: c.view}
		if c.up {
			sd.Outbound = c.repl // a cluster down: what it said before is stale
		}
		if c.Fetcher != nil {
			sd.Cached = c.cachedSide()
		}
		sides[i] = sd
	}
	return sides
}

// inbound is the replication of group's offsets partition from every peer toward cluster.
func (cs fleet) inbound(cluster, group string) map[string]verdict.Inbound {
	return verdict.InboundFor(cs.sides(), cluster, group)
}

// chunkGroups is about how many groups a cycle asks and classifies at once.
const chunkGroups = 5000

// chunks cuts groups (sorted) into the chunks a cycle handles one after the other: whole
// offsets partitions of about chunkGroups groups or more, each sorted. Whole partitions,
// because KoP loads or does not serve an offsets partition as a whole: a partition it is
// loading costs one coordinator wait, not one per chunk.
func (cs fleet) chunks(groups []string) [][]string {
	switch {
	case len(groups) == 0:
		return nil
	case len(groups) <= chunkGroups:
		return [][]string{groups}
	}
	var n int32
	for _, c := range cs {
		if cn, _ := c.partitions(); cn > 0 {
			n = cn
			break
		}
	}
	if n <= 0 {
		return [][]string{groups}
	}
	byPart := make([][]string, n)
	for _, g := range groups {
		p := loader.PartitionFor(g, n)
		byPart[p] = append(byPart[p], g)
	}
	var out [][]string
	var chunk []string
	for _, gs := range byPart {
		chunk = append(chunk, gs...)
		if len(chunk) >= chunkGroups {
			slices.Sort(chunk)
			out, chunk = append(out, chunk), nil
		}
	}
	if len(chunk) > 0 {
		slices.Sort(chunk)
		out = append(out, chunk)
	}
	return out
}

// replayed reports whether every cluster that answers has replayed all its partitions.
func (cs fleet) replayed() bool {
	for _, c := range cs {
		n, parts := c.partitions()
		if c.adminDown {
			continue // a cluster that does not answer does not hold the others back
		}
		if n == 0 {
			return false
		}
		for _, p := range parts {
			if !p.caught {
				return false
			}
		}
	}
	return true
}

// parallel calls fn with every cluster, each in its own goroutine, and waits for them.
func (cs fleet) parallel(fn func(c *clusterRT)) {
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() { fn(c) })
	}
	wg.Wait()
}
