package reload

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/output"
)

// verify waits for KoP to serve each group of the loaded bundle what its offsets topic holds
// and sets the statuses.
func (e *Executor) verify(ctx context.Context, pb PlannedBundle, br *BundleResult, grs []GroupResult) {
	if len(grs) == 0 {
		br.Status = BundleVerified
		br.VerifiedAt = output.NewTime(e.Now())
		return
	}
	unverified := func(msg string) {
		br.Status, br.Error = BundleUnverified, msg
		for i := range grs {
			grs[i].Status = GroupUnverified
		}
	}
	if e.Fetcher == nil {
		unverified("cannot verify: the cluster has no kafkaBootstrap")
		return
	}
	// What KoP must now serve: the offsets topic as it is after the load.
	if err := e.persisted(ctx, pb, grs); err != nil {
		unverified(fmt.Sprintf("unloaded and loaded, but the offsets topic could not be read to verify: %v", err))
		return
	}
	e.Log("waiting up to %s for KoP on %s to serve the persisted offsets of %d groups", e.Wait, e.Cluster.Name, len(grs))
	e.judge(ctx, br, grs, e.awaitFresh(ctx, pb, grs))
}

// awaitFresh asks KoP for the groups until each serves its persisted offsets or Wait has
// passed, marks the fresh ones and returns the indexes of the others.
func (e *Executor) awaitFresh(ctx context.Context, pb PlannedBundle, grs []GroupResult) []int {
	deadline := e.Now().Add(e.Wait)
	pending := make([]int, len(grs))
	for i := range grs {
		pending[i] = i
	}
	fresh := func(pending []int) []int {
		var still []int
		for _, i := range pending {
			if a := grs[i].After; a != nil && a.Error == "" && sameOffsets(a.Offsets, grs[i].Persisted) {
				grs[i].Status = GroupFresh
				continue
			}
			still = append(still, i)
		}
		return still
	}
	for {
		e.fetchAll(ctx, grs, pending, deadline, func(gr *GroupResult, a *CacheAnswer) { gr.After = a })
		pending = e.movedOn(ctx, pb, grs, fresh(pending))
		if len(pending) == 0 || !e.Now().Before(deadline) || ctx.Err() != nil {
			break
		}
		if err := e.Sleep(ctx, min(e.PollInterval, deadline.Sub(e.Now()))); err != nil {
			break
		}
	}
	if len(pending) > 0 && ctx.Err() == nil {
		// Commits may have landed since the load: compare the last answers with the topic
		// once more before calling the cache stale.
		if err := e.persisted(ctx, pb, grs); err == nil {
			pending = fresh(pending)
		}
	}
	return pending
}

// judge sets the status of the groups still pending after the wait, and the bundle's.
func (e *Executor) judge(ctx context.Context, br *BundleResult, grs []GroupResult, pending []int) {
	unverified, differs := 0, 0
	for _, i := range pending {
		a := grs[i].After
		switch {
		case a == nil || a.ErrorKind == ErrorKindUnreachable || a.ErrorKind == ErrorKindKafka:
			grs[i].Status = GroupUnverified
			unverified++
		case a.ErrorKind == ErrorKindCoordinator:
			grs[i].Status = GroupCoordinatorUnavailable
			differs++
		default:
			grs[i].Status = GroupCacheDiffers
			differs++
		}
	}
	switch {
	case unverified > 0:
		br.Status = BundleUnverified
		br.Error = fmt.Sprintf("unloaded and loaded, but KoP on %s could not be asked for %d of %d groups within %s: the cache is not proven fresh", e.Cluster.Name, unverified, len(grs), e.Wait)
		if ctx.Err() != nil {
			br.Error += " (interrupted)"
		}
	case differs > 0:
		br.Status = BundleCacheDiffers
		br.Error = fmt.Sprintf("unloaded and loaded, but after %s KoP on %s still does not serve the persisted offsets of %d of %d groups", e.Wait, e.Cluster.Name, differs, len(grs))
	default:
		br.Status = BundleVerified
		br.VerifiedAt = output.NewTime(e.Now())
	}
}

// persisted replays the bundle's partitions and stores in grs what each group's load
// brings (the loader model's prediction, which verification compares KoP with).
func (e *Executor) persisted(ctx context.Context, pb PlannedBundle, grs []GroupResult) error {
	po, err := e.replay(ctx, pb.OffsetsPartitions)
	if err != nil {
		return err
	}
	n := e.partitions()
	for i := range grs {
		grs[i].Persisted = predictedOffsets(po, grs[i].Group, n, e.Cluster.KafkaNamespace)
	}
	return nil
}

