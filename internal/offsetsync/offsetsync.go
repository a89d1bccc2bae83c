// Package offsetsync is the engine of sync mode: for one group, given what every synced
// cluster holds of it this cycle (View), it decides the group's source and commits the
// source's offsets, translated by message identity (align.Pool), through KoP's OffsetCommit
// on every other cluster where the group has no members, as MirrorMaker 2's checkpoints do
// with sync.group.offsets.enabled. KoP updates its cache on every OffsetCommit, so the
// translated offset is served at once: no unload. It does no I/O of its own beyond its
// interfaces (Committer, the Pool's sources).
//
// In this mode the offsets topic is not replicated between the synced clusters (a commit
// sent to one KoP would otherwise replicate back and be loaded by the other in the wrong
// numbering), so sync is the only path offsets take, and every commit a cluster holds was
// written there (Origin ""). The rules, and why:
//
//   - The tool's own commits carry a Mark in their metadata and are never a source of sync:
//     syncing them back would make each cluster's copy of an offset chase the other's. The
//     mark lives in the commit itself, so a restarted tool knows what it synced.
//   - The group's source is the one cluster where it has members: they commit there, the
//     others only follow. Members on two clusters at once is split brain: two groups commit
//     the same offsets and neither is the truth, so nothing is synced and it is reported.
//   - With no members anywhere, the source is the cluster holding the newest own (unmarked)
//     commit, by commit time: the last place the group ran. Own commits on two clusters
//     within Window of each other are two writers (split brain): nothing is synced.
//   - A cluster whose members are unknown (no View, or DescribeGroups did not answer) is
//     neither written nor chosen: a commit there could land on a live group, whose members
//     own its offsets. When no known cluster has members, the unknown one could be the
//     source, so nothing is synced.
//   - A target with members is left: its members commit there, and a commit from outside
//     the group would be refused by KoP or overwrite theirs. (With one live cluster, the
//     source, this is a guard: members on two clusters are split brain.)
//   - On every other target, each key of the source's own offsets is translated into the
//     target's numbering, floored on the group's own position there (TargetFloor): a target's
//     own newer commit is never moved back, and after a failback the messages the target
//     wrote alone are not read again (docs/failover.md); but the newest intent wins: a
//     source moved back (a reset) after the group left the target moves the target back
//     too, exactly to the reset point, and the tool's own commit there is never a floor. A key is committed only when its translation differs from what the target holds
//     through its KoP (a replicated or kept entry of the same number is committed again:
//     KoP serves only what it loaded or was sent), all
//     of a group's keys in one OffsetCommit per target (the latest state: coalesced, however
//     often the group committed since the last cycle). A key that cannot be translated is
//     left (Errors); the others go on. A key whose copies are still being read (a read that
//     outlasted the step's wait: align.Pool.WarmFor) waits (Reading): never a guess.
//   - A commit a cluster holds by replication (Origin set) is history from before sync
//     setup: it counts in another cluster's numbering, so it is neither a source nor a
//     writer; as a target's current offset, only the group's own commit below it is a floor
//     (Floor). The tool's own commits replicated during an earlier replication phase (sync
//     setup --undo, then setup again) are history too. But the tool's own commit coming back
//     by replication while the cluster is followed (View.Replicating) proves the offsets
//     topic replicates now: its next load would take a number of the wrong numbering.
//     Nothing of such a group is synced (Replicated); the startup check refuses this set-up.
//   - Deletion follows the source: a key a target holds as the tool's commit from the source
//     that the source no longer holds at all is deleted there (OffsetDelete). A key the
//     target committed itself is never deleted: it is the group's own. When no cluster
//     holds an own commit of the group any more, the source is the cluster the marks name.
//     When the source holds nothing of the group and the target holds only what the tool
//     synced from it, the group itself is deleted there (DeleteGroups): KoP 3.1 answers
//     OffsetDelete UNSUPPORTED_VERSION but deletes groups. Keys it cannot delete are left to
//     KoP's offset retention on the target (Undeleted), not retried every cycle.
package offsetsync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
)

