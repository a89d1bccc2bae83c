package kop

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// KafkaGroups answers DescribeGroups and OffsetFetch for one group through a cluster's KoP
// listeners: reload's client (it implements reload.GroupDescriber and reload.OffsetFetcher).
// Unlike Fetcher it asks for every committed offset of one group (a fetch-all OffsetFetch)
// and leaves coordinator errors to its caller.
type KafkaGroups struct {
	Admin *kadm.Client
	// Client is the kgo client behind Admin; with it FetchMany asks many groups per
	// request (nil: one request per group).
	Client *kgo.Client
	// KafkaNamespace is the cluster's kafkaNamespace, for topic names.
	KafkaNamespace string
}

// DescribeGroups sends DescribeGroups (to each group's coordinator).
func (k KafkaGroups) DescribeGroups(ctx context.Context, groups []string) (map[string]GroupActivity, error) {
	dg, err := k.Admin.DescribeGroups(ctx, groups...)
	var se *kadm.ShardErrors
	if err != nil && !errors.As(err, &se) {
		return nil, err
	}
	out := make(map[string]GroupActivity, len(dg))
	for name, g := range dg {
		out[name] = GroupActivity{State: g.State, Members: len(g.Members), Err: g.Err}
	}
	if len(out) == 0 && err != nil {
		return nil, err
	}
	return out, nil
}

// FetchOffsets sends OffsetFetch for every committed offset of group.
func (k KafkaGroups) FetchOffsets(ctx context.Context, group string) ([]TopicOffset, error) {
	resp, err := k.Admin.FetchOffsets(ctx, group)
	if err != nil {
		return nil, err
	}
	if err := resp.Error(); err != nil {
		return nil, err
	}
	out := []TopicOffset{}
	resp.Each(func(o kadm.OffsetResponse) {
		if o.At < 0 {
			return // no committed offset
		}
		topic := loader.ShortName(loader.NormalizeTopic(o.Topic, k.KafkaNamespace), k.KafkaNamespace)
		out = append(out, TopicOffset{Topic: topic, Partition: o.Partition, Offset: o.At})
	})
	SortTopicOffsets(out)
	return out, nil
}

// Fetched is KoP's answer for one group of FetchMany: its committed offsets, or the error
// (a coordinator error wraps the kerr error; any other error means KoP could not be asked).
type Fetched struct {
	Offsets []TopicOffset
	Err     error
}

// FetchMany asks KoP for the committed offsets of many groups: OffsetFetch v8 requests of
// up to DefaultBatchSize groups sent to each group's coordinator (Fetcher), each bounded by
// requestTimeout, answered once each: a coordinator error is handed back, not retried (the
// caller polls). Without Client it asks one group at a time, as FetchOffsets.
func (k KafkaGroups) FetchMany(ctx context.Context, groups []string, requestTimeout time.Duration) map[string]Fetched {
	out := make(map[string]Fetched, len(groups))
	var mu sync.Mutex
	if k.Client == nil {
		var eg errgroup.Group
		eg.SetLimit(oneByOneParallel)
		for _, g := range groups {
			eg.Go(func() error {
				rctx, cancel := context.WithTimeout(ctx, requestTimeout)
				defer cancel()
				offs, err := k.FetchOffsets(rctx, g)
				mu.Lock()
				defer mu.Unlock()
				out[g] = Fetched{Offsets: offs, Err: err}
				return nil
			})
		}
		_ = eg.Wait() // no call fails the group
		return out
	}
	// A wait of 1ns: every answer is final at once (Fetcher retries only within the wait).
	f := &Fetcher{Admin: k.Admin, Client: k.Client, RequestTimeout: requestTimeout, CoordinatorWait: time.Nanosecond}
	f.EachOffsets(ctx, groups, func(g string, gf GroupFetch) {
		if gf.Err != nil {
			out[g] = Fetched{Err: gf.Err}
			return
		}
		offs := []TopicOffset{}
		for topic, parts := range gf.Offsets {
			short := loader.ShortName(loader.NormalizeTopic(topic, k.KafkaNamespace), k.KafkaNamespace)
			for p, o := range parts {
				offs = append(offs, TopicOffset{Topic: short, Partition: p, Offset: o})
			}
		}
		SortTopicOffsets(offs)
		out[g] = Fetched{Offsets: offs}
	})
	for _, g := range groups {
		if _, ok := out[g]; !ok { // ctx ended before it was asked
			out[g] = Fetched{Err: fmt.Errorf("group %s: not asked: %w", g, cmp.Or(ctx.Err(), errors.New("no answer")))}
		}
	}
	return out
}

// oneByOneParallel bounds the one-group OffsetFetches in flight without a Client.
const oneByOneParallel = 16

// GroupActivity is what DescribeGroups said about one group on one cluster.
type GroupActivity struct {
	State   string // Kafka group state: Empty, Dead, Stable, PreparingRebalance, ...
	Members int
	Err     error // the group-level error KoP answered, e.g. NOT_COORDINATOR
}

// TopicOffset is one committed offset of a group. Topic is the short Kafka name KoP
// answers with for the cluster's kafkaNamespace.
type TopicOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	// Origin is the cluster the commit was replicated from ("": written here).
	Origin string `json:"origin,omitempty"`
	// Floor is the group's own earlier commit here when the offset was replicated
	// (loader.CommittedOffset.Floor; 0: none): its translation never lands below it.
	Floor int64 `json:"floor,omitempty"`
}

// SortTopicOffsets sorts by topic, then partition.
func SortTopicOffsets(s []TopicOffset) {
	slices.SortFunc(s, func(a, b TopicOffset) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
}
