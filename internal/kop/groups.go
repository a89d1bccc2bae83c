package kop

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// KafkaGroups answers DescribeGroups and OffsetFetch for one group through a cluster's KoP
// listeners: reload's client (it implements reload.GroupDescriber and reload.OffsetFetcher).
// Unlike Fetcher it asks for every committed offset of one group (a fetch-all OffsetFetch)
// and leaves coordinator errors to its caller.
type KafkaGroups struct {
	Admin *kadm.Client
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