// Committer commits and deletes a group's offsets on one cluster through KoP's Kafka front
// door (*kop.Committer).
type Committer interface {
	Commit(ctx context.Context, group string, cs []kop.SyncCommit) error
	Delete(ctx context.Context, group string, tps map[string][]int32) error
	DeleteGroup(ctx context.Context, group string) error
}

var _ Committer = kop.Committer{}

// Cluster is one synced cluster.
type Cluster struct {
	Name string
	// KafkaNamespace turns the stored topic names into the Kafka names every cluster knows.
	KafkaNamespace string
	Committer      Committer
}

// View is one group on one cluster this cycle: its persisted offsets as the loader replays
// that cluster's offsets topic (the latest commit per key), and its live members as KoP's
// DescribeGroups says (MembersKnown false: it did not answer).
type View struct {
	Offsets      []loader.CommittedOffset
	Members      int
	MembersKnown bool
	// Replicating: a commit of the tool's arrived on this cluster by replication while the
	// cluster was followed (not in its replay, which holds the history of earlier
	// deployments): the offsets topic replicates now.
	Replicating bool
}

// Syncer syncs groups between Clusters. Not safe for concurrent use (the Pool is not); the
// Plans it makes are.
type Syncer struct {
	Clusters []Cluster
	// Pool translates, and keeps what it read between cycles.
	Pool *align.Pool
	// Window: own commits of the group on two clusters at most this far apart are two
	// writers (split brain). 0: only commits of the same millisecond.
	Window time.Duration
	// Now is the clock (nil: time.Now); a Pool without a clock of its own takes it.
	Now func() time.Time
}

// Result is what Sync did for one group.
type Result struct {
	Group string
	// Source is the cluster the group was synced from ("" when nothing was synced).
	Source string
	Synced []Synced
	// Deleted are the keys deleted on a target because the source no longer holds them.
	Deleted []Deleted
	// Undeleted are keys the source no longer holds that the target's KoP cannot delete
	// (no OffsetDelete): they stay until KoP's offset retention expires them there.
	Undeleted []Deleted
	Left      []Left
	// Reading are keys whose translation waits for a read of the copies that is still
	// running (align.ErrReading): not an error, synced once the read ends.
	Reading []Left
	// SplitBrain, when set, says why nothing was synced: the group is live or committing on
	// two clusters at once.
	SplitBrain string
	// Replicated, when set, says why nothing was synced: a cluster holds a commit of the
	// group that replication brought.
	Replicated string
	// Errors (*ClusterError) name the cluster, group, topic and partition they are about.
	Errors []error
	// Committed are the commits each target acknowledged (Apply), by cluster: what its
	// offsets topic will show once read back.
	Committed map[string][]kop.SyncCommit `json:"-"`
}

// ClusterError is a failure on one target cluster.
type ClusterError struct {
	Cluster string
	Err     error
}

func (e *ClusterError) Error() string { return "cluster " + e.Cluster + ": " + e.Err.Error() }
func (e *ClusterError) Unwrap() error { return e.Err }

// Synced is one offset committed on a target.
type Synced struct {
	Cluster   string // the target
	Topic     string // Kafka short name
	Partition int32
	Source    int64 // the source's commit
	// SourceAt is the source commit's timestamp: what the latency of a sync counts from.
	SourceAt   offsetlog.Millis
	Translated int64 // what was committed on Cluster
	// Behind: Cluster did not hold every message the group consumed yet (replication of the
	// data behind); the next cycles raise the commit as they arrive.
	Behind bool
}

// Deleted is one key deleted on a target.
type Deleted struct {
	Cluster   string
	Topic     string
	Partition int32
}

// Left is a cluster (Topic "", Partition -1) or a key sync did not write, and why.
type Left struct {
	Cluster   string
	Topic     string
	Partition int32
	Why       string
}

