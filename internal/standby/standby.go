// Package standby keeps, on each cluster, what landing the groups replicated to it takes:
// for every commit that reached the cluster through the replicated offsets topic, the
// commit's offset translated into this cluster's numbering (package align, no-skip rule),
// written back into the cluster's own offsets topic in KoP's format with replication
// disabled and a mark that names the source commit (loader.KeptMark). Any load of the
// cluster, whatever triggers it, then serves numbers that skip nothing, and the cluster alone
// knows which of its offsets were checked against the source and when, so that a failover
// runs when the source is gone (docs/failover.md).
package standby

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// Writer writes a kept translation into the cluster's offsets topic (*kop.Writer).
type Writer interface {
	Keep(ctx context.Context, cs []kop.OffsetCommit, mark loader.KeptMark) (int32, pulsar.MessageID, error)
}

var _ Writer = (*kop.Writer)(nil)

// Keeper keeps the translations of one cluster. Not safe for concurrent use: watch's cycle
// calls it.
type Keeper struct {
	// Cluster is the cluster kept (the target of the replicated commits).
	Cluster string
	// KafkaNamespace turns the stored topic names into the Kafka names both clusters know.
	KafkaNamespace string
	// Sources reads every cluster's data topics (this one included).
	Sources map[string]align.Source
	Writer  Writer
	// MaxMessages bounds a first read of a copy (0: align.DefaultMaxMessages).
	MaxMessages int64
	Now         func() time.Time

	pool *align.Pool // the Trackers, made by trackers()
	// behind: keys whose kept translation stopped at the end of what this cluster held of
	// the messages the group consumed (replication behind): translated again while the
	// source's commit stays the newest, until it names the message.
	behind map[verdict.Key]int64
	// again: groups left for a source that did not answer, or whose keeping failed.
	again map[string]struct{}
}

// Want returns the offsets of one group that want a kept translation: the newest commit of
// the key here was replicated from another cluster and is not translated yet, or its kept
// translation stopped short (replication behind).
func (k *Keeper) Want(offsets []loader.CommittedOffset) []loader.CommittedOffset {
	var out []loader.CommittedOffset
	for _, co := range offsets {
		switch {
		case co.Newer != nil:
			out = append(out, k.newer(co))
		case co.Origin != "" && co.Origin != k.Cluster:
			out = append(out, co)
		case co.Kept != nil && co.Kept.Current && co.Origin == "":
			if src, ok := k.behind[verdict.Key{Group: co.Group, Topic: co.Topic, Partition: co.Partition}]; ok && src == co.Kept.Source {
				// The kept translation stands in for the source's commit co.Kept.Source.
				co.Offset, co.Origin = co.Kept.Source, co.Kept.From
				out = append(out, co)
			}
		}
	}
	return out
}

// newer is what to keep for co, a kept translation that landed over the newer commit
// co.Newer (the keeper's write raced a replicated commit, or the group's own): that commit,
// kept now so that it is the last word again. The group's own commit (Origin "") is kept
// from this cluster itself: its own number, written back as it was.
func (k *Keeper) newer(co loader.CommittedOffset) loader.CommittedOffset {
	n := co
	n.Offset, n.Origin, n.CommitTimestamp, n.Kept, n.Newer = co.Newer.Offset, cmp.Or(co.Newer.Origin, k.Cluster), co.Newer.CommitTimestamp, nil, nil
	if n.Origin == k.Cluster {
		n.Own = nil
	}
	return n
}

// Kept is one translation written.
type Kept struct {
	Key        verdict.Key
	From       string
	Source     int64 // the commit on From
	Translated int64 // what was written here
	// Behind: this cluster did not hold every message the group consumed yet; translated
	// again next time.
	Behind bool
}

// Result is what Keep did for one group.
type Result struct {
	Kept   []Kept
	Errors []error // each names the cluster, group, topic and partition
}

