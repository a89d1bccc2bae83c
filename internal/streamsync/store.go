package streamsync

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
	"github.com/kop-offsets/kop-offsets/internal/offsetsync"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// Store is one cluster's offsets topic as the engine reads it: a loader.Replayer per offsets
// partition, fed by the cluster's followers (watch's tail goroutines) message by message, so a
// group's newest commit is known the moment it is read, not at the next watch cycle. It is
// the engine's own copy (watch's exporter keeps its view between cycles and may not be fed
// from another goroutine): about a hundred bytes per live key. Safe for concurrent use.
type Store struct {
	cluster string
	events  Events

	mu    sync.Mutex
	parts []*storePart
	// replicating: when a commit of the tool's last arrived here by replication, by group,
	// read live (not in a replay: that is the history of an earlier deployment).
	replicating map[string]time.Time
}

// replicatingFor is how long a commit of the tool's that arrived by replication keeps its
// group from being synced: the offsets topic replicated then, and may still. Right after
// sync setup, replicators draining for a second still bring such commits (seen on the lab:
// the tool's first commit, 0.1 s after the watch started): 30 s later they are gone.
const replicatingFor = 30 * time.Second

// Events is what a Store tells the engine it feeds (the sync Engine, or the keeper of
// package streamkeep).
type Events interface {
	// Dirty: groups whose offsets or records changed; members: group records were read
	// (membership may have changed).
	Dirty(cluster string, groups []string, members bool)
	// Wake: a partition caught up; the engine may be ready now.
	Wake()
	// Received: n offsets of group's own commits made on cluster (neither the tool's,
	// marked, nor arrived by replication) were read live: what a sync of the group carries.
	Received(cluster, group string, n int)
}

// storePart is one offsets partition: next replays (after a start or a reader failure),
// rep is the live state once next has caught up.
type storePart struct {
	next   *loader.Replayer
	rep    *loader.Replayer
	caught bool
	view   *loader.PersistedOffsets // of rep, nil after a feed (rebuilt on the next read)
}

// NewStore is a Store of cluster's offsets topic telling ev what it reads.
func NewStore(cluster string, ev Events) *Store {
	return &Store{cluster: cluster, events: ev, replicating: map[string]time.Time{}}
}

// SetPartitions sets the partition count of the offsets topic (before the first Begin).
func (s *Store) SetPartitions(n int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if int(n) == len(s.parts) {
		return
	}
	s.parts = make([]*storePart, n)
	for i := range s.parts {
		s.parts[i] = &storePart{}
	}
}

// part returns partition p (nil when out of range) with s.mu held.
func (s *Store) part(p int32) *storePart {
	if p < 0 || int(p) >= len(s.parts) {
		return nil
	}
	return s.parts[p]
}

// Begin starts a replay of partition p from its earliest message. The state read so far
// stays in use until the replay has caught up.
func (s *Store) Begin(p int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sp := s.part(p); sp != nil {
		sp.next = loader.NewReplayer(p, loader.OrderingKoP)
	}
}

// Replayed feeds a message of p's replay (read before the catch-up).
func (s *Store) Replayed(p int32, m loader.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sp := s.part(p); sp != nil && sp.next != nil {
		_ = sp.next.ApplyMessage(m) // decode errors are counted, never fatal
	}
}

// CaughtUp makes p's replay the live state: every group of it is synced again (what was
// committed while it was not read is in it).
func (s *Store) CaughtUp(p int32) {
	s.mu.Lock()
	sp := s.part(p)
	if sp == nil || sp.next == nil {
		s.mu.Unlock()
		return
	}
	sp.rep, sp.next, sp.caught, sp.view = sp.next, nil, true, nil
	groups := slices.Collect(sp.viewOf().GroupNames())
	s.mu.Unlock()
	s.events.Dirty(s.cluster, groups, true)
	s.events.Wake()
}

// Failed marks p unread (its reader failed): its groups are neither source nor target on
// this cluster until a new replay catches up.
func (s *Store) Failed(p int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sp := s.part(p); sp != nil {
		sp.caught = false
	}
}

// Live feeds a message read after the catch-up, recs its records (offsetlog.Decode), and
// tells the engine which groups it touched: the groups of the group's own commits,
// tombstones and group records, and how many of their own commits it read. The tool's own
// commits (marked) landing on a target change no decision and wake nothing.
func (s *Store) Live(p int32, m pulsarx.TailMessage, recs []offsetlog.Record) {
	s.mu.Lock()
	sp := s.part(p)
	if sp == nil || sp.rep == nil {
		s.mu.Unlock()
		return
	}
	_ = sp.rep.ApplyMessage(m.Message)
	sp.view = nil
	var groups []string
	var own []int // by groups' index: the group's own commits made here
	members := false
	for _, r := range recs {
		if r.Group == "" {
			continue
		}
		mine := false
		switch r.Kind {
		case offsetlog.KindGroupMetadata, offsetlog.KindGroupTombstone:
			members = true
		case offsetlog.KindOffsetCommit:
			marked := false
			if r.Metadata != nil {
				_, _, marked = offsetsync.ParseMark(*r.Metadata)
			}
			switch {
			case marked && m.ReplicatedFrom != "":
				s.replicating[strings.Clone(r.Group)] = time.Now()
			case marked:
				continue
			}
			mine = !marked && m.ReplicatedFrom == ""
		}
		if len(groups) == 0 || groups[len(groups)-1] != r.Group {
			groups = append(groups, strings.Clone(r.Group)) // kept by the queue
			own = append(own, 0)
		}
		if mine {
			own[len(own)-1]++
		}
	}
	s.mu.Unlock()
	if len(groups) > 0 {
		s.events.Dirty(s.cluster, groups, members)
	}
	for i, n := range own {
		if n > 0 {
			s.events.Received(s.cluster, groups[i], n)
		}
	}
}

// Replicating reports whether a commit of the tool's for group arrived here by replication,
// read live, within replicatingFor of now.
func (s *Store) Replicating(group string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.replicating[group]
	if ok && now.Sub(at) > replicatingFor {
		delete(s.replicating, group)
		return false
	}
	return ok
}

// viewOf returns the view of sp's live state, built once per feed (with s.mu held).
func (sp *storePart) viewOf() *loader.PersistedOffsets {
	if sp.view == nil {
		sp.view = sp.rep.View()
	}
	return sp.view
}

// Offsets returns group's loaded offsets, and false when its partition has not been read
// (the cluster is then neither source nor target of the group).
func (s *Store) Offsets(group string) ([]loader.CommittedOffset, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.parts) == 0 {
		return nil, false
	}
	sp := s.parts[loader.PartitionFor(group, int32(len(s.parts)))]
	if !sp.caught || sp.rep == nil {
		return nil, false
	}
	return sp.viewOf().GroupOffsets(group), true
}

// Groups returns every group the partitions read so far hold.
func (s *Store) Groups() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, sp := range s.parts {
		if sp.caught && sp.rep != nil {
			out = slices.AppendSeq(out, sp.viewOf().GroupNames())
		}
	}
	return out
}

// Complete reports whether every partition has caught up (false before SetPartitions).
func (s *Store) Complete() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.parts) == 0 {
		return false
	}
	for _, sp := range s.parts {
		if !sp.caught {
			return false
		}
	}
	return true
}
