// Fetcher asks KoP what it serves, through its Kafka listeners (kadm and kgo):
// the committed offsets of groups (OffsetFetch, batched, sent to each group's coordinator,
// retrying while KoP loads a partition), the groups it knows (ListGroups, DescribeGroups)
// and the log-end offsets of topics (ListOffsets). check and watch read KoP's cached side
// through it.

package kop

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sync/errgroup"

	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// GroupFetch is KoP's answer for one group: the verdict's input, which this package fills.
type GroupFetch = verdict.GroupFetch

// ListedGroup is one group as ListGroups/DescribeGroups see it.
type ListedGroup struct {
	Group        string
	State        string // empty when not described
	ProtocolType string
	Members      int
}

// ErrCoordinatorUnavailable is the error of a GroupFetch that stayed unavailable.
var ErrCoordinatorUnavailable = errors.New("coordinator unavailable")

// isCoordinatorLoading reports the errors KoP answers while it does not (yet) serve a group.
func isCoordinatorLoading(err error) bool {
	return errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.NotCoordinator) ||
		errors.Is(err, kerr.CoordinatorNotAvailable)
}

// Defaults of Fetcher.
const (
	DefaultBatchSize       = 50
	DefaultFetchParallel   = 4
	DefaultCoordinatorWait = 15 * time.Second
	DefaultRequestTimeout  = 15 * time.Second
)

// Fetcher asks KoP's Kafka listeners, with kadm and kgo. Groups are
// fetched in batches (one OffsetFetch v8+ per coordinator per batch), at most Parallel
// batches at once. Groups answered with COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR or
// COORDINATOR_NOT_AVAILABLE are asked again with exponential backoff until CoordinatorWait
// has passed since their first such answer, then reported Unavailable.
type Fetcher struct {
	Admin *kadm.Client
	// Client is the kgo client behind Admin: OffsetFetch goes to coordinators directly.
	Client          *kgo.Client
	RequestTimeout  time.Duration // per request (default DefaultRequestTimeout)
	BatchSize       int
	Parallel        int
	CoordinatorWait time.Duration
	// Describe also describes listed groups (state, members) in ListGroups.
	Describe bool

	// oneByOne: the brokers answered OffsetFetch below v8 (one group a request: KoP 2.10 and
	// 3.0), so batches are sent a group at a time without asking for v8 first.
	oneByOne atomic.Bool
}

// ClientOpts are the kgo options a Fetcher's client needs: kgo retries
// COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR of OffsetFetch itself until its retry
// timeout; a short one for OffsetFetch hands those errors back so that the fetcher's own
// bounded retry (CoordinatorWait) decides. Other requests keep requestTimeout.
func ClientOpts(requestTimeout time.Duration) []kgo.Opt {
	return []kgo.Opt{kgo.RetryTimeoutFn(func(key int16) time.Duration {
		if key == kmsg.OffsetFetch.Int16() || key == kmsg.FindCoordinator.Int16() {
			return 500 * time.Millisecond
		}
		return requestTimeout
	})}
}

// ListGroups lists the groups KoP knows (its cache): ListGroups, then DescribeGroups when Describe is set.
func (f *Fetcher) ListGroups(ctx context.Context) ([]ListedGroup, error) {
	ls, err := f.Admin.ListGroups(ctx)
	partial := partialList(err)
	if err != nil && partial == nil {
		return nil, err
	}
	// Straight from kadm's map into a slice of the right size, then sorted: ls.Sorted() and
	// appends were each another copy of every group (watch's resync at 200,000 groups on two
	// clusters: about 30 MB of its peak).
	out := make([]ListedGroup, 0, len(ls))
	for _, g := range ls {
		out = append(out, ListedGroup{Group: g.Group, State: g.State, ProtocolType: g.ProtocolType})
	}
	slices.SortFunc(out, func(a, b ListedGroup) int { return strings.Compare(a.Group, b.Group) })
	if !f.Describe || len(out) == 0 {
		return out, errOrNil(partial)
	}
	ds, err := f.Admin.DescribeGroups(ctx, ls.Groups()...)
	if err != nil && partialList(err) == nil {
		return nil, err
	}
	for i := range out {
		if d, ok := ds[out[i].Group]; ok && d.Err == nil {
			out[i].State, out[i].Members = d.State, len(d.Members)
			if d.ProtocolType != "" {
				out[i].ProtocolType = d.ProtocolType
			}
		}
	}
	return out, errOrNil(partial)
}

