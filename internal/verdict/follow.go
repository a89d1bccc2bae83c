package verdict

import (
	"fmt"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/output"
)

// DefaultSyncGrace is how long a cluster may stay behind the translation of the group's
// newest own commit before check calls it sync_lag. docs/sync.md measures the sync at tens
// of milliseconds per commit, 8 s after a target cut off for a minute comes back, and a few
// seconds at 10,000 groups on 2 cores; watch --keep-translations keeps once per --interval
// (30 s by default). Two minutes is past all of them.
const DefaultSyncGrace = 2 * time.Minute

// Writer says who wrote a cluster's persisted value of a row.
type Writer uint8

const (
	// WriterUnknown is not told (no alignment, or not asked): the follow rules skip the cell.
	WriterUnknown Writer = iota
	// WriterGroup is the group's own commit on this cluster, in its numbering (a client's).
	WriterGroup
	// WriterReplica is replicated from another cluster (loader: Origin set).
	WriterReplica
	// WriterSync is the tool's sync commit (watch --sync; its mark in the commit metadata).
	WriterSync
	// WriterKeeper is a translation watch --keep-translations kept, still the key's last word.
	WriterKeeper
)

// tool reports whether w is one of the tool's writes.
func (w Writer) tool() bool { return w == WriterSync || w == WriterKeeper }

// FollowObservation is what the follow rules need of one cluster's value: who wrote it,
// when, what it translates, and the peers' own commits in this cluster's numbering.
type FollowObservation struct {
	Writer Writer
	// CommitAt is the persisted value's commit timestamp (ms; a kept translation carries
	// its source commit's).
	CommitAt int64
	// From and Source name the commit a tool's write translates (the sync mark's from and
	// source, the kept translation's From and Source).
	From   string
	Source int64
	// In holds, per peer whose value is the group's own commit there, that commit translated
	// into this cluster's numbering as the tool would follow it (sync's floor rule,
	// offsetsync.TargetFloor; the keeper's for a kept translation): what this cluster should
	// hold when that commit is the group's newest.
	In map[string]int64
}

// followHome is the index of the row's newest own commit, the value every other cluster
// follows in a sync or kept deployment; -1 when the rules do not apply: no tool's write on
// the row (another deployment, or nothing synced yet), no own commit, or two own commits of
// the same millisecond (two writers: sync syncs neither).
func followHome(obs []ClusterObservation) int {
	home, tool, tie := -1, false, false
	for i := range obs {
		c := &obs[i]
		if c.Unreachable || c.Persisted == nil {
			continue
		}
		tool = tool || c.Follow.Writer.tool()
		if c.Follow.Writer != WriterGroup {
			continue
		}
		switch {
		case home < 0 || c.Follow.CommitAt > obs[home].Follow.CommitAt:
			home, tie = i, false
		case c.Follow.CommitAt == obs[home].Follow.CommitAt:
			tie = true
		}
	}
	if !tool || tie {
		return -1
	}
	return home
}

// followStatus judges cell c against the home's newest own commit; ok false when the follow
// rules do not judge c (the cross-cluster rules then do, with the home as the reference).
//   - The home itself is the reference: ok.
//   - A value replicated here, or one whose translation of the home's commit is unknown, is
//     left to the other rules (misaligned judges a replicated number).
//   - A tool's write newer than the home's commit that translates another commit followed
//     a commit the check read too early (the home committed after it was read): ok.
//   - Above the translation: ahead (a consumer moved here skips the difference).
//   - Below it for longer than grace: replication_lag with a backlog from the home toward
//     here, else sync_lag; within grace: ok (the sync's latency).
func followStatus(c ClusterObservation, home *ClusterObservation, grace int64) (Status, bool) {
	if c.Cluster == home.Cluster {
		return StatusOK, true
	}
	f := c.Follow
	want, known := f.In[home.Cluster]
	if f.Writer == WriterUnknown || f.Writer == WriterReplica || !known {
		return "", false
	}
	if f.Writer.tool() && f.CommitAt > home.Follow.CommitAt && (f.From != home.Cluster || f.Source != *home.Persisted) {
		return StatusOK, true
	}
	switch p := *c.Persisted; {
	case p > want:
		return StatusAhead, true
	case p < want && c.Now-home.Follow.CommitAt > grace:
		if c.Inbound[home.Cluster].Backlog > 0 {
			return StatusReplicationLag, true
		}
		return StatusSyncLag, true
	}
	return StatusOK, true
}

