package audit

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// CommitWriter writes OffsetCommit requests into a cluster's offsets topic (failover's
// LocalWriter): one message each, all sent before any is awaited (kop.Writer.CommitRequests);
// result i is request i's.
type CommitWriter interface {
	CommitRequests(ctx context.Context, reqs [][]kop.OffsetCommit) []kop.Sent
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

// CommitRequests implements CommitWriter: one record per request, as it went, each timed
// with the whole batch.
func (c Commits) CommitRequests(ctx context.Context, reqs [][]kop.OffsetCommit) []kop.Sent {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	start := now()
	sent := c.CommitWriter.CommitRequests(ctx, reqs)
	end := now()
	for len(sent) < len(reqs) {
		sent = append(sent, kop.Sent{Err: errNotAnswered})
	}
	reason := whyOr(ctx, c.Reason)
	recs := make([]Record, 0, len(reqs))
	for i, commits := range reqs {
		s := sent[i]
		r := Record{Cluster: c.Cluster, Who: c.Who, Action: ActionCommit, Reason: reason, Groups: []string{}}
		for _, o := range commits {
			r.Offsets = append(r.Offsets, Offset{Group: o.Group, Topic: o.Topic, Partition: o.Partition, Offset: o.Offset})
			if !slices.Contains(r.Groups, o.Group) {
				r.Groups = append(r.Groups, o.Group)
			}
		}
		if s.Err == nil {
			r.Topic = partitionTopic(c.Topic, s.Partition)
			if s.ID != nil {
				r.MessageID = s.ID.String()
			}
		}
		finish(&r, start, end, s.Err)
		recs = append(recs, r)
	}
	if werr := WriteAll(c.Sink, recs); werr != nil && c.OnError != nil {
		c.OnError(werr)
	}
	return sent
}

var errNotAnswered = errors.New("the writer did not answer for this request")

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