// PartialListError is a ListGroups that some of KoP's brokers answered and others did not
// (KoP lists on each broker the groups of the offsets partitions it owns): the groups listed
// are the answering brokers'. A group named by the caller is still asked by name, and only a
// group whose coordinator does not answer fails.
type PartialListError struct {
	Failed []string // "broker 2 (127.0.0.1:19093): error", one per broker that did not answer
}

func (e *PartialListError) Error() string {
	return "ListGroups answered by some brokers only; the groups of these are missing from the list: " + strings.Join(e.Failed, "; ")
}

// partialList is err as a PartialListError when some brokers answered, else nil.
func partialList(err error) *PartialListError {
	var se *kadm.ShardErrors
	if !errors.As(err, &se) || se.AllFailed || len(se.Errs) == 0 {
		return nil
	}
	pe := &PartialListError{}
	for _, e := range se.Errs {
		pe.Failed = append(pe.Failed, fmt.Sprintf("broker %d (%s): %v", e.Broker.NodeID, net.JoinHostPort(e.Broker.Host, strconv.Itoa(int(e.Broker.Port))), e.Err))
	}
	slices.Sort(pe.Failed)
	pe.Failed = slices.Compact(pe.Failed)
	return pe
}

// errOrNil keeps a nil *PartialListError from becoming a non-nil error.
func errOrNil(pe *PartialListError) error {
	if pe == nil {
		return nil
	}
	return pe
}

// FetchOffsets fetches the committed offsets of groups; every group gets an entry.
//
// Groups are sent straight to their coordinator (found once, batched, cached by kgo) in
// OffsetFetch requests of BatchSize groups, at most Parallel at once. Going to the broker
// directly skips kgo's request sharder, which issues a Metadata request for the topics of
// every OffsetFetch answer (to fill topic IDs that v8 answers do not carry): against KoP that
// request cost 25 times the OffsetFetch itself.
//
// Deadlines: every request has its own (RequestTimeout); a group KoP answers "loading" or
// "not coordinator" for is asked again with backoff until CoordinatorWait has passed since
// its first such answer. Nothing bounds the sweep as a whole but ctx, so 50,000 groups take
// as long as their requests take, and no group fails because the others were slow.
func (f *Fetcher) FetchOffsets(ctx context.Context, groups []string) map[string]GroupFetch {
	return Collect(ctx, f, groups)
}

// OffsetsEach hands each group's answer to fn, once per group, one call at a time
// (Fetcher.EachOffsets; fakes of KoP implement it too).
type OffsetsEach interface {
	EachOffsets(ctx context.Context, groups []string, fn func(group string, gf GroupFetch))
}

// Collect is every answer of f.EachOffsets, by group.
func Collect(ctx context.Context, f OffsetsEach, groups []string) map[string]GroupFetch {
	out := make(map[string]GroupFetch, len(groups))
	f.EachOffsets(ctx, groups, func(g string, gf GroupFetch) { out[g] = gf })
	return out
}

