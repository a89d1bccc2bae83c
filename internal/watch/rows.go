package watch

// Evaluation: the rows of a group, classified by check's row engine across the clusters.

import (
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// maxTopicLists bounds the distinct lists of topics shared between groups' rows.
const maxTopicLists = 10000

// rowBook holds the rows of every group as the cycles classified them. It is the cycle's:
// the published report shares its PackedRows, each replaced whole, never changed.
type rowBook struct {
	o          *Options
	clusters   fleet
	groups     map[string]*verdict.PackedRows // by group
	topicLists map[string][]string            // the rows' lists of topics, each kept once (emptied at a resync)
}

// rebuild classifies the rows of groups again; a group without rows is dropped.
func (b *rowBook) rebuild(groups []string) {
	j, sides := b.judge()
	names := verdict.Names{}
	clusters := b.clusters.names()
	for _, g := range groups {
		rs := b.buildRows(j, sides, names, g)
		if len(rs) == 0 {
			delete(b.groups, g)
			continue
		}
		if p := verdict.Pack(rs, clusters, j); !p.Same(b.groups[g]) {
			p.ShareTopics(b.topicLists, maxTopicLists)
			b.groups[names.Intern(g)] = p
		}
	}
}

// judge is the row engine for this cycle, and every cluster as it sees it.
func (b *rowBook) judge() (*verdict.Judge, []verdict.Side) {
	return &verdict.Judge{Now: b.o.Now(), ExpiryWarning: b.o.ExpiryWarning, DisplayNamespace: b.clusters.displayNamespace()}, b.clusters.sides()
}

// buildRows classifies every topic partition of group across the clusters.
func (b *rowBook) buildRows(j *verdict.Judge, sides []verdict.Side, names verdict.Names, group string) []verdict.Row {
	ks := verdict.KeySet{Names: names}
	for _, c := range b.clusters {
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
	keys := ks.Sorted(b.o.Topics, b.clusters.displayNamespace())
	if keys.Len() == 0 {
		return nil
	}
	rows := make([]verdict.Row, keys.Len())
	for i := range rows {
		rows[i] = j.Row(keys.At(i), sides)
	}
	return rows
}
