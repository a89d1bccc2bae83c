package verdict

import (
	"slices"

	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// Status is the verdict on one group/topic/partition, per cluster and for the row
// (cli.md: JSON lower_snake, table UPPER).
type Status string

// The statuses of cli.md.
const (
	StatusOK                     Status = "ok"
	StatusStaleCache             Status = "stale_cache"
	StatusReplicationLag         Status = "replication_lag"
	StatusDiverged               Status = "diverged"
	StatusMissing                Status = "missing"
	StatusCoordinatorUnavailable Status = "coordinator_unavailable"
	StatusMisaligned             Status = "misaligned"
	StatusError                  Status = "error"
	// StatusUnloadable: KoP cannot load the row's offsets partition (a record it cannot
	// parse): after any load it serves nothing of the partition; no reload fixes it.
	StatusUnloadable Status = "unloadable"
	// StatusCacheAhead: KoP serves a newer offset than its loader would load (a
	// transactional commit whose marker the loader cannot see, a tombstone, compaction):
	// the cache is the better value and a reload would lose it.
	StatusCacheAhead Status = "cache_ahead"
	// StatusExpired: the persisted offset is past its expireTimestamp: KoP drops it from
	// its cache (every 10 minutes) and writes a tombstone; a reload would not keep it.
	StatusExpired Status = "expired"
	// StatusExpiring: the persisted offset expires within the warning window.
	StatusExpiring Status = "expiring"
	// StatusAhead: in a sync or kept deployment, this cluster's value is past the
	// translation of the group's newest own commit (made on another cluster): a consumer
	// moved here skips the messages between them.
	StatusAhead Status = "ahead"
	// StatusSyncLag: in a sync or kept deployment, this cluster's value is behind the
	// translation of the group's newest own commit for longer than the sync's grace
	// (DefaultSyncGrace): the tool is not following (not running, failing, or the keeper's
	// source gone); a consumer moved here re-reads.
	StatusSyncLag Status = "sync_lag"
	// StatusOverwritten: what KoP loads here is a write of the tool (a kept translation)
	// that landed after a newer commit of the same key: after any load KoP serves the older
	// value.
	StatusOverwritten Status = "overwritten"
)

// Statuses lists every status from the most to the least severe: the row status of a Drift
// is the first of its clusters' statuses in this order.
//
// Why this order:
//   - error, coordinator_unavailable: a value could not be read, so nothing else on the row
//     can be trusted;
//   - diverged: the offsets topics durably disagree; no waiting or reload fixes it;
//   - ahead: a consumer moved to this cluster skips messages it never read, and nothing
//     but the tool's next follow (or an operator) moves it back;
//   - misaligned: a number carried over from another cluster that denotes another message
//     here; a consumer given it would skip or re-read, and a reload would serve it;
//   - overwritten: the next load serves an older value than the key's newest commit (the
//     group re-reads); before cache_ahead, which it explains when KoP still serves the newer;
//   - unloadable: KoP cannot load the offsets partition at all; every group of it is lost
//     at the next load, and no reload helps until the record is gone;
//   - cache_ahead: the cache holds a newer offset than a load would bring: not a fault of
//     the cache, but a reload (or a bundle move) would lose it;
//   - stale_cache: KoP serves an older value (or none) than its loader would load;
//     `reload` fixes it;
//   - expired: the offset is past its expiry: KoP has dropped it, or will within minutes;
//   - sync_lag: behind the group's newest own commit past the grace: re-reads, and the tool
//     that should follow is not doing it;
//   - replication_lag: transient, the replicator is still delivering;
//   - missing: absent on one side, nothing explains it (often a group that only ever ran
//     on one cluster);
//   - expiring: fine now, expires within the warning window;
//   - ok.
var Statuses = []Status{
	StatusError, StatusCoordinatorUnavailable, StatusUnloadable, StatusDiverged, StatusAhead,
	StatusMisaligned, StatusOverwritten, StatusCacheAhead, StatusStaleCache, StatusExpired,
	StatusSyncLag, StatusReplicationLag, StatusMissing, StatusExpiring, StatusOK,
}

// Severity is the index of s in Statuses (0 is the most severe); unknown statuses rank first.
func (s Status) Severity() int {
	if i := slices.Index(Statuses, s); i >= 0 {
		return i
	}
	return -1
}

// ParseStatus returns the status named s (lower_snake or UPPER), ok false when unknown.
func ParseStatus(s string) (Status, bool) {
	for _, st := range Statuses {
		if string(st) == s || upper(string(st)) == s {
			return st, true
		}
	}
	return "", false
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// CacheState says what KoP's OffsetFetch answered for a group on one cluster.
type CacheState int

const (
	// CacheAnswered means KoP answered; CachedOffsets.Offset is the value, nil when it has none.
	CacheAnswered CacheState = iota
	// CacheNotChecked means the cached side was not asked (e.g. --persisted-only).
	CacheNotChecked
	// CacheCoordinatorUnavailable means KoP kept answering COORDINATOR_LOAD_IN_PROGRESS,
	// NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE for the whole retry window.
	CacheCoordinatorUnavailable
	// CacheError means the KoP listener could not be reached or answered with another error.
	CacheError
)

// CachedOffsets is what KoP serves on one cluster for one group/topic/partition.
type CachedOffsets struct {
	State  CacheState
	Offset *int64 // with CacheAnswered; nil: KoP has no committed offset (-1 on the wire)
}

// Inbound is the replication of one offsets partition from a peer cluster toward this
// cluster: the peer's replicator stats for its partition topic, keyed by this cluster.
type Inbound struct {
	Backlog   int64 // entries the peer has not yet replicated to this cluster
	Connected bool  // the peer's replicator toward this cluster is connected
}

// ClusterObservation is everything known about one row on one cluster.
type ClusterObservation struct {
	Cluster string
	// Unreachable is set when the persisted side (the offsets topic) of this cluster could
	// not be read: the cluster's cell is error, the others are classified without it.
	Unreachable bool
	// Persisted is the offset KoP's loader reads from the cluster's offsets topic (what a
	// load brings, unless LoadFailure); nil when absent.
	Persisted *int64
	// LoadFailure is set when KoP cannot load this row's offsets partition on this cluster.
	LoadFailure string
	// Pending is a transactional offset the topic holds whose COMMIT the loader cannot see;
	// nil when none.
	Pending *int64
	// ExpireAt is the persisted value's expireTimestamp in ms (0: none). Now (ms) enables
	// the expiry rules; ExpiryWarning (ms) is the window of expiring.
	ExpireAt, Now, ExpiryWarning int64
	Cached                       CachedOffsets
	// Inbound holds, per peer cluster, the replication of this row's offsets partition from
	// the peer toward this cluster; a peer without an entry has no replicator toward it (or
	// its stats could not be read), which counts as no backlog.
	Inbound map[string]Inbound
	// Translated is Persisted moved into this cluster's numbering of the data topic when
	// the commit was replicated from another cluster (package align): the first message
	// the group has not consumed there. nil when the value was written here or alignment
	// is unknown.
	Translated *int64
	// RefIn holds, per peer cluster, the peer's persisted value translated into this
	// cluster's numbering, where it counts in another's (a failed-over group: the target's
	// record written there, the source's own); the cross-cluster rules compare with it
	// instead of the raw number.
	RefIn map[string]int64
	// Follow is what the rules of a sync or kept deployment need (zero: not known).
	Follow FollowObservation
	// Newer is a newer commit of the key (by commit time) that the persisted value, a kept
	// translation that landed after it, hides from KoP's loader; nil: none.
	Newer *loader.Newer
}

// DriftInput is one row: a group/topic/partition on every cluster.
type DriftInput struct {
	Clusters []ClusterObservation
	// Source names the authoritative cluster ("" compares all clusters against each other,
	// the highest persisted offset being the reference).
	Source string
	// SyncGrace (ms) is how long a cluster may stay behind the group's newest own commit in
	// a sync or kept deployment (0: DefaultSyncGrace).
	SyncGrace int64
}

// Drift is the verdict on one row.
type Drift struct {
	Status   Status   // the most severe of Clusters (see Statuses)
	Clusters []Status // per cluster, in the order of the input's (a map cost every row an allocation)
	// Reference is the persisted offset the clusters were compared with (the source's, else
	// the highest), nil when no reachable cluster has one.
	Reference *int64
	// Home is the cluster of the group's newest own commit in a sync or kept deployment,
	// the value the other clusters follow ("" when those rules do not apply).
	Home string
}

// ClassifyDrift classifies one row. It is pure: every input is in in.
//
// Per cluster C, the first rule that applies:
//  1. error: C's offsets topic could not be read, or its KoP listener failed (CacheError).
//  2. coordinator_unavailable: KoP kept answering "loading" / "not coordinator".
//  3. unloadable: KoP cannot load C's offsets partition of the row.
//     3a. misaligned: the persisted value came from another cluster and names another message
//     on C (Translated differs): a consumer given it would skip or re-read messages. Before
//     the cache rules, because a reload would make KoP serve that number.
//     3b. overwritten: the persisted value is a tool's write that hides a newer commit.
//  4. cache_ahead: KoP answered a higher offset than its loader reads (or one where the
//     loader reads none).
//  5. expired: the persisted offset is past its expireTimestamp.
//  6. stale_cache: KoP answered a value (or none) that differs from C's own persisted value.
//     6a. In a sync or kept deployment (a tool's write on the row; followHome), C is judged
//     against the translation of the group's newest own commit (followStatus): ahead,
//     sync_lag, or ok; the newest own commit's cluster is then the reference of rule 7
//     when there is no source.
//  7. Across clusters (the reference is the source's persisted value with a source, else the
//     highest persisted value of the reachable clusters, translated into C's numbering where
//     RefIn has it; backlog is the inbound backlog of
//     this offsets partition toward C from the source, or from any peer without a source):
//     - absent on C while the reference exists: replication_lag with backlog, else missing;
//     - C behind the reference: replication_lag with backlog, else diverged;
//     - C ahead of the source: diverged (replication only ever brings the source's values);
//     - C present while the source has none: ok on C; the source itself is then classified
//     missing (or replication_lag when C's replicator toward it has a backlog).
//  9. expiring: the persisted offset expires within ExpiryWarning.
//  10. ok.
//
// Rule 6 comes before rule 7 so that the user's case, a cache behind its own topic, is named
// for what fixes it (reload), even if replication is also behind.
func ClassifyDrift(in DriftInput) Drift {
	d := Drift{Clusters: make([]Status, len(in.Clusters))}
	var home *ClusterObservation
	if h := followHome(in.Clusters); h >= 0 {
		home, d.Home = &in.Clusters[h], in.Clusters[h].Cluster
		if in.Source == "" {
			in.Source = d.Home // the value every cluster follows
		}
	}
	if in.SyncGrace <= 0 {
		in.SyncGrace = DefaultSyncGrace.Milliseconds()
	}

	// The reference: the source's persisted value, else the highest reachable one.
	var refCluster string
	var sourceObs *ClusterObservation
	for i := range in.Clusters {
		c := &in.Clusters[i]
		if in.Source != "" && c.Cluster == in.Source {
			sourceObs = c
		}
	}
	switch {
	case sourceObs != nil:
		if !sourceObs.Unreachable && sourceObs.Persisted != nil {
			d.Reference, refCluster = new(*sourceObs.Persisted), sourceObs.Cluster
		}
	default:
		for i := range in.Clusters {
			c := &in.Clusters[i]
			if c.Unreachable || c.Persisted == nil {
				continue
			}
			if d.Reference == nil || *c.Persisted > *d.Reference {
				d.Reference, refCluster = new(*c.Persisted), c.Cluster
			}
		}
	}
	reachable := 0
	for _, c := range in.Clusters {
		if !c.Unreachable {
			reachable++
		}
	}

	for i, c := range in.Clusters {
		d.Clusters[i] = classifyCluster(c, in, d.Reference, refCluster, sourceObs, reachable, home)
	}
	d.Status = StatusOK
	for _, st := range d.Clusters {
		if st.Severity() < d.Status.Severity() {
			d.Status = st
		}
	}
	return d
}

func classifyCluster(c ClusterObservation, in DriftInput, ref *int64, refCluster string, source *ClusterObservation, reachable int, home *ClusterObservation) Status {
	switch {
	case c.Unreachable || c.Cached.State == CacheError:
		return StatusError
	case c.Cached.State == CacheCoordinatorUnavailable:
		return StatusCoordinatorUnavailable
	case c.LoadFailure != "":
		return StatusUnloadable
	case c.Translated != nil && c.Persisted != nil && *c.Translated != *c.Persisted:
		return StatusMisaligned
	case c.Newer != nil && c.Persisted != nil:
		return StatusOverwritten
	case c.Cached.State == CacheAnswered && c.Cached.Offset != nil && (c.Persisted == nil || *c.Cached.Offset > *c.Persisted):
		return StatusCacheAhead
	case c.Persisted != nil && c.Now > 0 && c.ExpireAt > 0 && c.ExpireAt <= c.Now:
		return StatusExpired
	case c.Cached.State == CacheAnswered && !equalPtr(c.Cached.Offset, c.Persisted):
		return StatusStaleCache
	}
	st, followed := StatusOK, false
	if home != nil && c.Persisted != nil {
		st, followed = followStatus(c, home, in.SyncGrace)
	}
	if !followed {
		if v, ok := c.RefIn[refCluster]; ok && ref != nil {
			ref = &v // the reference in this cluster's numbering
		}
		st = classifyAcross(c, in, ref, source, reachable)
	}
	if st == StatusOK && c.Persisted != nil && c.Now > 0 && c.ExpireAt > 0 && c.ExpireAt-c.Now <= c.ExpiryWarning {
		return StatusExpiring
	}
	return st
}

func classifyAcross(c ClusterObservation, in DriftInput, ref *int64, source *ClusterObservation, reachable int) Status {
	if reachable < 2 {
		return StatusOK
	}
	backlog := inboundBacklog(c, in.Source)
	lagOr := func(otherwise Status) Status {
		if backlog > 0 {
			return StatusReplicationLag
		}
		return otherwise
	}
	if ref == nil {
		// No reference value: with a source, the source lacks it (or is unreachable).
		if source != nil && c.Cluster == source.Cluster && c.Persisted == nil && !c.Unreachable {
			for _, o := range in.Clusters {
				if o.Cluster != c.Cluster && !o.Unreachable && o.Persisted != nil {
					// Present elsewhere, absent on the source.
					if inboundBacklog(c, "") > 0 {
						return StatusReplicationLag
					}
					return StatusMissing
				}
			}
		}
		return StatusOK
	}
	switch {
	case c.Persisted == nil:
		return lagOr(StatusMissing)
	case *c.Persisted < *ref:
		return lagOr(StatusDiverged)
	case *c.Persisted > *ref:
		return StatusDiverged // only possible with a source
	}
	return StatusOK
}

// inboundBacklog is the backlog toward c from source, or from every peer when source is ""
// (or is c itself).
func inboundBacklog(c ClusterObservation, source string) int64 {
	if source != "" && source != c.Cluster {
		return c.Inbound[source].Backlog
	}
	var n int64
	for _, in := range c.Inbound {
		n += in.Backlog
	}
	return n
}

func equalPtr(a, b *int64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}
