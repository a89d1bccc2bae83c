package watch

// The run-time state of one watched cluster and its views of a group.

import (
	"sync"
	"sync/atomic"

	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// clusterRT is the run-time state of one cluster.
type clusterRT struct {
	Cluster

	mu    sync.Mutex // n and parts, set once the partition count is known
	n     int32
	parts []*partition

	upNow atomic.Bool // up, for the jobs' goroutines

	// Owned by the cycle.
	up, kopUp bool
	probed    bool              // up is known
	adminDown bool              // the last probe of the admin API failed
	kopKnown  bool              // kopUp is known
	cached    map[string]answer // KoP's answers by group, of this cycle only (nil between cycles)
	repl      map[int32]map[string]verdict.Inbound
	leo       map[string]map[int32]int64 // full topic -> partition -> log-end offset
	pending   map[verdict.Key]arrival
}

// partitionOf returns the view of the offsets partition holding group, nil when the
// cluster has not replayed it yet.
func (c *clusterRT) partitionOf(group string) *partition {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n <= 0 {
		return nil
	}
	p := c.parts[loader.PartitionFor(group, c.n)]
	if !p.caught {
		return nil
	}
	return p
}

func (c *clusterRT) partitions() (int32, []*partition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n, c.parts
}

// cachedSide is Side.Cached of c: the answers in kop.Fetcher's shape, each rebuilt once for
// the rows of its group (the engine asks once per row).
func (c *clusterRT) cachedSide() func(string) (verdict.GroupFetch, bool) {
	var last string
	var f verdict.GroupFetch
	var ok, built bool
	return func(g string) (verdict.GroupFetch, bool) {
		if v, _ := c.view(g); v == nil {
			return verdict.GroupFetch{}, false // unreachable: an older answer says nothing
		}
		if !built || g != last {
			var a answer
			a, ok = c.cached[g]
			last, f, built = g, a.fetch(), true
		}
		return f, ok
	}
}

// view is the loader view holding group, or why there is none.
func (c *clusterRT) view(group string) (*loader.PersistedOffsets, string) {
	if !c.up {
		return nil, "cluster down: its admin API does not answer or an offsets partition is not followed"
	}
	p := c.partitionOf(group)
	if p == nil {
		return nil, "offsets partition not replayed yet"
	}
	return p.view, ""
}
