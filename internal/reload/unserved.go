package reload

import (
	"context"
	"fmt"
	"sync"

	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// probeUnserved asks KoP about a probe group of each offsets partition (a name that hashes
// there and that no consumer uses) and returns the partitions it answers NOT_COORDINATOR or
// loading for, with that answer: KoP does not serve them.
func probeUnserved(ctx context.Context, f OffsetFetcher, parts []int32, n int32) map[int32]*CacheAnswer {
	out := map[int32]*CacheAnswer{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range parts {
		wg.Go(func() {
			fctx, cancel := context.WithTimeout(ctx, DefaultServedTimeout)
			defer cancel()
			a := askCache(fctx, f, loader.ProbeGroup(p, n))
			if a.ErrorKind != ErrorKindCoordinator {
				return
			}
			a.Error = fmt.Sprintf("offsets partition %d is not served by KoP (probe group: %s)", p, a.Error)
			mu.Lock()
			out[p] = a
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}