func (e *Executor) fetch(ctx context.Context, group string, deadline time.Time) *CacheAnswer {
	if d := e.Now().Add(minFetchTimeout); deadline.Before(d) {
		deadline = d
	}
	fctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	return askCache(fctx, e.Fetcher, group)
}

// askCache is one OffsetFetch of group as a CacheAnswer.
func askCache(ctx context.Context, f OffsetFetcher, group string) *CacheAnswer {
	offs, err := f.FetchOffsets(ctx, group)
	return cacheAnswer(offs, err)
}

// cacheAnswer is KoP's answer as a CacheAnswer: sorted offsets, or the error and its kind.
func cacheAnswer(offs []TopicOffset, err error) *CacheAnswer {
	if err != nil {
		return &CacheAnswer{Offsets: []TopicOffset{}, Error: err.Error(), ErrorKind: ErrorKind(err)}
	}
	if offs == nil {
		offs = []TopicOffset{}
	}
	kop.SortTopicOffsets(offs)
	return &CacheAnswer{Offsets: offs}
}

// ManyOffsetFetcher is an OffsetFetcher that also asks about many groups in few requests
// (kop.KafkaGroups: OffsetFetch v8, many groups to each coordinator): a plan, a
// verification and a failover's proof of thousands of groups then cost a request per
// batch, not one per group.
type ManyOffsetFetcher interface {
	FetchMany(ctx context.Context, groups []string, requestTimeout time.Duration) map[string]kop.Fetched
}

// AskMany asks f about each group once, each request bounded by requestTimeout: batched
// when f is a ManyOffsetFetcher, else a few one-group requests at a time.
func AskMany(ctx context.Context, f OffsetFetcher, groups []string, requestTimeout time.Duration) map[string]*CacheAnswer {
	out := make(map[string]*CacheAnswer, len(groups))
	if m, ok := f.(ManyOffsetFetcher); ok {
		got := m.FetchMany(ctx, groups, requestTimeout)
		for _, g := range groups {
			a, ok := got[g]
			if !ok {
				a.Err = fmt.Errorf("group %s: no answer", g)
			}
			out[g] = cacheAnswer(a.Offsets, a.Err)
		}
		return out
	}
	answers := make([]*CacheAnswer, len(groups))
	eachConcurrently(len(groups), func(i int) {
		fctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		answers[i] = askCache(fctx, f, groups[i])
	})
	for i, g := range groups {
		out[g] = answers[i]
	}
	return out
}

// ErrorKind classifies an OffsetFetch error: coordinator_unavailable for KoP's loading /
// not-coordinator answers, error for any other Kafka error code, unreachable otherwise.
func ErrorKind(err error) string {
	switch {
	case errors.Is(err, kerr.CoordinatorLoadInProgress), errors.Is(err, kerr.NotCoordinator),
		errors.Is(err, kerr.CoordinatorNotAvailable):
		return ErrorKindCoordinator
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ErrorKindKafka
	}
	return ErrorKindUnreachable
}

// sameOffsets reports whether KoP's answer equals the persisted offsets exactly (topic,
// partition and offset: where a persisted commit came from is not part of KoP's answer).
func sameOffsets(cached, persisted []TopicOffset) bool {
	a, b := slices.Clone(cached), slices.Clone(persisted)
	kop.SortTopicOffsets(a)
	kop.SortTopicOffsets(b)
	return slices.EqualFunc(a, b, func(x, y TopicOffset) bool {
		return x.Topic == y.Topic && x.Partition == y.Partition && x.Offset == y.Offset
	})
}

// fetchAll asks KoP about the groups grs[i] of idx (batched when the Fetcher can), each
// request bounded by the deadline but given at least minFetchTimeout, and stores each
// answer with set.
func (e *Executor) fetchAll(ctx context.Context, grs []GroupResult, idx []int, deadline time.Time, set func(*GroupResult, *CacheAnswer)) {
	if len(idx) == 0 {
		return
	}
	groups := make([]string, len(idx))
	for k, i := range idx {
		groups[k] = grs[i].Group
	}
	answers := AskMany(ctx, e.Fetcher, groups, max(deadline.Sub(e.Now()), minFetchTimeout))
	for _, i := range idx {
		set(&grs[i], answers[grs[i].Group])
	}
}