// key is a topic partition by its Kafka short name.
type key struct {
	topic     string
	partition int32
}

func compareKeys(a, b key) int {
	return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
}

// entry is a cluster's latest commit of one key.
type entry struct {
	co     loader.CommittedOffset
	mark   Mark
	marked bool // the tool's own commit
	// foreign: not the group's own commit here (replicated from another cluster, or a
	// translation watch --keep-translations kept): never a source, never the last writer.
	foreign bool
	orig    string // the metadata without the mark
}

// Sync syncs group once from its source to every other cluster, given views, the group on
// each cluster by name: Plan, then Apply.
func (s *Syncer) Sync(ctx context.Context, group string, views map[string]View) Result {
	return s.Plan(ctx, group, views).Apply(ctx)
}

// Plan is one group's sync decided and translated, not sent yet. Syncer.Plan makes plans one
// at a time (the Pool is not safe for concurrent use); the plans of different groups may be
// applied concurrently: each sends one OffsetCommit per target, and at 1,000 groups changing
// every second the round trips, not the translations, are the cost.
type Plan struct {
	res Result
	ops []op
}

// op is what a Plan sends to one target.
type op struct {
	c       Cluster
	commits []kop.SyncCommit
	synced  []Synced
	tps     map[string][]int32 // to delete (OffsetDelete)
	gone    []Deleted
	// group: delete the group itself (DeleteGroups) rather than tps.
	group bool
}

// Plan decides group's sync and translates it; Apply sends it.
func (s *Syncer) Plan(ctx context.Context, group string, views map[string]View) *Plan {
	p := &Plan{res: Result{Group: group}}
	res := &p.res
	if s.Pool != nil && s.Pool.Now == nil && s.Now != nil {
		s.Pool.Now = s.Now
	}
	idx := map[string]map[key]entry{}
	for _, c := range s.Clusters {
		if v, ok := views[c.Name]; ok {
			idx[c.Name] = index(v.Offsets, c.KafkaNamespace)
		}
	}
	if why := replicated(views); why != "" {
		res.Replicated = why
		return p
	}
	src := s.source(views, idx, res)
	if src == "" {
		return p
	}
	res.Source = src
	for _, c := range s.Clusters {
		v, ok := views[c.Name]
		switch {
		case c.Name == src || !ok || !v.MembersKnown:
			continue // the source, or left by source()
		case v.Members > 0:
			res.Left = append(res.Left, Left{Cluster: c.Name, Partition: -1, Why: fmt.Sprintf("live on %s: its members commit there", c.Name)})
			continue
		}
		if o := s.planTo(ctx, group, src, idx[src], c, idx[c.Name], res); o != nil {
			p.ops = append(p.ops, *o)
		}
	}
	return p
}

// Apply sends p, target after target, and returns what the group's sync did. Plans of
// different groups may be applied concurrently; one plan is applied once.
func (p *Plan) Apply(ctx context.Context) Result {
	res := &p.res
	for _, o := range p.ops {
		if len(o.commits) > 0 {
			if err := o.c.Committer.Commit(ctx, res.Group, o.commits); err != nil {
				res.Errors = append(res.Errors, &ClusterError{Cluster: o.c.Name, Err: err})
			} else {
				res.Synced = append(res.Synced, o.synced...)
				if res.Committed == nil {
					res.Committed = map[string][]kop.SyncCommit{}
				}
				res.Committed[o.c.Name] = o.commits
			}
		}
		if len(o.gone) > 0 {
			applyDelete(ctx, res, o)
		}
	}
	p.ops = nil
	return *res
}

// Sends reports whether Apply has anything to send.
func (p *Plan) Sends() bool { return len(p.ops) > 0 }

