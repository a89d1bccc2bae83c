package survey

import (
	"context"
	"fmt"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// alignRows translates every persisted value into the numbering of each cluster it is
// compared on: a value replicated from another checked cluster into its own cluster's, and
// every cluster's value into each peer's whose numbering differs. One map per topic partition
// and pair of clusters; in the usual active-passive case the peers' requests are the
// replicated values' own.
func alignRows(ctx context.Context, keys verdict.Keys, states []*clusterState, byName map[string]*clusterState, maxMessages int64) map[align.Request]align.Result {
	sources := map[string]align.Source{}
	for _, s := range states {
		// A KoP that did not answer the cached side is not asked again for every topic.
		if s.c.Copies != nil && s.cacheErr == nil {
			sources[s.c.Name] = s.c.Copies
		}
	}
	var reqs []align.Request
	for k := range keys.All() {
		for _, s := range states {
			if req, ok := s.alignRequest(k, byName); ok {
				reqs = append(reqs, req)
			}
			for _, peer := range states {
				if req, ok := s.peerRequest(k, peer, byName); ok {
					reqs = append(reqs, req)
				}
			}
		}
	}
	if len(reqs) == 0 {
		return map[align.Request]align.Result{}
	}
	a := &align.Aligner{Sources: sources, MaxMessages: maxMessages}
	return a.TranslateAll(ctx, reqs)
}

// numbering returns this cluster's persisted value of row r and the cluster whose numbering
// it counts in (where it was written).
func (s *clusterState) numbering(r verdict.Key) (string, int64, bool) {
	if s.persisted == nil {
		return "", 0, false
	}
	co, ok := s.view(r.Group).Lookup(r.Group, r.Topic, r.Partition)
	if !ok {
		return "", 0, false
	}
	if co.Origin == "" {
		return s.c.Name, co.Offset, true
	}
	return co.Origin, co.Offset, true
}

// alignRequest is the translation row r needs on this cluster: its persisted value came from
// another checked cluster.
func (s *clusterState) alignRequest(r verdict.Key, byName map[string]*clusterState) (align.Request, bool) {
	from, v, ok := s.numbering(r)
	if !ok || from == s.c.Name || byName[from] == nil {
		return align.Request{}, false
	}
	return s.requestFor(r, from, v), true
}

// peerRequest is the translation of peer's value of row r into this cluster's numbering,
// needed when peer's value counts in another cluster's numbering than this one's.
func (s *clusterState) peerRequest(r verdict.Key, peer *clusterState, byName map[string]*clusterState) (align.Request, bool) {
	if peer == s {
		return align.Request{}, false
	}
	from, v, ok := peer.numbering(r)
	if !ok || from == s.c.Name || byName[from] == nil {
		return align.Request{}, false
	}
	return s.requestFor(r, from, v), true
}

// requestFor translates v, counted in from's numbering, into this cluster's, from the
// group's own commit here (loader.CommittedOffset.Floor).
func (s *clusterState) requestFor(r verdict.Key, from string, v int64) align.Request {
	req := align.Request{From: from, To: s.c.Name, Topic: loader.ShortName(r.Topic, s.c.KafkaNamespace), Partition: r.Partition, Offset: v}
	if s.persisted != nil {
		if co, ok := s.view(r.Group).Lookup(r.Group, r.Topic, r.Partition); ok {
			req.Floor = co.Floor()
		}
	}
	return req
}

// translate adds the row's alignment on this cluster to its cell and observation: its own
// value's translation, and the peers' values in this cluster's numbering.
func (s *clusterState) translate(r verdict.Key, cell *verdict.Cell, ob *verdict.ClusterObservation, states []*clusterState, byName map[string]*clusterState, res map[align.Request]align.Result) {
	for _, peer := range states {
		if req, ok := s.peerRequest(r, peer, byName); ok {
			if got, ok := res[req]; ok && got.Err == nil {
				if ob.RefIn == nil {
					ob.RefIn = map[string]int64{}
				}
				ob.RefIn[peer.c.Name] = got.Translated
			}
		}
	}
	from, _, ok := s.numbering(r)
	if !ok || from == s.c.Name {
		return
	}
	cell.Origin = from
	req, ok := s.alignRequest(r, byName)
	if !ok {
		cell.Alignment = fmt.Sprintf("unknown: %s is not among the checked clusters", from)
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
