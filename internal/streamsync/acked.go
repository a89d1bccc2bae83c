package streamsync

import (
	"sync"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// acked holds the commits a target acknowledged that its Store has not read back yet. A
// group made due again while its commit was in flight (a member leaving the source writes a
// group record) is planned as soon as the commit is acknowledged, before the target's offsets
// topic has been read back with it: planned on the old value, the same translation was sent
// a second time (issue 46's 20 moves). Until the Store shows anything else for the key, the
// views see the acknowledged commit instead of what was there before it.
type acked struct {
	mu    sync.Mutex
	m     map[ackGroup]map[ackKey]ackEntry // by cluster and group: a view looks up its own
	swept time.Time
}

type ackGroup struct{ cluster, group string }

type ackKey struct {
	topic     string // the Kafka short name
	partition int32
}

type ackEntry struct {
	commit kop.SyncCommit
	before loader.CommittedOffset // the Store's entry when the commit was acknowledged
	had    bool                   // the Store had an entry then
	at     time.Time
}

// ackedFor is how long an acknowledged commit stands in for the Store's entry at most: far
// longer than a target takes to read its own offsets topic back.
const ackedFor = time.Minute

// add records what cluster acknowledged for group; before gives the Store's entry of a key now.
func (a *acked) add(cluster, group string, cs []kop.SyncCommit, before func(topic string, partition int32) (loader.CommittedOffset, bool), now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[ackGroup]map[ackKey]ackEntry{}
	}
	a.sweep(now)
	g := ackGroup{cluster, group}
	keys := a.m[g]
	if keys == nil {
		keys = map[ackKey]ackEntry{}
		a.m[g] = keys
	}
	for _, c := range cs {
		b, had := before(c.Topic, c.Partition)
		keys[ackKey{c.Topic, c.Partition}] = ackEntry{commit: c, before: b, had: had, at: now}
	}
}

// sweep forgets the entries older than ackedFor, at most once per ackedFor: a sweep walks
// every group, and add runs for every commit acknowledged.
func (a *acked) sweep(now time.Time) {
	if now.Sub(a.swept) < ackedFor {
		return
	}
	a.swept = now
	for g, keys := range a.m {
		for k, e := range keys {
			if now.Sub(e.at) > ackedFor {
				delete(keys, k)
			}
		}
		if len(keys) == 0 {
			delete(a.m, g)
		}
	}
}

// overlay returns offs (group's offsets on cluster, kafkaNamespace to name its topics) with
// the acknowledged commits the Store has not shown yet in place of what it shows; a key whose
// Store entry changed since (read back, or newer) is forgotten.
func (a *acked) overlay(cluster, group, kafkaNamespace string, offs []loader.CommittedOffset) []loader.CommittedOffset {
	a.mu.Lock()
	defer a.mu.Unlock()
	g := ackGroup{cluster, group}
	keys := a.m[g]
	if len(keys) == 0 {
		return offs
	}
	seen := map[ackKey]bool{}
	for i, co := range offs {
		k := ackKey{loader.ShortName(co.Topic, kafkaNamespace), co.Partition}
		e, ok := keys[k]
		if !ok {
			continue
		}
		seen[k] = true
		if !e.had || !sameEntry(co, e.before) {
			delete(keys, k) // the Store moved on: what it shows is the newest
			continue
		}
		offs[i].Offset, offs[i].Metadata, offs[i].Kept, offs[i].Origin = e.commit.Offset, e.commit.Metadata, nil, ""
	}
	for k, e := range keys {
		if seen[k] {
			continue
		}
		if e.had {
			delete(keys, k) // the key is gone from the Store since: deleted, newest
			continue
		}
		offs = append(offs, loader.CommittedOffset{Group: group, Topic: loader.FullName(k.topic, kafkaNamespace), Partition: k.partition,
			Offset: e.commit.Offset, Metadata: e.commit.Metadata})
	}
	if len(keys) == 0 {
		delete(a.m, g)
	}
	return offs
}

func sameEntry(a, b loader.CommittedOffset) bool {
	return a.Offset == b.Offset && a.Metadata == b.Metadata && a.CommitTimestamp == b.CommitTimestamp && a.Origin == b.Origin
}