// Keep translates want (from Want) and writes one kept translation per source cluster.
// up reports whether a cluster answers; a source that does not is left for later (its
// offsets stay as replicated). Nothing is written for a key whose translation failed.
func (k *Keeper) Keep(ctx context.Context, group string, want []loader.CommittedOffset, up func(cluster string) bool) Result {
	var res Result
	delete(k.again, group)
	byFrom := map[string][]loader.CommittedOffset{}
	for _, co := range want {
		byFrom[co.Origin] = append(byFrom[co.Origin], co)
	}
	for _, from := range slices.Sorted(maps.Keys(byFrom)) {
		if !up(from) {
			k.retry(group)
			continue
		}
		cos := byFrom[from]
		slices.SortFunc(cos, func(a, b loader.CommittedOffset) int {
			return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
		})
		var commits []kop.OffsetCommit
		mark := loader.KeptMark{From: from, At: k.now()}
		var kept []Kept
		for _, co := range cos {
			t, err := k.translate(ctx, from, co)
			if err != nil {
				res.Errors = append(res.Errors, fmt.Errorf("cluster %s: keep group %s %s[%d] (%d from %s): %w", k.Cluster, group, loader.ShortName(co.Topic, k.KafkaNamespace), co.Partition, co.Offset, from, err))
				k.retry(group)
				continue
			}
			if co.Kept != nil && co.Kept.Current && co.Kept.Source == co.Offset && co.Kept.Offset == t.Translated {
				continue // kept again for replication behind, and nothing more arrived
			}
			commits = append(commits, commitOf(co, t.Translated))
			mark.Sources = append(mark.Sources, co.Offset)
			kept = append(kept, Kept{Key: verdict.Key{Group: group, Topic: co.Topic, Partition: co.Partition}, From: from, Source: co.Offset, Translated: t.Translated, Behind: t.Behind})
		}
		if len(commits) == 0 {
			continue
		}
		if _, _, err := k.Writer.Keep(ctx, commits, mark); err != nil {
			res.Errors = append(res.Errors, fmt.Errorf("cluster %s: write the kept translation of group %s (from %s): %w", k.Cluster, group, from, err))
			k.retry(group)
			continue
		}
		for _, kt := range kept {
			if kt.Behind {
				k.remember(kt.Key, kt.Source)
			} else {
				delete(k.behind, kt.Key)
			}
		}
		res.Kept = append(res.Kept, kept...)
	}
	return res
}

// Again reports the groups to keep again though nothing of theirs changed: kept short
// (replication of the data behind), left for a source that did not answer, or failed.
func (k *Keeper) Again() []string {
	var out []string
	for key := range k.behind {
		out = append(out, key.Group)
	}
	for g := range k.again {
		out = append(out, g)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Later puts groups in Again: they changed while they could not be kept yet (watch still
// replaying a cluster).
func (k *Keeper) Later(groups ...string) {
	for _, g := range groups {
		k.retry(g)
	}
}

// Done forgets group in Again: it wants nothing kept any more.
func (k *Keeper) Done(group string) { delete(k.again, group) }

func (k *Keeper) retry(group string) {
	if k.again == nil {
		k.again = map[string]struct{}{}
	}
	k.again[group] = struct{}{}
}

func (k *Keeper) remember(key verdict.Key, source int64) {
	if k.behind == nil {
		k.behind = map[verdict.Key]int64{}
	}
	k.behind[key] = source
}

// translate moves co into this cluster's numbering, floored on the group's own commit here
// (Floor: the commit under the replicated one, after a failback) by sync's rule
// (align.Pool.FloorHolds): a reset on the source after the group left this cluster moves the
// kept translation back too, so that a failover lands at the reset point. The group's own
// commit hidden by a late kept translation (loader.Newer) is its own number: written back as
// it was.
func (k *Keeper) translate(ctx context.Context, from string, co loader.CommittedOffset) (align.Translation, error) {
	if from == k.Cluster {
		return align.Translation{Translated: co.Offset}, nil
	}
	topic := loader.ShortName(co.Topic, k.KafkaNamespace)
	return k.trackers().TranslateFloored(ctx, from, k.Cluster, topic, co.Partition, co.Offset, co.Floor(), co.Group)
}

// TrackerIdle is how long a Tracker that answered nothing is kept (align.TrackerIdle).
const TrackerIdle = align.TrackerIdle

// trackers is the Keeper's Pool, made on first use from Sources and MaxMessages; its clock
// is the Keeper's, read at each call.
func (k *Keeper) trackers() *align.Pool {
	if k.pool == nil {
		k.pool = &align.Pool{Sources: k.Sources, MaxMessages: k.MaxMessages, Now: k.now}
	}
	return k.pool
}

// Stats sums what the trackers read: the cost of keeping (docs/failover.md).
func (k *Keeper) Stats() align.TrackerStats { return k.trackers().Stats() }

// commitOf is co with its offset translated, times and metadata kept.
func commitOf(co loader.CommittedOffset, translated int64) kop.OffsetCommit {
	c := kop.OffsetCommit{Group: co.Group, Topic: co.Topic, Partition: co.Partition, Offset: translated, Metadata: co.Metadata, CommitTime: co.CommitTimestamp.Time()}
	if co.ExpireTimestamp != nil {
		c.ExpireTime = co.ExpireTimestamp.Time()
	} else {
		c.NoExpiry = true
	}
	return c
}

func (k *Keeper) now() time.Time {
	if k.Now != nil {
		return k.Now()
	}
	return time.Now()
}