// EachOffsets is FetchOffsets handing each group's final answer to fn as it comes, so that
// a caller asking every group (watch's resync) never holds every answer at once. fn is
// called once per group, one call at a time; a group asked again (loading, not
// coordinator) is handed over once settled, or with its last answer when ctx ends.
func (f *Fetcher) EachOffsets(ctx context.Context, groups []string, fn func(group string, gf GroupFetch)) {
	batch := cmpOr(f.BatchSize, DefaultBatchSize)
	par := cmpOr(f.Parallel, DefaultFetchParallel)
	wait := f.CoordinatorWait
	if wait <= 0 {
		wait = DefaultCoordinatorWait
	}
	reqTimeout := f.RequestTimeout
	if reqTimeout <= 0 {
		reqTimeout = DefaultRequestTimeout
	}
	// The groups still being asked again, with their last answer.
	waiting := map[string]GroupFetch{}
	firstUnavailable := map[string]time.Time{}
	var mu sync.Mutex
	pending := slices.Clone(groups)
	backoff := 100 * time.Millisecond
	for len(pending) > 0 && ctx.Err() == nil {
		var retry []string
		record := func(g string, gf GroupFetch) {
			mu.Lock()
			defer mu.Unlock()
			delete(waiting, g)
			if gf.Unavailable {
				first, seen := firstUnavailable[g]
				if !seen {
					first = time.Now()
					firstUnavailable[g] = first
				}
				if time.Since(first) < wait {
					retry = append(retry, g)
					waiting[g] = gf
					return
				}
			}
			fn(g, gf)
		}
		byNode := f.coordinators(ctx, pending, reqTimeout, record)
		var eg errgroup.Group
		eg.SetLimit(par)
		for _, node := range slices.Sorted(maps.Keys(byNode)) {
			gs := byNode[node]
			for start := 0; start < len(gs); start += batch {
				chunk := gs[start:min(start+batch, len(gs))]
				eg.Go(func() error {
					for g, gf := range f.fetchBatch(ctx, node, chunk, reqTimeout) {
						record(g, gf)
					}
					return nil
				})
			}
		}
		_ = eg.Wait()
		if len(retry) == 0 {
			break
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
		}
		backoff = min(backoff*2, 2*time.Second)
		slices.Sort(retry)
		pending = retry
	}
	for _, g := range slices.Sorted(maps.Keys(waiting)) {
		fn(g, waiting[g]) // ctx ended while they were asked again
	}
}

// coordinators finds the coordinator of every group; groups without one are recorded
// (unavailable for the coordinator errors, failed otherwise) and left out.
func (f *Fetcher) coordinators(ctx context.Context, groups []string, timeout time.Duration, record func(string, GroupFetch)) map[int32][]string {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cs := f.Admin.FindGroupCoordinators(cctx, groups...)
	byNode := map[int32][]string{}
	for _, g := range groups {
		c, ok := cs[g]
		switch {
		case !ok:
			record(g, GroupFetch{Err: fmt.Errorf("group %s: no FindCoordinator answer", g)})
		case c.Err != nil && isCoordinatorLoading(c.Err):
			record(g, GroupFetch{Unavailable: true, Err: fmt.Errorf("group %s: find coordinator: %w", g, c.Err)})
		case c.Err != nil:
			record(g, GroupFetch{Err: fmt.Errorf("group %s: find coordinator: %w", g, c.Err)})
		default:
			byNode[c.NodeID] = append(byNode[c.NodeID], g)
		}
	}
	return byNode
}

