package watch

// Staleness: the replicated commits KoP on a cluster does not serve yet, tracked from their
// arrival until a cycle sees KoP serve them.

import (
	"time"

	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// maxPending bounds the replicated commits tracked for staleness per cluster.
const maxPending = 100000

// track records a replicated commit KoP on c has to serve; the earliest arrival of a key
// stays (the staleness is since the first commit KoP did not serve), the offset is the
// newest.
func (c *clusterRT) track(a arrival, m *Metrics) {
	if old, ok := c.pending[a.key]; ok {
		a.at = old.at
		a.offset = max(a.offset, old.offset)
	} else if len(c.pending) >= maxPending {
		m.dropped.WithLabelValues(c.Name).Inc()
		return
	}
	c.pending[a.key] = a
}

// settle ends the staleness episodes of c that KoP now serves, among the groups it was just
// asked about (c.cached).
func (x *exporter) settle(c *clusterRT, now time.Time) {
	for k, a := range c.pending {
		f, ok := c.cached[k.Group] // only groups asked have an answer
		if ok && f.err == nil && c.served(k, a, f) {
			d := max(now.Sub(a.at), 0)
			x.m.stalenessServed.WithLabelValues(c.Name).Observe(d.Seconds())
			x.log.Info("replicated commit served", "cluster", c.Name, "group", k.Group, "topic", k.Topic,
				"partition", k.Partition, "offset", a.offset, "from", a.from, "stalenessSeconds", d.Seconds())
			delete(c.pending, k)
		}
	}
}

// served reports whether KoP's answer f serves the replicated commit a of k: KoP has the
// commit (or a later one), or serves exactly what c's offsets topic holds (an aborted or
// deleted commit will never be served).
func (c *clusterRT) served(k verdict.Key, a arrival, f answer) bool {
	v, has := f.offset(k.Topic, k.Partition)
	var persisted *int64
	if p := c.partitionOf(k.Group); p != nil {
		for co := range p.offsetsOf(k.Group) {
			if co.Partition == k.Partition && loader.NormalizeTopic(co.Topic, c.KafkaNamespace) == k.Topic {
				persisted = &co.Offset
			}
		}
	}
	return (has && v >= a.offset) || (has && persisted != nil && v == *persisted) || (!has && persisted == nil)
}

// staleness publishes the age of c's oldest replicated commit KoP does not serve yet.
func (x *exporter) staleness(c *clusterRT, now time.Time) {
	oldest := 0.0
	for _, a := range c.pending {
		oldest = max(oldest, now.Sub(a.at).Seconds())
	}
	x.m.staleness.WithLabelValues(c.Name).Set(oldest)
	x.m.staleCommits.WithLabelValues(c.Name).Set(float64(len(c.pending)))
}