// replicated says which cluster received a commit of the tool's by replication while it was
// followed (View.Replicating), "" when none did. One in the replay is history: a sync
// deployment, undone (sync setup --undo: the offsets topic replicated again, and carried the
// tool's commits to the other cluster), then set up again; it is a foreign entry like any
// replicated commit (never a source, never a writer).
func replicated(views map[string]View) string {
	for _, name := range slices.Sorted(maps.Keys(views)) {
		if !views[name].Replicating {
			continue
		}
		for _, co := range views[name].Offsets {
			if _, _, marked := ParseMark(co.Metadata); marked && co.Origin != "" {
				return fmt.Sprintf("%s holds the tool's commit replicated back from %s (%s[%d] at %d): the offsets topic replicates between synced clusters, nothing synced",
					name, co.Origin, co.Topic, co.Partition, co.Offset)
			}
		}
		return fmt.Sprintf("%s received the tool's commits by replication while followed: the offsets topic replicates between synced clusters, nothing synced", name)
	}
	return ""
}

// index is offsets by key, their marks read.
func index(offsets []loader.CommittedOffset, kafkaNamespace string) map[key]entry {
	out := make(map[key]entry, len(offsets))
	for _, co := range offsets {
		m, orig, marked := ParseMark(co.Metadata)
		out[key{loader.ShortName(co.Topic, kafkaNamespace), co.Partition}] = entry{co: co, mark: m, marked: marked, orig: orig, foreign: foreign(co)}
	}
	return out
}

// foreign reports whether co is not the group's own commit on the cluster read: replicated
// from another cluster, or a kept translation that is still the key's last word. A commit that
// came after a kept translation (the group's own, a failover's record, the tool's sync
// commit) carries the kept one as history (Kept.Current false) and is not foreign: counting it
// foreign re-sent the same commit every cycle after a failover and never synced the group's
// own commits from the cluster it failed over to (issue 51).
func foreign(co loader.CommittedOffset) bool {
	return co.Origin != "" || (co.Kept != nil && co.Kept.Current)
}

// planTo translates the source's own offsets for target c (one Commit), and finds there what
// the source no longer holds (one Delete); nil when c needs neither.
func (s *Syncer) planTo(ctx context.Context, group, src string, from map[key]entry, c Cluster, to map[key]entry, res *Result) *op {
	o := &op{c: c}
	for _, k := range slices.SortedFunc(maps.Keys(from), compareKeys) {
		e := from[k]
		if e.marked || e.foreign {
			continue // the tool's own commit on the source (never synced back), or not the group's
		}
		cur, has := to[k]
		var floor int64
		translate := s.Pool.Translate
		if has {
			var conditional bool
			if floor, conditional = TargetFloor(cur.co, e.co.CommitTimestamp); conditional {
				translate = s.Pool.TranslateFloored // the floor holds unless the source was moved back
			}
		}
		t, err := translate(ctx, src, c.Name, k.topic, k.partition, e.co.Offset, floor, group)
		if errors.Is(err, align.ErrReading) {
			res.Reading = append(res.Reading, Left{Cluster: c.Name, Topic: k.topic, Partition: k.partition, Why: err.Error()})
			continue
		}
		if err != nil {
			res.Errors = append(res.Errors, &ClusterError{Cluster: c.Name, Err: fmt.Errorf("sync group %s %s[%d] (%d from %s): %w", group, k.topic, k.partition, e.co.Offset, src, err)})
			continue
		}
		if has && !cur.foreign && t.Translated == cur.co.Offset {
			// Committed through the target's KoP (the group's or the tool's): served. A
			// foreign entry of the same number (replicated before setup, a kept
			// translation) was written into the topic only: KoP may not serve it.
			continue
		}
		md := Mark{From: src, Source: e.co.Offset, Floor: floor, HasFloor: true}.Metadata(e.orig)
		o.commits = append(o.commits, kop.SyncCommit{Topic: k.topic, Partition: k.partition, Offset: t.Translated, Metadata: md})
		o.synced = append(o.synced, Synced{Cluster: c.Name, Topic: k.topic, Partition: k.partition, Source: e.co.Offset, SourceAt: e.co.CommitTimestamp, Translated: t.Translated, Behind: t.Behind})
	}
	planDelete(o, src, from, to)
	if len(o.commits) == 0 && len(o.gone) == 0 {
		return nil
	}
	return o
}

