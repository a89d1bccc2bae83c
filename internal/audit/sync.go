package audit

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/kop"
)

// SyncCommitter commits and deletes a group's offsets through KoP's front door
// (offsetsync.Committer, *kop.Committer).
type SyncCommitter interface {
	Commit(ctx context.Context, group string, cs []kop.SyncCommit) error
	Delete(ctx context.Context, group string, tps map[string][]int32) error
	DeleteGroup(ctx context.Context, group string) error
}

// SyncCommits records each OffsetCommit and OffsetDelete of a SyncCommitter in Sink: one
// record per group and call (sync coalesces a group's keys into one call per target and
// cycle); each commit's metadata carries sync's mark, which names the source cluster and
// offset. A record that cannot be written is reported to OnError and does not fail the
// write (it already happened).
type SyncCommits struct {
	SyncCommitter
	Cluster string
	Reason  string
	Who     Who
	Sink    Sink
	OnError func(error)
	Now     func() time.Time
}

func (s SyncCommits) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Commit implements SyncCommitter.
func (s SyncCommits) Commit(ctx context.Context, group string, cs []kop.SyncCommit) error {
	start := s.now()
	err := s.SyncCommitter.Commit(ctx, group, cs)
	r := Record{Action: ActionCommit}
	for _, c := range cs {
		r.Offsets = append(r.Offsets, Offset{Group: group, Topic: c.Topic, Partition: c.Partition, Offset: c.Offset, Metadata: c.Metadata})
	}
	s.record(ctx, r, group, start, err)
	return err
}

// Delete implements SyncCommitter.
func (s SyncCommits) Delete(ctx context.Context, group string, tps map[string][]int32) error {
	start := s.now()
	err := s.SyncCommitter.Delete(ctx, group, tps)
	r := Record{Action: ActionDelete}
	for _, t := range slices.Sorted(maps.Keys(tps)) {
		for _, p := range tps[t] {
			r.Offsets = append(r.Offsets, Offset{Group: group, Topic: t, Partition: p, Offset: -1})
		}
	}
	s.record(ctx, r, group, start, err)
	return err
}

// DeleteGroup implements SyncCommitter: the record names the group, no offsets (all go).
func (s SyncCommits) DeleteGroup(ctx context.Context, group string) error {
	start := s.now()
	err := s.SyncCommitter.DeleteGroup(ctx, group)
	s.record(ctx, Record{Action: ActionDeleteGroup}, group, start, err)
	return err
}

func (s SyncCommits) record(ctx context.Context, r Record, group string, start time.Time, err error) {
	r.Cluster, r.Who, r.Reason, r.Groups = s.Cluster, s.Who, whyOr(ctx, s.Reason), []string{group}
	finish(&r, start, s.now(), err)
	if werr := s.Sink.Write(r); werr != nil && s.OnError != nil {
		s.OnError(werr)
	}
}
