package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KafkaOptions tune WriteKafka.
type KafkaOptions struct {
	// Concurrency is how many OffsetCommit requests are in flight (default 16).
	Concurrency int
	// Retry bounds the retries of a request KoP answers with a retriable error
	// (COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR...): default 2 minutes.
	Retry    time.Duration
	Progress io.Writer
}

// WriteKafka commits the load of s through KoP's Kafka path: one OffsetCommit request per
// Request, as a simple (member-less) commit (generation -1), sent with cl, which must be
// capped at Kafka 3.8 versions (connect.KafkaOpts). KoP writes the records itself. Not
// kadm.CommitOffsets: it sends a Metadata request before every commit to resolve topic ids,
// which OffsetCommit below v10 does not use.
func WriteKafka(ctx context.Context, cl *kgo.Client, s Spec, o KafkaOptions) (Stats, error) {
	if err := s.Validate(); err != nil {
		return Stats{}, err
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.Retry <= 0 {
		o.Retry = 2 * time.Minute
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		st    Stats
		done  atomic.Int64
		wg    sync.WaitGroup
		reqs  = make(chan Request, o.Concurrency)
		start = time.Now()
	)
	stop := progress(o.Progress, start, done.Load, int64(s.Commits))
	defer stop()
	for range o.Concurrency {
		wg.Go(func() {
			for req := range reqs {
				if context.Cause(ctx) != nil {
					continue
				}
				if err := commitRequest(ctx, cl, req, o.Retry); err != nil {
					cancel(err)
					continue
				}
				done.Add(int64(len(req.Commits)))
			}
		})
	}
	err := s.Requests(func(req Request) error {
		select {
		case reqs <- req:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		st.Requests++
		st.Commits += len(req.Commits)
		return nil
	})
	close(reqs)
	wg.Wait()
	st.Elapsed = time.Since(start)
	if cause := context.Cause(ctx); cause != nil {
		return st, cause
	}
	return st, err
}

func commitRequest(ctx context.Context, cl *kgo.Client, r Request, retry time.Duration) error {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = r.Group
	req.Generation = -1
	byTopic := map[string]int{}
	for _, c := range r.Commits {
		short := c.Topic[strings.LastIndexByte(c.Topic, '/')+1:] // KoP's full name -> Kafka name
		i, ok := byTopic[short]
		if !ok {
			i = len(req.Topics)
			byTopic[short] = i
			t := kmsg.NewOffsetCommitRequestTopic()
			t.Topic = short
			req.Topics = append(req.Topics, t)
		}
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset, p.LeaderEpoch = c.Partition, c.Offset, -1
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
	}
	deadline := time.Now().Add(retry)
	backoff := 100 * time.Millisecond
	for {
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = commitError(resp)
		}
		if err == nil {
			return nil
		}
		var ke *kerr.Error
		if !errors.As(err, &ke) || !ke.Retriable || time.Now().After(deadline) {
			return fmt.Errorf("loadgen: commit group %s round %d: %w", r.Group, r.Round, err)
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

func commitError(resp *kmsg.OffsetCommitResponse) error {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("topic %s partition %d: %w", t.Topic, p.Partition, err)
			}
		}
	}
	return nil
}

// Members runs groups real consumer groups (named <GroupPrefix>member-NNNN) of one member
// each, every group subscribed to the topics of its Spec keys: each member joins, gets its
// partitions assigned, commits offset 1000 for each as a group member (generation and
// member id set), stays for hold, and leaves. KoP thus writes group metadata records and
// member commits, as real consumers make it do. opts are the client options (capped at Kafka
// 3.8, connect.KafkaOpts).
func Members(ctx context.Context, opts []kgo.Opt, s Spec, groups int, hold time.Duration) error {
	s = s.WithDefaults()
	if err := s.Validate(); err != nil {
		return err
	}
	var (
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
	)
	for i := range groups {
		wg.Go(func() {
			if err := member(ctx, opts, s, i, hold); err != nil {
				errMu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				errMu.Unlock()
			}
		})
	}
	wg.Wait()
	return firstErr
}

func member(ctx context.Context, opts []kgo.Opt, s Spec, i int, hold time.Duration) error {
	group := fmt.Sprintf("%smember-%04d", s.GroupPrefix, s.FirstGroup+i)
	topics := map[string]bool{}
	for _, k := range s.Keys(i) {
		topics[k.Topic] = true
	}
	var list []string
	for t := range topics {
		list = append(list, t)
	}
	assigned := make(chan map[string][]int32, 1)
	cl, err := kgo.NewClient(append(opts,
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(list...),
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			select {
			case assigned <- a:
			default:
			}
		}),
	)...)
	if err != nil {
		return fmt.Errorf("loadgen: member of group %s: %w", group, err)
	}
	defer cl.Close() // leaves the group
	pollCtx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	go func() {
		for pollCtx.Err() == nil {
			cl.PollFetches(pollCtx) // drives nothing the group needs, but surfaces fetch errors
		}
	}()
	joinCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var a map[string][]int32
	select {
	case a = <-assigned:
	case <-joinCtx.Done():
		return fmt.Errorf("loadgen: group %s: no partitions assigned within 2m", group)
	}
	offs := map[string]map[int32]kgo.EpochOffset{}
	for t, ps := range a {
		offs[t] = map[int32]kgo.EpochOffset{}
		for _, p := range ps {
			offs[t][p] = kgo.EpochOffset{Epoch: -1, Offset: 1000}
		}
	}
	var cerr error
	cl.CommitOffsetsSync(joinCtx, offs, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err == nil {
			err = commitError(resp)
		}
		cerr = err
	})
	if cerr != nil {
		return fmt.Errorf("loadgen: member commit of group %s: %w", group, cerr)
	}
	if hold > 0 {
		select {
		case <-time.After(hold):
		case <-ctx.Done():
		}
	}
	return nil
}
