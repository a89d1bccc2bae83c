//go:build kop

package kop

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
)

// The load of TestSyncScale: member-less groups committing on scus, half of them on aligned
// topics (the copies equal), half on misaligned ones (scaleShift messages on scus alone,
// then replicated ones: scus N is wus N-scaleShift), so that one phase measures both.

// scaleShift is how many messages a misaligned topic holds on scus alone. Odd, and a
// misaligned group commits scaleShift + an even number: its exact translation on wus is
// even, scus's own number (served by the replication model, which does not translate) odd,
// so the one is never taken for the other.
const scaleShift = 101

// scaleKinds are the topics' kinds, in the order group i's parity picks them.
var scaleKinds = [2]string{"aligned", "misaligned"}

// scaleLoad is what the groups of a measurement commit, and on which topics.
type scaleLoad struct {
	prefix string
	n      int
	topics [2][]string // by kind, scaleTopics/2 each
}

// newScaleLoad makes the topics for n groups committing up to maxRound rounds each.
func newScaleLoad(t *testing.T, n, maxRound int) *scaleLoad {
	l := &scaleLoad{prefix: labtest.Name(fmt.Sprintf("ss%d", n)) + "-", n: n}
	per := scaleTopics / 2
	for k := range per {
		l.topics[0] = append(l.topics[0], labtest.NewTopic(t, theLab, fmt.Sprintf("%st%02d", l.prefix, k)))
		l.topics[1] = append(l.topics[1], labtest.NewTopic(t, theLab, fmt.Sprintf("%sm%02d", l.prefix, k)))
	}
	scus, wus := theLab.Cluster("scus"), theLab.Cluster("wus")
	aligned, shifted := maxRound+10, 2*maxRound+10 // every commit below the topics' end
	start := time.Now()
	for _, tp := range l.topics[1] {
		produceLocal(t, scus, tp, scaleShift)
	}
	for k := range per {
		produceKeys(t, "scus", l.topics[0][k], "m", aligned)
		produceKeys(t, "scus", l.topics[1][k], "m", shifted)
	}
	for k := range per {
		labtest.WaitEndOffset(t, scus, l.topics[1][k], int64(scaleShift+shifted))
		labtest.WaitEndOffset(t, wus, l.topics[0][k], int64(aligned))
		labtest.WaitEndOffset(t, wus, l.topics[1][k], int64(shifted))
	}
	t.Logf("%d groups: %d aligned topics of %d messages, %d misaligned of %d on scus (%d on wus), written and replicated in %s",
		n, per, aligned, per, scaleShift+shifted, shifted, time.Since(start).Round(time.Second))
	return l
}

func (l *scaleLoad) group(i int) string { return fmt.Sprintf("%sg%06d", l.prefix, i) }

// kind is 0 (aligned) or 1 (misaligned): group i's parity.
func (l *scaleLoad) kind(i int) int { return i % 2 }

func (l *scaleLoad) topic(i int) string {
	ts := l.topics[l.kind(i)]
	return ts[(i/2)%len(ts)]
}

// shift is scus's number minus wus's for group i's topic.
func (l *scaleLoad) shift(i int) int64 { return int64(l.kind(i)) * scaleShift }

// offset is what group i commits at round (scus's numbering).
func (l *scaleLoad) offset(i, round int) int64 {
	if l.kind(i) == 0 {
		return int64(round)
	}
	return scaleShift + 2*int64(round)
}

// sampled are the groups whose every commit is timed: 200 of the n (200 or more), spread
// over them, of each kind in turn.
func (l *scaleLoad) sampled() []int {
	every := max(1, l.n/200)
	var out []int
	for k := 0; len(out) < 200 && k*every < l.n; k++ {
		i := k * every
		if l.kind(i) != k%2 && i+1 < l.n {
			i++
		}
		out = append(out, i)
	}
	return out
}

// committer sends member-less OffsetCommits of n groups on scus, one partition each.
type committer struct {
	cl    *kgo.Client
	n     int
	group func(int) string
	topic func(int) string
	// keys, when set, are the topics each commit of group i covers (partition 0 of each),
	// in place of topic(i): a group of several keys.
	keys func(int) []string
	// offset, when set, is what group i commits at a round; else the round.
	offset func(i, round int) int64
	log    map[int]*commitLog // the sampled groups' acknowledged commits
	// workers are the commits in flight at once (0: 32); until, when set, is when run stops
	// sending (a commit in flight then is still waited for and logged).
	workers int
	until   time.Time
	acked   atomic.Int64 // every commit acknowledged, over every run
}

// run sends total commits at rate a second, group after group, the k-th round of a group
// committing offset round+k (or offset(i, round+k)); it returns how many were acknowledged.
func (c *committer) run(ctx context.Context, t *testing.T, rate, total, round int) int {
	t.Helper()
	var next, acked atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	workers := c.workers
	if workers == 0 {
		workers = 32
	}
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil && (c.until.IsZero() || time.Now().Before(c.until)) {
				k := int(next.Add(1) - 1)
				if k >= total {
					return
				}
				if wait := time.Until(start.Add(time.Duration(k) * time.Second / time.Duration(rate))); wait > 0 {
					time.Sleep(wait)
				}
				if err := c.commit(ctx, k%c.n, round+k/c.n); err != nil {
					select {
					case errs <- err:
					default:
					}
					continue
				}
				acked.Add(1)
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		t.Logf("a commit failed (the first; %d of %d acknowledged): %v", acked.Load(), total, err)
	default:
	}
	return int(acked.Load())
}

// commit sends group i's commit of round and logs it when acknowledged. Its own timeout,
// not ctx's end, bounds it: a commit cancelled in flight may land unlogged, and the
// measurement would take its sync for a value no commit made.
func (c *committer) commit(ctx context.Context, i, round int) error {
	off := int64(round)
	if c.offset != nil {
		off = c.offset(i, round)
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = c.group(i), -1
	for _, tn := range c.topicsOf(i) {
		tp := kmsg.NewOffsetCommitRequestTopic()
		tp.Topic = tn
		pp := kmsg.NewOffsetCommitRequestTopicPartition()
		pp.Partition, pp.Offset, pp.LeaderEpoch = 0, off, -1
		tp.Partitions = append(tp.Partitions, pp)
		req.Topics = append(req.Topics, tp)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	resp, err := req.RequestWith(rctx, c.cl)
	cancel()
	if err = commitError(resp, err); err != nil {
		return fmt.Errorf("commit %s %d: %w", req.Group, off, err)
	}
	c.acked.Add(1)
	if l := c.log[i]; l != nil {
		l.add(off)
	}
	return nil
}

// topicsOf are the topics a commit of group i covers.
func (c *committer) topicsOf(i int) []string {
	if c.keys != nil {
		return c.keys(i)
	}
	return []string{c.topic(i)}
}

// scaleTopicsOf makes scaleTopics aligned topics, msgs messages each written on scus and
// replicated to wus (TestKeepScale's).
func scaleTopicsOf(t *testing.T, prefix string, msgs int) []string {
	var topics []string
	for i := range scaleTopics {
		topics = append(topics, labtest.NewTopic(t, theLab, fmt.Sprintf("%st%02d", prefix, i)))
	}
	for _, tp := range topics {
		produceKeys(t, "scus", tp, "m", msgs)
	}
	for _, tp := range topics {
		labtest.WaitEndOffset(t, theLab.Cluster("wus"), tp, int64(msgs))
	}
	return topics
}
