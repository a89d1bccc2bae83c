package audit

import (
	"context"
	"slices"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// CommitWriter writes one OffsetCommit request into a cluster's offsets topic (failover's
// LocalWriter).
type CommitWriter interface {
	CommitRequest(ctx context.Context, commits []kop.OffsetCommit) (int32, pulsar.MessageID, error)
}

// Commits records each commit request of a CommitWriter in Sink.
type Commits struct {
	CommitWriter
	Cluster string
	// Topic is the offsets topic written to; the record names the partition topic.
	Topic   string
	Reason  string
	Who     Who
	Sink    Sink
	OnError func(error)
	Now     func() time.Time
}

// CommitRequest implements CommitWriter.
func (c Commits) CommitRequest(ctx context.Context, commits []kop.OffsetCommit) (int32, pulsar.MessageID, error) {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	start := now()
	part, id, err := c.CommitWriter.CommitRequest(ctx, commits)
	r := Record{Cluster: c.Cluster, Who: c.Who, Action: ActionCommit, Reason: whyOr(ctx, c.Reason), Groups: []string{}}
	for _, o := range commits {
		r.Offsets = append(r.Offsets, Offset{Group: o.Group, Topic: o.Topic, Partition: o.Partition, Offset: o.Offset})
		if !slices.Contains(r.Groups, o.Group) {
			r.Groups = append(r.Groups, o.Group)
		}
	}
	if err == nil {
		r.Topic = partitionTopic(c.Topic, part)
		if id != nil {
			r.MessageID = id.String()
		}
	}
	finish(&r, start, now(), err)
	if werr := c.Sink.Write(r); werr != nil && c.OnError != nil {
		c.OnError(werr)
	}
	return part, id, err
}

func whyOr(ctx context.Context, reason string) string {
	if w := whyOf(ctx); w.Reason != "" {
		return w.Reason
	}
	return reason
}

func partitionTopic(topic string, p int32) string {
	if topic == "" {
		return ""
	}
	return pulsarx.PartitionTopic(topic, p)
}
