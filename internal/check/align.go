package check

import (
	"context"
	"fmt"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/offsets"
)

// alignRows translates every persisted value that was replicated from another checked
// cluster into its cluster's numbering: one map per topic partition and pair of clusters.
func alignRows(ctx context.Context, rows []Row, states []*clusterState, byName map[string]*clusterState, maxMessages int64) map[align.Request]align.Result {
	sources := map[string]align.Source{}
	for _, s := range states {
		// A KoP that did not answer the cached side is not asked again for every topic.
		if s.c.Copies != nil && s.cacheErr == nil {
			sources[s.c.Name] = s.c.Copies
		}
	}
	var reqs []align.Request
	for i := range rows {
		for _, s := range states {
			if req, ok := s.alignRequest(&rows[i], byName); ok {
				reqs = append(reqs, req)
			}
		}
	}
	if len(reqs) == 0 {
		return map[align.Request]align.Result{}
	}
	a := &align.Aligner{Sources: sources, MaxMessages: maxMessages}
	return a.TranslateAll(ctx, reqs)
}

// alignRequest is the translation row r needs on this cluster: its persisted value came from
// another checked cluster.
func (s *clusterState) alignRequest(r *Row, byName map[string]*clusterState) (align.Request, bool) {
	if s.persisted == nil {
		return align.Request{}, false
	}
	co, ok := s.persisted.Lookup(r.Group, r.fullTopic, r.Partition)
	if !ok || co.Origin == "" || co.Origin == s.c.Name || byName[co.Origin] == nil {
		return align.Request{}, false
	}
	return align.Request{From: co.Origin, To: s.c.Name, Topic: offsets.ShortName(r.fullTopic, s.c.KafkaNamespace),
		Partition: r.Partition, Offset: co.Offset}, true
}

// translate adds the row's alignment on this cluster to its cell and observation.
func (s *clusterState) translate(r *Row, cell *Cell, ob *offsets.ClusterObservation, byName map[string]*clusterState, res map[align.Request]align.Result) {
	if s.persisted == nil {
		return
	}
	co, ok := s.persisted.Lookup(r.Group, r.fullTopic, r.Partition)
	if !ok || co.Origin == "" {
		return
	}
	cell.Origin = co.Origin
	req, ok := s.alignRequest(r, byName)
	if !ok {
		cell.Alignment = fmt.Sprintf("unknown: %s is not among the checked clusters", co.Origin)
		return
	}
	got, ok := res[req]
	switch {
	case !ok:
		cell.Alignment = "unknown: not translated"
	case got.Err != nil:
		cell.Alignment = "unknown: " + got.Err.Error()
	default:
		v := got.Translated
		cell.Translated, ob.Translated = &v, &v
		cell.Alignment = got.String()
	}
}
