package reload

import (
	"context"
	"slices"

	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// Live groups on the cluster written to.
//
// KoP's commit path appends an offset commit to the offsets topic and only then puts it in
// its cache, so whatever KoP serves for a group was in the topic before KoP answered. A group
// that commits on this cluster therefore moves its cache and its topic forward together, and
// a comparison that reads the topic first and asks KoP afterwards sees the cache "ahead" by
// the commits in between: the group's own commits, which the load brings back, not a loss.
// The rule the plan, the re-check before each unload and the verification follow:
//
//   - a row KoP serves is no loss when the topic, read again AFTER KoP answered, holds it or
//     something newer that this cluster wrote (Origin ""): the load reads at least that;
//   - a row whose newer value was replicated from another cluster is not excused that way
//     (its numbering was not checked for skips), nor a row the topic does not hold at all
//     (a transactional commit the loader leaves pending, a tombstone, compaction): those stay
//     losses;
//   - after the load, a group whose answer lies, row by row, between the topic read before
//     the answer and the topic read after it (it committed since the load) is fresh.
//
// docs/reload.md ("Live groups") has the measurement this relies on.

// newerRead replays parts again, after KoP was asked, for the groups whose served offsets
// looked ahead of the first read. It returns nil when the read fails (the first read's
// losses then stand).
func newerRead(ctx context.Context, r loader.OffsetTopicReader, parts []int32, ord loader.TxnOrdering) *loader.PersistedOffsets {
	if r == nil || len(parts) == 0 {
		return nil
	}
	po, err := replay(ctx, r, parts, ord)
	if err != nil {
		return nil
	}
	return po
}

// excused drops from ls the rows that reread's prediction for the group covers with a value
// this cluster wrote: the group's own commits, in the topic since the first read.
func excused(ls []Loss, reread []TopicOffset) []Loss {
	if len(ls) == 0 || reread == nil {
		return ls
	}
	now := map[topicPart]TopicOffset{}
	for _, o := range reread {
		now[topicPart{o.Topic, o.Partition}] = o
	}
	return slices.DeleteFunc(slices.Clone(ls), func(l Loss) bool {
		if l.Unknown {
			return false
		}
		o, ok := now[topicPart{l.Topic, l.Partition}]
		return ok && o.Origin == "" && o.Offset >= l.Served
	})
}

// partitionsOf returns the sorted offsets partitions of the named groups.
func partitionsOf(groups []AffectedGroup, names map[string]bool) []int32 {
	var parts []int32
	for _, g := range groups {
		if names[g.Group] {
			parts = append(parts, g.OffsetsPartition)
		}
	}
	slices.Sort(parts)
	return slices.Compact(parts)
}

// recheckLive is the re-check's second look: the late losses of groups that committed since
// the plan are read again in the topic, and those the group's own commits cover are dropped.
func (e *Executor) recheckLive(ctx context.Context, groups []AffectedGroup, late []Loss) []Loss {
	if len(late) == 0 || e.Reader == nil && e.Persisted == nil {
		return late
	}
	names := map[string]bool{}
	for _, l := range late {
		names[l.Group] = true
	}
	po := e.newerRead(ctx, partitionsOf(groups, names))
	if po == nil {
		return late
	}
	n := e.partitions()
	var out []Loss
	for _, l := range late {
		out = append(out, excused([]Loss{l}, predictedOffsets(po, l.Group, n, e.Cluster.KafkaNamespace))...)
	}
	return out
}

// movedOn marks fresh the pending groups whose last answer lies between the topic read
// before it (grs[i].Persisted) and a read made now: their own commits since the load. It
// returns the groups still pending. The topic is read again only when some answer is ahead
// of the first read in every row that differs (a stale cache, which serves less, is not).
func (e *Executor) movedOn(ctx context.Context, pb PlannedBundle, grs []GroupResult, pending []int) []int {
	var ahead []int
	for _, i := range pending {
		if a := grs[i].After; a != nil && a.Error == "" && aheadOf(a.Offsets, grs[i].Persisted) {
			ahead = append(ahead, i)
		}
	}
	if len(ahead) == 0 {
		return pending
	}
	po := e.newerRead(ctx, pb.OffsetsPartitions)
	if po == nil {
		return pending
	}
	n := e.partitions()
	moved := map[int]bool{}
	for _, i := range ahead {
		later := predictedOffsets(po, grs[i].Group, n, e.Cluster.KafkaNamespace)
		if between(grs[i].After.Offsets, grs[i].Persisted, later) {
			grs[i].Status = GroupFresh
			grs[i].CommittedSince = true
			moved[i] = true
		}
	}
	return slices.DeleteFunc(slices.Clone(pending), func(i int) bool { return moved[i] })
}

// aheadOf: every row of before is in served, none lower, and some row differs.
func aheadOf(served, before []TopicOffset) bool {
	s := byTopicPart(served)
	differs := len(served) != len(before)
	for _, b := range before {
		o, ok := s[topicPart{b.Topic, b.Partition}]
		if !ok || o.Offset < b.Offset {
			return false
		}
		differs = differs || o.Offset != b.Offset
	}
	return differs
}

// between: each row KoP serves is what the topic held before the answer, or what it holds
// after it, or (held in both) in between, the newer value this cluster's own (Origin "");
// and KoP serves every row the earlier read held (a row it lacks was lost, not committed).
func between(served, before, after []TopicOffset) bool {
	s, b, a := byTopicPart(served), byTopicPart(before), byTopicPart(after)
	for k, o := range s {
		bo, inBefore := b[k]
		ao, inAfter := a[k]
		switch {
		case inBefore && o.Offset == bo.Offset:
		case inAfter && o.Offset == ao.Offset && ao.Origin == "":
		case inBefore && inAfter && ao.Origin == "" && bo.Offset <= o.Offset && o.Offset <= ao.Offset:
		default:
			return false
		}
	}
	for k := range b {
		if _, ok := s[k]; !ok {
			return false
		}
	}
	return true
}

func byTopicPart(offs []TopicOffset) map[topicPart]TopicOffset {
	m := make(map[topicPart]TopicOffset, len(offs))
	for _, o := range offs {
		m[topicPart{o.Topic, o.Partition}] = o
	}
	return m
}

// rereadAhead reads the planned partitions once more when KoP, asked after the first read,
// serves some group more than that read predicts: a group that committed in between (a live
// group's own commits) is then compared with a read that has its commits, and only what the
// topic does not hold by the time KoP answered remains a loss. The newer read replaces the
// first for every group (predictions, skips); when it fails the first read stands.
func (r *planRun) rereadAhead(ctx context.Context) {
	if r.served == nil {
		return
	}
	ahead := false
	for _, name := range r.names {
		a := r.served[name]
		if a == nil || a.Error != "" {
			continue
		}
		g := *r.groups[name]
		g.Persisted = predictedOffsets(r.persisted, name, r.n, r.cl.KafkaNamespace)
		if len(losses(g, a, func(string, int32) string { return "" })) > 0 {
			ahead = true
			break
		}
	}
	if !ahead {
		return
	}
	if po, err := r.p.replay(ctx, r.parts); err == nil {
		r.persisted = po // a failed read: the first read stands
	}
}

// RefusedForActivity reports whether pb is refused for its groups' activity on the cluster
// written to (unknown, or live under RefuseLive), not (only) for losses or skips.
func (p *Plan) RefusedForActivity(pb PlannedBundle) bool {
	if !pb.Refused || p.AllowActive {
		return false
	}
	for _, g := range p.GroupsIn(pb.Range) {
		if g.Here == ActivityUnknown || g.Here == ActivityLive && p.RefuseLive {
			return true
		}
	}
	return false
}
