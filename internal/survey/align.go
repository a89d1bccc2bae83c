package survey

import (
	"context"
	"fmt"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/offsetsync"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// alignRows translates every persisted value into the numbering of each cluster it is
// compared on: a value replicated from another checked cluster into its own cluster's, and
// every cluster's value into each peer's whose numbering differs. One map per topic partition
// and pair of clusters; in the usual active-passive case the peers' requests are the
// replicated values' own. tool holds the rows of a sync or kept deployment (toolRow), whose
// follow translations were asked too.
func alignRows(ctx context.Context, keys verdict.Keys, states []*clusterState, byName map[string]*clusterState, maxMessages int64) (res map[align.Request]align.Result, tool map[verdict.Key]bool) {
	sources := map[string]align.Source{}
	for _, s := range states {
		// A KoP that did not answer the cached side is not asked again for every topic.
		if s.c.Copies != nil && s.cacheErr == nil {
			sources[s.c.Name] = s.c.Copies
		}
	}
	var reqs []align.Request
	tool = map[verdict.Key]bool{}
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
		if toolRow(k, states) {
			tool[k] = true
			reqs = appendFollow(reqs, k, states)
		}
	}
	if len(reqs) == 0 {
		return map[align.Request]align.Result{}, tool
	}
	a := &align.Aligner{Sources: sources, MaxMessages: maxMessages}
	return a.TranslateAll(ctx, reqs), tool
}

// appendFollow adds the translations the follow rules need for row k of a sync or kept
// deployment.
func appendFollow(reqs []align.Request, k verdict.Key, states []*clusterState) []align.Request {
	for _, s := range states {
		for _, peer := range states {
			if fr, ok := s.followRequest(k, peer); ok {
				reqs = append(reqs, fr.requests()...)
			}
		}
	}
	return reqs
}

// numbering returns this cluster's persisted value of row r and the cluster whose numbering
// it counts in (where it was written).
func (s *clusterState) numbering(r verdict.Key) (string, int64, bool) {
	co, ok := s.lookup(r)
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
	if co, ok := s.lookup(r); ok {
		req.Floor = co.Floor()
	}
	return req
}

// translate adds the row's alignment on this cluster to its cell and observation: its own
// value's translation, and the peers' values in this cluster's numbering; tool: the row is
// one of a sync or kept deployment (toolRow).
func (s *clusterState) translate(r verdict.Key, cell *verdict.Cell, ob *verdict.ClusterObservation, states []*clusterState, byName map[string]*clusterState, res map[align.Request]align.Result, tool bool) {
	s.follow(r, ob, states, res, tool)
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

// followReq is what the follow rules of a sync or kept deployment ask on one cluster for one
// peer's own commit: its translation here as the tool would follow it (offsetsync's floor
// rule), and, when the floor is conditional, the translation since it (align.BuildSince),
// which says whether the floor holds.
type followReq struct {
	fwd, since  align.Request
	conditional bool
	offset      int64 // the peer's own commit
}

// writerOf says who wrote co, and for a tool's write the commit it translates.
func writerOf(co loader.CommittedOffset) (w verdict.Writer, from string, source int64) {
	switch {
	case co.Origin != "":
		return verdict.WriterReplica, "", 0
	case co.Kept != nil && co.Kept.Current:
		return verdict.WriterKeeper, co.Kept.From, co.Kept.Source
	}
	if m, _, ok := offsetsync.ParseMark(co.Metadata); ok {
		return verdict.WriterSync, m.From, m.Source
	}
	return verdict.WriterGroup, "", 0
}

// lookup is this cluster's persisted value of row r.
func (s *clusterState) lookup(r verdict.Key) (loader.CommittedOffset, bool) {
	if s.persisted == nil {
		return loader.CommittedOffset{}, false
	}
	return s.view(r.Group).Lookup(r.Group, r.Topic, r.Partition)
}

// toolRow reports whether a cluster holds a tool's write of row r (a sync or kept
// deployment): only then do the follow rules need translations.
func toolRow(r verdict.Key, states []*clusterState) bool {
	for _, s := range states {
		if co, ok := s.lookup(r); ok {
			if w, _, _ := writerOf(co); w == verdict.WriterSync || w == verdict.WriterKeeper {
				return true
			}
		}
	}
	return false
}

// followRequest is what this cluster needs to follow peer's own commit of row r; false when
// peer's value is not the group's own commit, or this cluster's value is not one the follow
// rules judge (replicated, or none).
func (s *clusterState) followRequest(r verdict.Key, peer *clusterState) (followReq, bool) {
	if peer == s {
		return followReq{}, false
	}
	here, ok := s.lookup(r)
	if !ok {
		return followReq{}, false
	}
	w, _, _ := writerOf(here)
	if w == verdict.WriterReplica {
		return followReq{}, false
	}
	co, ok := peer.lookup(r)
	if pw, _, _ := writerOf(co); !ok || pw != verdict.WriterGroup {
		return followReq{}, false
	}
	floor, conditional := offsetsync.TargetFloor(here, co.CommitTimestamp)
	if w == verdict.WriterKeeper {
		// The keeper floors on the group's own commit under the replicated one, by sync's
		// rule (standby.Keeper.translate, align.Pool.TranslateFloored).
		floor = here.Floor()
		conditional = floor > 0
	}
	topic := loader.ShortName(r.Topic, s.c.KafkaNamespace)
	fr := followReq{offset: co.Offset, conditional: conditional,
		fwd: align.Request{From: peer.c.Name, To: s.c.Name, Topic: topic, Partition: r.Partition, Offset: co.Offset, Floor: floor}}
	if conditional {
		fr.since = fr.fwd
		fr.since.Since = true
	}
	return fr, true
}

// requests are the translations fr asks.
func (fr followReq) requests() []align.Request {
	if fr.conditional {
		return []align.Request{fr.fwd, fr.since}
	}
	return []align.Request{fr.fwd}
}

// answer is fr's translation: followed backwards (since the floor) when the peer's commit,
// translated with this cluster's messages before the floor counted as consumed, lands below
// the floor (align.Pool.FloorHolds), as sync does; false when unknown.
func (fr followReq) answer(res map[align.Request]align.Result) (int64, bool) {
	got, ok := res[fr.fwd]
	if fr.conditional {
		if since, sok := res[fr.since]; sok && since.Err == nil && since.Translated < fr.fwd.Floor {
			got, ok = since, true
		}
	}
	if !ok || got.Err != nil {
		return 0, false
	}
	return got.Translated, true
}

// follow fills ob.Follow for row r on this cluster: who wrote its value, and, on a row of a
// sync or kept deployment (tool), the peers' own commits translated as the tool would follow
// them here.
func (s *clusterState) follow(r verdict.Key, ob *verdict.ClusterObservation, states []*clusterState, res map[align.Request]align.Result, tool bool) {
	co, ok := s.lookup(r)
	if !ok {
		return
	}
	f := &ob.Follow
	f.Writer, f.From, f.Source = writerOf(co)
	f.CommitAt = int64(co.CommitTimestamp)
	if !tool {
		return
	}
	for _, peer := range states {
		fr, ok := s.followRequest(r, peer)
		if !ok {
			continue
		}
		if v, ok := fr.answer(res); ok {
			if f.In == nil {
				f.In = map[string]int64{}
			}
			f.In[peer.c.Name] = v
		}
	}
}
