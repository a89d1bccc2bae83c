package watch

// Evaluation: the rows of a group, classified by check's row engine across the clusters.

import (
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// rebuild classifies the rows of groups again; a group without rows is dropped.
func (w *Watcher) rebuild(groups []string) {
	j, sides := w.judge()
	names := verdict.Names{}
	clusters := w.clusterNames()
	for _, g := range groups {
		rs := w.buildRows(j, sides, names, g)
		if len(rs) == 0 {
			delete(w.rows, g)
			continue
		}
		if p := verdict.Pack(rs, clusters, j); !p.Same(w.rows[g]) {
			p.ShareTopics(w.topicLists, maxTopicLists)
			w.rows[names.Intern(g)] = p
		}
	}
}

// judge is the row engine for this cycle, and every cluster as it sees it.
func (w *Watcher) judge() (*verdict.Judge, []verdict.Side) {
	return &verdict.Judge{Now: w.o.Now(), ExpiryWarning: w.o.ExpiryWarning, DisplayNamespace: w.displayNamespace()}, w.sides()
}

// inbound is the replication of group's offsets partition from every peer toward c.
func (w *Watcher) inbound(c *clusterRT, group string) map[string]verdict.Inbound {
	return verdict.InboundFor(w.sides(), c.Name, group)
}

// sides are the clusters as the row engine sees them.
func (w *Watcher) sides() []verdict.Side {
	sides := make([]verdict.Side, len(w.clusters))
	for i, c := range w.clusters {
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

// buildRows classifies every topic partition of group across the clusters.
func (w *Watcher) buildRows(j *verdict.Judge, sides []verdict.Side, names verdict.Names, group string) []verdict.Row {
	ks := verdict.KeySet{Names: names}
	for _, c := range w.clusters {
		if p := c.partitionOf(group); p != nil {
			for co := range p.offsetsOf(group) {
				ks.AddPersisted(co, c.KafkaNamespace)
			}
			for _, co := range p.pendingBy[group] {
				ks.AddPersisted(co, c.KafkaNamespace)
			}
		}
		if c.Fetcher != nil {
			for _, o := range c.cached[group].offs {
				ks.Add(group, o.topic, o.partition)
			}
		}
	}
	keys := ks.Sorted(w.o.Topics, w.displayNamespace())
	if keys.Len() == 0 {
		return nil
	}
	rows := make([]verdict.Row, keys.Len())
	for i := range rows {
		rows[i] = j.Row(keys.At(i), sides)
	}
	return rows
}

func (w *Watcher) displayNamespace() string {
	if len(w.clusters) > 0 {
		return w.clusters[0].KafkaNamespace
	}
	return ""
}

// clusterNames are the names of the clusters, in order (the cells of a row).
func (w *Watcher) clusterNames() []string {
	names := make([]string, len(w.clusters))
	for i, c := range w.clusters {
		names[i] = c.Name
	}
	return names
}
