package check

import (
	"context"
	"fmt"
	"slices"

	"github.com/kop-offsets/kop-offsets/internal/offsets"
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
	warnings := make([]string, len(ru.states))
	parallel(ru.states, func(s *clusterState) { warnings[slices.Index(ru.states, s)] = s.settleAhead(ctx, ru) })
	for _, w := range warnings {
		if w != "" {
			ru.rep.addWarning(w)
		}
	}
}

// settleAhead is the second read on one cluster; it returns a warning when it failed.
func (s *clusterState) settleAhead(ctx context.Context, ru *run) string {
	if s.pErr != nil || s.partitions <= 0 || len(s.cached) == 0 {
		return ""
	}
	var ahead []string
	set := map[int32]bool{}
	for _, g := range ru.groups {
		if f, ok := s.cached[g]; ok && f.Err == nil && !f.Unavailable && s.looksAhead(s.view(g), g, f) {
			ahead = append(ahead, g)
			set[offsets.PartitionFor(g, s.partitions)] = true
		}
	}
	if len(ahead) == 0 {
		return ""
	}
	parts := slices.Sorted(mapKeys(set))
	views, err := replayPartitions(ctx, s.c.Reader, parts, ru.o.Concurrency)
	if err != nil {
		// The first read stands: the rows say cache_ahead, as without the second read.
		return fmt.Sprintf("cluster %s: reading the offsets topic again for %d groups that look ahead of it failed (their rows keep the first read): %v", s.c.Name, len(ahead), err)
	}
	byPart := make(map[int32]*offsets.PersistedOffsets, len(parts))
	for i, p := range parts {
		byPart[p] = views[i]
	}
	for _, g := range ahead {
		v := byPart[offsets.PartitionFor(g, s.partitions)]
		if s.equalsAnswer(v, g, s.cached[g]) {
			if s.reread == nil {
				s.reread = map[string]*offsets.PersistedOffsets{}
			}
			s.reread[g] = v
		}
	}
	return ""
}

// looksAhead reports whether KoP serves, for some key of group, an offset view does not
// hold, or a newer one.
func (s *clusterState) looksAhead(view *offsets.PersistedOffsets, group string, f GroupFetch) bool {
	for t, ps := range f.Offsets {
		full := offsets.NormalizeTopic(t, s.c.KafkaNamespace)
		for p, served := range ps {
			if co, ok := view.Lookup(group, full, p); !ok || served > co.Offset {
				return true
			}
		}
	}
	return false
}

// equalsAnswer reports whether view holds for group exactly what KoP answered: the same
// keys, the same offsets.
func (s *clusterState) equalsAnswer(view *offsets.PersistedOffsets, group string, f GroupFetch) bool {
	n := 0
	for t, ps := range f.Offsets {
		full := offsets.NormalizeTopic(t, s.c.KafkaNamespace)
		for p, served := range ps {
			if co, ok := view.Lookup(group, full, p); !ok || co.Offset != served {
				return false
			}
			n++
		}
	}
	held := 0
	for range view.EachGroupOffset(group) {
		held++
	}
	return held == n
}
