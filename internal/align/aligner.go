package align

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"
)

// Request asks for one committed offset of a topic partition to be translated from one
// cluster's numbering into another's.
type Request struct {
	From, To  string
	Topic     string // the Kafka name both clusters know it by
	Partition int32
	Offset    int64
	// Floor is the group's own latest commit on To in To's numbering (-1 or 0: none; see
	// loader.CommittedOffset.Floor): a translation below it starts from it instead
	// (BuildFrom).
	Floor int64
	// Since: the source was moved back below Floor (a reset after the group left To): the
	// translation follows it below Floor, To's messages before Floor still counted as
	// consumed (BuildSince), as sync translates such a commit.
	Since bool
}

// Result is the answer to one Request: a Translation, or why there is none.
type Result struct {
	Translation
	Err error
}

// Aligner translates many committed offsets, building one Map per topic partition and pair
// of clusters (for the highest offset asked), so the cost follows the topics, not the
// groups.
type Aligner struct {
	// Sources reads each cluster's copies; a cluster without one cannot be aligned.
	Sources map[string]Source
	// MaxMessages bounds the messages read per copy (0: DefaultMaxMessages).
	MaxMessages int64
	// Concurrency bounds the maps built at once (0: 4).
	Concurrency int
}

type mapKey struct {
	from, to, topic string
	partition       int32
}

// TranslateAll answers every request. It never fails as a whole: a request whose map could
// not be built carries the error.
func (a *Aligner) TranslateAll(ctx context.Context, reqs []Request) map[Request]Result {
	upTo := map[mapKey]int64{}
	for _, r := range reqs {
		k := mapKey{r.From, r.To, r.Topic, r.Partition}
		upTo[k] = max(upTo[k], r.Offset)
	}
	maps := make(map[mapKey]*Map, len(upTo))
	errs := make(map[mapKey]error)
	var mu sync.Mutex
	var g errgroup.Group
	conc := a.Concurrency
	if conc <= 0 {
		conc = 4
	}
	g.SetLimit(conc)
	for k, o := range upTo {
		src, dst := a.Sources[k.from], a.Sources[k.to]
		if src == nil || dst == nil {
			missing := k.from
			if src != nil {
				missing = k.to
			}
			errs[k] = fmt.Errorf("cluster %s: no Kafka listener to read %s[%d] through (no kafkaBootstrap, or KoP did not answer)", missing, k.topic, k.partition)
			continue
		}
		g.Go(func() error {
			m, err := Build(ctx, k.from, k.to, src, dst, k.topic, k.partition, o, a.MaxMessages)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs[k] = err
				return nil // kept per map: one failed map does not fail the others
			}
			maps[k] = m
			return nil
		})
	}
	_ = g.Wait()
	out := make(map[Request]Result, len(reqs))
	for _, r := range reqs {
		k := mapKey{r.From, r.To, r.Topic, r.Partition}
		if err := errs[k]; err != nil {
			out[r] = Result{Err: err}
			continue
		}
		t, err := maps[k].Translate(r.Offset)
		out[r] = Result{Translation: t, Err: err}
	}
	a.floored(ctx, out)
	return out
}

// floored answers again, from the group's own commit on the target, the requests whose
// translation landed below it: one Map per topic partition, pair and floor (a floor is one
// group's position, but groups that moved together share it), for the highest offset asked.
// A Since request is answered from BuildSince: an answer at or above the floor is the plain
// Map's in both, so only those below it need another Map.
func (a *Aligner) floored(ctx context.Context, out map[Request]Result) {
	type floorKey struct {
		mapKey
		floor int64
		since bool
	}
	upTo := map[floorKey]int64{}
	for r, res := range out {
		if r.Floor > 0 && res.Err == nil && res.Translated < r.Floor {
			k := floorKey{mapKey{r.From, r.To, r.Topic, r.Partition}, r.Floor, r.Since}
			upTo[k] = max(upTo[k], r.Offset)
		}
	}
	maps := make(map[floorKey]*Map, len(upTo))
	errs := map[floorKey]error{}
	for k, o := range upTo {
		build := BuildFrom
		if k.since {
			build = BuildSince
		}
		m, err := build(ctx, k.from, k.to, a.Sources[k.from], a.Sources[k.to], k.topic, k.partition, o, k.floor, a.MaxMessages)
		if err != nil {
			errs[k] = err
			continue
		}
		maps[k] = m
	}
	for r := range out {
		k := floorKey{mapKey{r.From, r.To, r.Topic, r.Partition}, r.Floor, r.Since}
		if _, ok := upTo[k]; !ok || out[r].Err != nil || out[r].Translated >= r.Floor {
			continue
		}
		if err := errs[k]; err != nil {
			out[r] = Result{Err: err}
			continue
		}
		t, err := maps[k].Translate(r.Offset)
		out[r] = Result{Translation: t, Err: err}
	}
}

// Unreachable is the Source of a cluster that did not answer: every read fails at once with
// Err, so that nothing waits on it again.
type Unreachable struct {
	Cluster string
	Err     error
}

// Scan implements Source.
func (u Unreachable) Scan(context.Context, string, int32, func(Record) bool) (Bounds, error) {
	return Bounds{}, fmt.Errorf("cluster %s did not answer: %w", u.Cluster, u.Err)
}
