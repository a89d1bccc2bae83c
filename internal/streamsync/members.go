package streamsync

import (
	"sync"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/kop"
)

// membership is what DescribeGroups last said of each group's members on each cluster,
// kept until the commit stream says it may have changed (a group record: a rebalance ended,
// the group went empty or was deleted), a commit to the group failed, or ttl passed. A
// commit from a stable group needs no DescribeGroups: KoP writes a group record before the
// first commit of every new generation, so a consumer that joins on another cluster is seen
// there before its commits are.
type membership struct {
	ttl time.Duration

	mu  sync.Mutex
	m   map[string]map[string]memberEntry // cluster -> group
	seq uint64                            // forgets so far
	// forgot is the seq of each group's last forget on a cluster: an answer asked for
	// before it is older than what the stream said since, and is not kept.
	forgot map[string]map[string]uint64
	// forgotAll is the seq of each group's last forget on every cluster.
	forgotAll map[string]uint64
	// cleared is the seq of the last clear: no answer asked for before it is kept.
	cleared uint64
}

type memberEntry struct {
	n  int
	at time.Time
}

func newMembership(ttl time.Duration) *membership {
	return &membership{ttl: ttl, m: map[string]map[string]memberEntry{}, forgot: map[string]map[string]uint64{}, forgotAll: map[string]uint64{}}
}

// ask returns the sequence number to pass to set for an answer asked for now.
func (ms *membership) ask() uint64 {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.seq
}

// lookup returns the members of group on cluster, false when not known or too old.
func (ms *membership) lookup(cluster, group string, now time.Time) (int, bool) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	e, ok := ms.m[cluster][group]
	if !ok || now.Sub(e.at) > ms.ttl {
		return 0, false
	}
	return e.n, true
}

// set keeps what DescribeGroups answered on cluster (asked at seq), except for the groups
// forgotten since and those it answered with an error.
func (ms *membership) set(cluster string, acts map[string]kop.GroupActivity, seq uint64, now time.Time) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if seq < ms.cleared {
		return
	}
	m := ms.m[cluster]
	if m == nil {
		m = map[string]memberEntry{}
		ms.m[cluster] = m
	}
	for g, a := range acts {
		if a.Err != nil || ms.forgot[cluster][g] > seq || ms.forgotAll[g] > seq {
			continue
		}
		m[g] = memberEntry{n: a.Members, at: now}
	}
}

// forget drops what is known of groups on cluster ("": on every cluster).
func (ms *membership) forget(cluster string, groups []string) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.seq++
	for c, m := range ms.m {
		if cluster != "" && c != cluster {
			continue
		}
		for _, g := range groups {
			delete(m, g)
		}
	}
	f := ms.forgotAll
	if cluster != "" {
		if f = ms.forgot[cluster]; f == nil {
			f = map[string]uint64{}
			ms.forgot[cluster] = f
		}
	}
	for _, g := range groups {
		f[g] = ms.seq
	}
}

// clear forgets everything (a resync asks every group again).
func (ms *membership) clear() {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.seq++
	ms.cleared = ms.seq
	ms.m = map[string]map[string]memberEntry{}
	ms.forgot = map[string]map[string]uint64{}
	ms.forgotAll = map[string]uint64{}
}