// TargetFloor is the floor of a translation onto a target whose current commit of the key is
// cur, the source's commit being made at srcAt, and whether it is conditional: it holds only
// while the source's commit is at or past where the floor stands (align.Pool.FloorHolds;
// below it, the target follows the source backwards: align.BuildSince). Sync plans with it;
// check judges a target against the same rule.
//
// The floor of a key's translation onto a target is the group's own position there
// (its messages before it were consumed there, as after a failback, so a message only the
// target holds does not send the group back to it), or 0. The rule, the newest intent wins:
//
//   - The group's own commit on the target that is newer than the source's is never moved
//     back: it is the group's newest word on the key.
//   - Otherwise the floor (the group's own older commit there, or the floor the tool's last
//     commit carried in its mark) holds the translation at or above it only while the
//     source's commit is at or past where the floor stands in the source's numbering. A
//     source below that was moved back after the group left the target (a reset: to
//     earliest, to a datetime, by a shift): the target then follows it
//     backwards, the messages only the target holds below the floor still counted as
//     consumed (align.BuildSince), so the group resumes exactly at the reset point. The
//     tool's own commit is never a floor by itself: it is no consumption by the group on
//     the target (MirrorMaker 2 cannot tell its writes from the group's, and so never
//     follows a reset: KAFKA-9076).
//   - A replicated or kept entry (history from before sync setup) floors on the group's own
//     commit below it (loader.CommittedOffset.Floor).
//
// When the floor cannot be placed in the source's numbering it holds: never a skip
// (align.Pool.TranslateFloored).
func TargetFloor(cur loader.CommittedOffset, srcAt offsetlog.Millis) (floor int64, conditional bool) {
	var f int64
	m, _, marked := ParseMark(cur.Metadata)
	switch {
	case foreign(cur):
		return cur.Floor(), false
	case marked && m.HasFloor:
		f = m.Floor
	case marked:
		f = cur.Offset // a mark of a release before floors were carried: its number was floored
	case cur.CommitTimestamp > srcAt:
		return cur.Offset, false
	default:
		f = cur.Offset
	}
	if f <= 0 {
		return 0, false
	}
	return f, true
}

// planDelete finds on target o.c the keys it holds as the tool's commits from src that src
// no longer holds at all.
func planDelete(o *op, src string, from, to map[key]entry) {
	o.tps = map[string][]int32{}
	for _, k := range slices.SortedFunc(maps.Keys(to), compareKeys) {
		e := to[k]
		if _, held := from[k]; held || !e.marked || e.mark.From != src {
			continue
		}
		o.tps[k.topic] = append(o.tps[k.topic], k.partition)
		o.gone = append(o.gone, Deleted{Cluster: o.c.Name, Topic: k.topic, Partition: k.partition})
	}
	// Nothing of the group left on the source, nothing but the source's on the target.
	o.group = len(o.gone) > 0 && len(from) == 0 && len(o.gone) == len(to)
}

// applyDelete deletes what o found gone: the group, or its keys.
func applyDelete(ctx context.Context, res *Result, o op) {
	if o.group {
		if err := o.c.Committer.DeleteGroup(ctx, res.Group); err != nil {
			res.Errors = append(res.Errors, &ClusterError{Cluster: o.c.Name, Err: err})
			return
		}
		res.Deleted = append(res.Deleted, o.gone...)
		return
	}
	err := o.c.Committer.Delete(ctx, res.Group, o.tps)
	switch {
	case kop.IsUnsupported(err):
		res.Undeleted = append(res.Undeleted, o.gone...)
	case err != nil:
		res.Errors = append(res.Errors, &ClusterError{Cluster: o.c.Name, Err: err})
	default:
		res.Deleted = append(res.Deleted, o.gone...)
	}
}
