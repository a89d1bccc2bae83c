package survey

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/kop-offsets/kop-offsets/internal/verdict"

	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// A group that commits between check's read of the offsets topic and KoP's answer looks
// ahead (KoP serves more than the topic held when it was read): with groups live on every
// cluster, nearly every run would say cache_ahead and exit 1 for caches that are right. KoP
// appends a commit to the offsets topic before it caches it, so the topic read again after
// the answer holds what KoP served. settleAhead reads again the partitions of the groups
// that look ahead and, for each group whose second read equals KoP's answer key for key,
// judges the group on that read. A group that committed again after the answer (the second
// read differs too) keeps the first read and its cache_ahead, whose detail names a commit
// during the check; a transactional commit the loader leaves pending never equals the
// second read either. reload's plan follows the same rule (internal/reload/live.go).

// settleAhead reads again, on every cluster, the offsets partitions of the groups that
// look ahead.
func (ru *run) settleAhead(ctx context.Context) {
	parallel(ru.states, func(s *clusterState) { s.settleAhead(ctx, ru) })
	for _, s := range ru.states {
		if s.settleWarn != "" {
			ru.rep.addWarning(s.settleWarn)
		}
	}
}

// settleAhead is the second read on one cluster; a failed read sets settleWarn.
func (s *clusterState) settleAhead(ctx context.Context, ru *run) {
	if s.pErr != nil || s.partitions <= 0 || len(s.cached) == 0 {
		return
	}
	var ahead []string
	set := map[int32]bool{}
	for _, g := range ru.groups {
		if f, ok := s.cached[g]; ok && f.Err == nil && !f.Unavailable && s.compare(s.view(g), g, f) == answerAhead {
			ahead = append(ahead, g)
			set[loader.PartitionFor(g, s.partitions)] = true
		}
	}
	if len(ahead) == 0 {
		return
	}
	parts := slices.Sorted(maps.Keys(set))
	views, err := replayPartitions(ctx, s.c.Reader, parts, ru.o.Concurrency)
	if err != nil {
		// The first read stands: the rows say cache_ahead, as without the second read.
		s.settleWarn = fmt.Sprintf("cluster %s: reading the offsets topic again for %d groups that look ahead of it failed (their rows keep the first read): %v", s.c.Name, len(ahead), err)
		return
	}
	byPart := make(map[int32]*loader.PersistedOffsets, len(parts))
	for i, p := range parts {
		byPart[p] = views[i]
	}
	for _, g := range ahead {
		v := byPart[loader.PartitionFor(g, s.partitions)]
		if s.compare(v, g, s.cached[g]) == answerEqual {
			if s.reread == nil {
				s.reread = map[string]*loader.PersistedOffsets{}
			}
			s.reread[g] = v
		}
	}
}

// How KoP's answer for a group compares with what a view holds for it.
const (
	answerDiffers = iota // every served offset held, none newer, but not the same keys and offsets
	answerEqual          // the same keys, the same offsets
	answerAhead          // some served offset is not held, or newer than the view's
)

// compare says how KoP's answer f for group compares with what view holds for it.
func (s *clusterState) compare(view *loader.PersistedOffsets, group string, f verdict.GroupFetch) int {
	same, n := true, 0
	for t, ps := range f.Offsets {
		full := loader.NormalizeTopic(t, s.c.KafkaNamespace)
		for p, served := range ps {
			co, ok := view.Lookup(group, full, p)
			if !ok || served > co.Offset {
				return answerAhead
			}
			same = same && co.Offset == served
			n++
		}
	}
	if !same {
		return answerDiffers
	}
	held := 0
	for range view.EachGroupOffset(group) {
		held++
	}
	if held != n {
		return answerDiffers
	}
	return answerEqual
}