// fetchBatch sends one OffsetFetch (v8+: many groups) to a coordinator, or one per group to
// a broker that only speaks older versions; each request has its own timeout.
func (f *Fetcher) fetchBatch(ctx context.Context, node int32, groups []string, timeout time.Duration) map[string]GroupFetch {
	broker := f.Client.Broker(int(node))
	if f.oneByOne.Load() {
		return f.fetchOneByOne(ctx, broker, groups, timeout)
	}
	out := make(map[string]GroupFetch, len(groups))
	req := kmsg.NewPtrOffsetFetchRequest()
	for _, g := range groups {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g
		req.Groups = append(req.Groups, rg)
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	resp, err := req.RequestWith(rctx, broker)
	cancel()
	if err == nil && resp.Version < 8 {
		f.oneByOne.Store(true)
		return f.fetchOneByOne(ctx, broker, groups, timeout)
	}
	if err != nil {
		for _, g := range groups {
			out[g] = requestFailed(g, err)
		}
		return out
	}
	for _, rg := range resp.Groups {
		out[rg.Group] = groupFetch(rg.Group, rg.ErrorCode, rg.Topics)
	}
	for _, g := range groups {
		if _, ok := out[g]; !ok {
			out[g] = GroupFetch{Err: fmt.Errorf("group %s: not in the OffsetFetch answer", g)}
		}
	}
	return out
}

// fetchOneByOne asks for each group in a request of its own, oneByOneParallel at once on the
// broker's connection, each within timeout: a batch's 50 requests one after the other under
// one deadline failed the last groups of a slow broker (KoP 2.10 verifying 2,500 groups).
func (f *Fetcher) fetchOneByOne(ctx context.Context, broker *kgo.Broker, groups []string, timeout time.Duration) map[string]GroupFetch {
	out := make(map[string]GroupFetch, len(groups))
	var mu sync.Mutex
	var eg errgroup.Group
	eg.SetLimit(oneByOneParallel)
	for _, g := range groups {
		eg.Go(func() error {
			gf := f.fetchOne(ctx, broker, g, timeout)
			mu.Lock()
			out[g] = gf
			mu.Unlock()
			return nil
		})
	}
	_ = eg.Wait() // no request fails the others
	return out
}

// fetchOne is one group's OffsetFetch below v8.
func (f *Fetcher) fetchOne(ctx context.Context, broker *kgo.Broker, g string, timeout time.Duration) GroupFetch {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = g
	resp, err := req.RequestWith(rctx, broker)
	if err != nil {
		return requestFailed(g, err)
	}
	var topics []kmsg.OffsetFetchResponseGroupTopic
	for _, t := range resp.Topics {
		gt := kmsg.NewOffsetFetchResponseGroupTopic()
		gt.Topic = t.Topic
		for _, p := range t.Partitions {
			gp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			gp.Partition, gp.Offset, gp.ErrorCode = p.Partition, p.Offset, p.ErrorCode
			gt.Partitions = append(gt.Partitions, gp)
		}
		topics = append(topics, gt)
	}
	return groupFetch(g, resp.ErrorCode, topics)
}

// requestFailed maps a failed request: coordinator errors are retried, anything else is
// this group's error.
func requestFailed(g string, err error) GroupFetch {
	if isCoordinatorLoading(err) {
		return GroupFetch{Unavailable: true, Err: fmt.Errorf("group %s: %w", g, err)}
	}
	return GroupFetch{Err: fmt.Errorf("group %s: %w", g, err)}
}

// groupFetch turns one group's answer into a GroupFetch.
func groupFetch(g string, code int16, topics []kmsg.OffsetFetchResponseGroupTopic) GroupFetch {
	if err := kerr.ErrorForCode(code); err != nil {
		if isCoordinatorLoading(err) {
			return GroupFetch{Unavailable: true, Err: fmt.Errorf("group %s: %w", g, err)}
		}
		return GroupFetch{Err: fmt.Errorf("group %s: %w", g, err)}
	}
	gf := GroupFetch{Offsets: map[string]map[int32]int64{}}
	for _, t := range topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				if isCoordinatorLoading(err) {
					return GroupFetch{Unavailable: true, Err: fmt.Errorf("group %s: %s[%d]: %w", g, t.Topic, p.Partition, err)}
				}
				return GroupFetch{Err: fmt.Errorf("group %s: %s[%d]: %w", g, t.Topic, p.Partition, err)}
			}
			if p.Offset < 0 {
				continue // no committed offset
			}
			if gf.Offsets[t.Topic] == nil {
				gf.Offsets[t.Topic] = map[int32]int64{}
			}
			gf.Offsets[t.Topic][p.Partition] = p.Offset
		}
	}
	return gf
}

// EndOffsets lists the log-end offsets of the partitions of topics (Kafka names) with
// ListOffsets (latest).
func (f *Fetcher) EndOffsets(ctx context.Context, topics []string) (map[string]map[int32]int64, error) {
	ls, err := f.Admin.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, err
	}
	out := map[string]map[int32]int64{}
	var errs []error
	ls.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			if o.Partition < 0 { // a topic-level error (a deleted topic): no partition to name
				errs = append(errs, fmt.Errorf("topic %s: %w", o.Topic, o.Err))
			} else {
				errs = append(errs, fmt.Errorf("%s[%d]: %w", o.Topic, o.Partition, o.Err))
			}
			return
		}
		if out[o.Topic] == nil {
			out[o.Topic] = map[int32]int64{}
		}
		out[o.Topic][o.Partition] = o.Offset
	})
	return out, errors.Join(errs...)
}

func cmpOr(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}
