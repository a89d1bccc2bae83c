package kop

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// SyncCommit is one offset sync commits through KoP's Kafka front door.
type SyncCommit struct {
	Topic     string // Kafka short name, as a Kafka client names it
	Partition int32
	Offset    int64
	Metadata  string
}

// Committer commits offsets through a cluster's KoP listeners with kadm, as a Kafka client
// outside the group would: KoP updates its cache on every OffsetCommit, so what it commits
// is served at once, with no unload. Unlike Writer it does not write KoP's offsets topic
// itself; KoP does, with its own commit time and expiry.
type Committer struct {
	Admin *kadm.Client
}

// Commit commits cs for group in one OffsetCommit. It is member-less (generation -1, no
// member id: kadm's CommitOffsets), which KoP accepts only for a group with no members, as
// Kafka does. Every partition KoP refused is in the error, naming group, topic, partition
// and the Kafka error (errors.Is finds the kerr).
func (c Committer) Commit(ctx context.Context, group string, cs []SyncCommit) error {
	if len(cs) == 0 {
		return nil
	}
	var os kadm.Offsets
	for _, sc := range cs {
		os.Add(kadm.Offset{Topic: sc.Topic, Partition: sc.Partition, At: sc.Offset, LeaderEpoch: -1, Metadata: sc.Metadata})
	}
	rs, err := c.Admin.CommitOffsets(ctx, group, os)
	if err != nil {
		return fmt.Errorf("commit offsets of group %s: %w", group, err)
	}
	var errs []error
	for _, r := range rs.Sorted() {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("commit group %s %s[%d] at %d: %w", group, r.Topic, r.Partition, r.At, r.Err))
		}
	}
	return errors.Join(errs...)
}

// Delete deletes the committed offsets of group for tps (Kafka short names) in one
// OffsetDelete, as an admin deleting a group's offsets for topics it no longer reads. Every
// partition KoP refused is in the error, named as in Commit. KoP 3.1 advertises OffsetDelete
// v0 but answers it UNSUPPORTED_VERSION (docs/kop-facts.md): IsUnsupported tells.
func (c Committer) Delete(ctx context.Context, group string, tps map[string][]int32) error {
	s := kadm.TopicsSet{}
	for t, ps := range tps {
		s.Add(t, ps...)
	}
	if len(s) == 0 {
		return nil
	}
	rs, err := c.Admin.DeleteOffsets(ctx, group, s)
	if err != nil {
		return fmt.Errorf("delete offsets of group %s: %w", group, err)
	}
	type failed struct {
		topic     string
		partition int32
		err       error
	}
	var fs []failed
	rs.EachError(func(t string, p int32, err error) { fs = append(fs, failed{t, p, err}) })
	slices.SortFunc(fs, func(a, b failed) int {
		return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
	})
	var errs []error
	for _, f := range fs {
		errs = append(errs, fmt.Errorf("delete group %s %s[%d]: %w", group, f.topic, f.partition, f.err))
	}
	return errors.Join(errs...)
}

// DeleteGroup deletes group and every offset it committed (DeleteGroups), which KoP does
// (by tombstones) for a group with no members; one with members is refused (NON_EMPTY_GROUP).
func (c Committer) DeleteGroup(ctx context.Context, group string) error {
	rs, err := c.Admin.DeleteGroups(ctx, group)
	if err == nil {
		err = rs.Error()
	}
	if err != nil {
		return fmt.Errorf("delete group %s: %w", group, err)
	}
	return nil
}

// IsUnsupported reports whether err is KoP refusing a request it does not implement.
func IsUnsupported(err error) bool {
	return errors.Is(err, kerr.UnsupportedVersion)
}