// homeOf is the observation of cluster home ("" or absent: nil).
func homeOf(obs []ClusterObservation, home string) *ClusterObservation {
	if home == "" {
		return nil
	}
	for i := range obs {
		if obs[i].Cluster == home {
			return &obs[i]
		}
	}
	return nil
}

// followOf is the cell's Follow: the home's commit and its translation here, on every
// cluster but the home where it is known.
func followOf(ob ClusterObservation, home *ClusterObservation) *Follow {
	if home == nil || ob.Cluster == home.Cluster {
		return nil
	}
	t, ok := ob.Follow.In[home.Cluster]
	if !ok {
		return nil
	}
	return &Follow{Cluster: home.Cluster, Offset: *home.Persisted, CommitTimestamp: output.NewTime(time.UnixMilli(home.Follow.CommitAt)), Translated: t}
}

// followDetail says what ahead, sync_lag and overwritten mean for this cell and what to do.
func followDetail(r *Row, c *Cell, ob ClusterObservation, home *ClusterObservation) string {
	if c.Status == StatusOverwritten {
		return overwrittenDetail(c, ob)
	}
	f := c.Follow
	if f == nil || ob.Persisted == nil {
		return ""
	}
	p, age := *ob.Persisted, time.Duration(ob.Now-home.Follow.CommitAt)*time.Millisecond
	newest := fmt.Sprintf("the translation of the group's newest own commit (%s %d, %s ago)", f.Cluster, f.Offset, age.Round(time.Second))
	if c.Status == StatusAhead {
		return fmt.Sprintf("%s holds %d, past %d, %s: a consumer moved to %s would skip %d messages it never read; the tool that follows (watch --sync, or watch --keep-translations) did not move it back: run it (it follows within seconds), or reset the group on %s to %d (kafka-consumer-groups --reset-offsets --to-offset %d --topic %s:%d); a reload does not help",
			c.Cluster, p, f.Translated, newest, c.Cluster, p-f.Translated, c.Cluster, f.Translated, f.Translated, r.Topic, r.Partition)
	}
	return fmt.Sprintf("%s holds %d, behind %d, %s, for longer than the sync's grace: a consumer moved to %s would re-read up to %d messages; is watch --sync (or --keep-translations) running and holding the writer lease? its log and kop_offsets_sync_commits_total say (kept deployment: also the replication of the offsets topic, kop-offsets doctor); a reload does not help",
		c.Cluster, p, f.Translated, newest, c.Cluster, f.Translated-p)
}

// overwrittenDetail: the newer commit a tool's write hides, and what brings it back.
func overwrittenDetail(c *Cell, ob ClusterObservation) string {
	n := ob.Newer
	what := fmt.Sprintf("the group's own commit %d", n.Offset)
	fix := "watch --keep-translations writes it back as it was (the group's own number)"
	if n.Origin != "" {
		what = fmt.Sprintf("%s's commit %d (replicated)", n.Origin, n.Offset)
		fix = fmt.Sprintf("watch --keep-translations keeps its translation while %s answers (with %s gone: kop-offsets failover --source %s --target %s --source-gone lands on it)", n.Origin, n.Origin, n.Origin, c.Cluster)
	}
	fix += "; a reload loads the older value, do not reload"
	at := n.CommitTimestamp.Time().UTC().Format(time.RFC3339)
	return fmt.Sprintf("KoP loads %d here, a kept translation that landed after %s committed at %s: after any load the group re-reads from the older value; %s", *ob.Persisted, what, at, fix)
}
