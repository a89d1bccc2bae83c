package offsetsync

import (
	"context"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/align"
)

// Warm reads ahead what the Plans of groups (their views, by group) will translate: for
// every cluster, the highest own offset of each key, into every other cluster's numbering,
// par topic partitions at once (align.Pool.Warm). Plans then translate from what was read,
// one after the other, without waiting on the copies. It must not run concurrently with Plan.
func (s *Syncer) Warm(ctx context.Context, groups map[string]map[string]View, par int) {
	s.WarmFor(ctx, groups, par, 0)
}

// WarmFor is Warm that waits for the reads at most wait (align.Pool.WarmFor): a read still
// running then goes on in the background, and the Plans of the keys it reads leave them
// Reading until it ends.
func (s *Syncer) WarmFor(ctx context.Context, groups map[string]map[string]View, par int, wait time.Duration) {
	if s.Pool == nil {
		return
	}
	if s.Pool.Now == nil && s.Now != nil {
		s.Pool.Now = s.Now
	}
	var reqs []align.Request
	for _, views := range groups {
		for _, from := range s.Clusters {
			v, ok := views[from.Name]
			if !ok {
				continue
			}
			for k, e := range index(v.Offsets, from.KafkaNamespace) {
				if e.marked || e.foreign {
					continue // never a source
				}
				for _, to := range s.Clusters {
					if _, ok := views[to.Name]; ok && to.Name != from.Name {
						reqs = append(reqs, align.Request{From: from.Name, To: to.Name, Topic: k.topic, Partition: k.partition, Offset: e.co.Offset})
					}
				}
			}
		}
	}
	s.Pool.WarmFor(ctx, reqs, par, wait)
}
