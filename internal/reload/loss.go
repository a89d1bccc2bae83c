package reload

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// The invariant every reload keeps: it never makes KoP serve an older offset, or none,
// where it served a newer one. A reload replaces KoP's cache of a bundle with what its
// loader reads from the offsets topic, so the plan compares, row by row, what KoP serves
// now with what the loader model predicts it will serve (loader.PersistedOffsets.Predict),
// and refuses a bundle where any row would move back or vanish unless AcceptLoss is set.

// Loss is one row a reload would move back or drop.
type Loss struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Served    int64  `json:"served"`              // what KoP serves now
	Predicted *int64 `json:"predicted"`           // what it would serve after the reload; null: none
	Why       string `json:"why"`                 // the loader model's reason
	Unknown   bool   `json:"unknown,omitempty"`   // KoP could not be asked: a loss is not excluded
	Error     string `json:"error,omitempty"`     // with Unknown
	Requested bool   `json:"requested,omitempty"` // the group was named by the request
}

func (l Loss) String() string {
	if l.Unknown {
		return fmt.Sprintf("%s: KoP could not be asked what it serves (%s)", l.Group, l.Error)
	}
	pred := "none"
	if l.Predicted != nil {
		pred = fmt.Sprint(*l.Predicted)
	}
	return fmt.Sprintf("%s %s[%d]: serves %d, would serve %s (%s)", l.Group, l.Topic, l.Partition, l.Served, pred, l.Why)
}

// losses compares what KoP serves for one group with what a load would bring.
func losses(g AffectedGroup, served *CacheAnswer, why func(topic string, partition int32) string) []Loss {
	if served == nil {
		return nil
	}
	if served.Error != "" {
		if served.ErrorKind == ErrorKindCoordinator {
			// KoP serves nothing for the group right now (loading or not coordinator): a
			// load cannot take anything away.
			return nil
		}
		return []Loss{{Group: g.Group, Unknown: true, Error: served.Error, Requested: g.Requested}}
	}
	pred := map[topicPart]int64{}
	for _, p := range g.Persisted {
		pred[topicPart{p.Topic, p.Partition}] = p.Offset
	}
	var out []Loss
	for _, s := range served.Offsets {
		p, ok := pred[topicPart{s.Topic, s.Partition}]
		if ok && p >= s.Offset {
			continue
		}
		l := Loss{Group: g.Group, Topic: s.Topic, Partition: s.Partition, Served: s.Offset, Why: why(s.Topic, s.Partition), Requested: g.Requested}
		if ok {
			l.Predicted = &p
		}
		out = append(out, l)
	}
	return out
}

type topicPart struct {
	topic     string
	partition int32
}

// lossReason explains why the loader would not bring back what KoP serves.
func lossReason(po *loader.PersistedOffsets, group, fullTopic string, partition int32, n int32) string {
	if f, ok := po.LoadFailure(loader.PartitionFor(group, n)); ok {
		return "KoP cannot load the offsets partition: " + f.Reason + " (message " + f.MessageID + ")"
	}
	if c, ok := po.PendingOffset(group, fullTopic, partition); ok {
		return fmt.Sprintf("a transactional commit (%d) that KoP's loader leaves pending: its COMMIT marker is invisible to the loader, only the live path applied it", c.Offset)
	}
	if _, ok := po.Lookup(group, fullTopic, partition); !ok {
		return "the loader view of the offsets topic has no offset for it (a tombstone, compaction keeping only the group's newest message, or a commit not yet in the topic)"
	}
	return "the loader view of the offsets topic holds an older offset (compaction, a replicated tombstone or an older commit replicated later)"
}

// predictedOffsets is what KoP would serve for group after a load of its partition.
func predictedOffsets(po *loader.PersistedOffsets, group string, n int32, kafkaNamespace string) []TopicOffset {
	if _, failed := po.LoadFailure(loader.PartitionFor(group, n)); failed {
		return []TopicOffset{}
	}
	return topicOffsets(po.GroupOffsets(group), kafkaNamespace)
}

// fetchServed asks KoP what it serves for each group (batched when the Fetcher can).
func fetchServed(ctx context.Context, f OffsetFetcher, groups []string) map[string]*CacheAnswer {
	return AskMany(ctx, f, groups, DefaultServedTimeout)
}

// fetchConcurrency bounds the OffsetFetches in flight when many groups are asked (a plan,
// a verification): a bundle can hold thousands of groups, one round trip each.
const fetchConcurrency = 16

// eachConcurrently calls fn(0..n-1), fetchConcurrency at a time, and waits for all.
func eachConcurrently(n int, fn func(i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, fetchConcurrency)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(i)
		})
	}
	wg.Wait()
}

// DefaultServedTimeout bounds the OffsetFetch of one group while planning.
const DefaultServedTimeout = 10 * time.Second

func lossRefusal(ls []Loss) string {
	return "a reload would make KoP serve older offsets or none: " + firstOf(ls) +
		"; --accept-loss reloads it anyway and loses them"
}

// firstOf lists the first five rows of a refusal and counts the others.
func firstOf[T fmt.Stringer](rows []T) string {
	const show = 5
	var parts []string
	for i, r := range rows {
		if i == show {
			parts = append(parts, fmt.Sprintf("and %d more", len(rows)-show))
			break
		}
		parts = append(parts, r.String())
	}
	return strings.Join(parts, "; ")
}
