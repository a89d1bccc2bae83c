package reload

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// KafkaGroups answers DescribeGroups and OffsetFetch through a cluster's KoP listeners. It
// implements GroupDescriber and OffsetFetcher.
type KafkaGroups struct {
	Admin *kadm.Client
	// KafkaNamespace is the cluster's kafkaNamespace, for topic names.
	KafkaNamespace string
}

var (
	_ GroupDescriber = KafkaGroups{}
	_ OffsetFetcher  = KafkaGroups{}
)

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
	sortTopicOffsets(out)
	return out, nil
}
