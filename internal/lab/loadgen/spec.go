// Package loadgen loads a lab cluster's offsets topic with many groups and commits, for
// measuring kop-offsets at scale (make bench-lab, docs/performance.md). It is test tooling.
//
// Two ways, both producing only what KoP itself writes or parses:
//   - WritePulsar publishes KoP-format offset-commit messages (kop.EncodeRequest: one
//     record batch per OffsetCommit request, keyed by the group's Pulsar key) straight into
//     the offsets topic with pulsar-client-go producers. It needs no KoP, so the persisted
//     side can be measured anywhere; no KoP cache sees these commits until KoP loads them.
//   - WriteKafka commits through KoP's Kafka path with kadm (and, optionally, real consumer
//     groups with members), so KoP writes the records itself.
//
// The load is deterministic: a Spec names every group, key and offset, so a second load
// with FirstGroup set adds groups to an earlier one, and tests can predict the live state.
package loadgen

import (
	"errors"
	"fmt"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/kop"
)

// Spec is the shape of a load: Groups groups (numbered from FirstGroup), each committing the
// same KeysPerGroup (topic, partition) keys spread over Topics topics of TopicPartitions
// partitions, Commits offset commits (records) in all. Commits go round by round: in each
// round every group sends one OffsetCommit request holding all its keys, with offsets that
// grow by round, until Commits records are written (the last request may hold fewer keys).
type Spec struct {
	Groups          int
	FirstGroup      int
	KeysPerGroup    int
	Topics          int
	TopicPartitions int
	Commits         int
	GroupPrefix     string // default "load-g-"
	TopicPrefix     string // default "load-t-"
	Namespace       string // Kafka namespace of the topics, default "public/default"
}

// Defaults of Spec: 10k groups and 1M commits (issue 14), 5 keys per group over 100 topics.
const (
	DefaultGroups          = 10000
	DefaultCommits         = 1000000
	DefaultKeysPerGroup    = 5
	DefaultTopics          = 100
	DefaultTopicPartitions = 1
)

// WithDefaults fills the zero fields.
func (s Spec) WithDefaults() Spec {
	if s.Groups == 0 {
		s.Groups = DefaultGroups
	}
	if s.Commits == 0 {
		s.Commits = DefaultCommits
	}
	if s.KeysPerGroup == 0 {
		s.KeysPerGroup = DefaultKeysPerGroup
	}
	if s.Topics == 0 {
		s.Topics = DefaultTopics
	}
	if s.TopicPartitions == 0 {
		s.TopicPartitions = DefaultTopicPartitions
	}
	if s.GroupPrefix == "" {
		s.GroupPrefix = "load-g-"
	}
	if s.TopicPrefix == "" {
		s.TopicPrefix = "load-t-"
	}
	if s.Namespace == "" {
		s.Namespace = "public/default"
	}
	return s
}

// Validate reports a spec that cannot be loaded as described.
func (s Spec) Validate() error {
	switch {
	case s.Groups <= 0 || s.KeysPerGroup <= 0 || s.Topics <= 0 || s.TopicPartitions <= 0 || s.Commits <= 0:
		return fmt.Errorf("loadgen: groups (%d), keys per group (%d), topics (%d), partitions per topic (%d) and commits (%d) must be > 0",
			s.Groups, s.KeysPerGroup, s.Topics, s.TopicPartitions, s.Commits)
	case s.FirstGroup < 0:
		return errors.New("loadgen: first group must be >= 0")
	case s.KeysPerGroup > s.Topics*s.TopicPartitions:
		return fmt.Errorf("loadgen: %d keys per group do not fit in %d topics x %d partitions", s.KeysPerGroup, s.Topics, s.TopicPartitions)
	}
	return nil
}

// Key is one (topic, partition) a group commits.
type Key struct {
	Topic     string // short Kafka name
	Partition int32
}

// GroupName is the name of group i (0-based, FirstGroup not added).
func (s Spec) GroupName(i int) string { return fmt.Sprintf("%s%07d", s.GroupPrefix, s.FirstGroup+i) }

// TopicName is the short Kafka name of topic t.
func (s Spec) TopicName(t int) string { return fmt.Sprintf("%s%04d", s.TopicPrefix, t) }

// FullTopic is KoP's full name of a short topic name, as KoP stores it in commit keys.
func (s Spec) FullTopic(short string) string { return "persistent://" + s.Namespace + "/" + short }

// TopicNames lists the short names of all topics.
func (s Spec) TopicNames() []string {
	out := make([]string, s.Topics)
	for t := range out {
		out[t] = s.TopicName(t)
	}
	return out
}

// Keys returns the keys of group i: consecutive slots of the topics x partitions grid,
// starting where group i-1 stopped, so load spreads evenly over topics.
func (s Spec) Keys(i int) []Key {
	slots := s.Topics * s.TopicPartitions
	out := make([]Key, s.KeysPerGroup)
	for j := range out {
		flat := ((s.FirstGroup+i)*s.KeysPerGroup + j) % slots
		out[j] = Key{Topic: s.TopicName(flat / s.TopicPartitions), Partition: int32(flat % s.TopicPartitions)}
	}
	return out
}

// Offset is the offset group i commits for its key j in round r.
func (s Spec) Offset(i, j, r int) int64 { return int64(r+1)*1000 + int64(j) }

// Rounds is how many rounds the load takes (the last may be partial).
func (s Spec) Rounds() int {
	per := s.Groups * s.KeysPerGroup
	return (s.Commits + per - 1) / per
}

// LiveKeys is how many offset keys are live after the load.
func (s Spec) LiveKeys() int { return min(s.Commits, s.Groups*s.KeysPerGroup) }

// Request is one OffsetCommit request of the load.
type Request struct {
	Group   string
	Round   int
	Commits []kop.OffsetCommit
}

// Requests calls fn for every request of the load in order (round by round, group by group)
// and stops at fn's first error.
func (s Spec) Requests(fn func(Request) error) error {
	left := s.Commits
	for r := 0; left > 0; r++ {
		for i := 0; i < s.Groups && left > 0; i++ {
			keys := s.Keys(i)
			n := min(len(keys), left)
			req := Request{Group: s.GroupName(i), Round: r, Commits: make([]kop.OffsetCommit, n)}
			for j := range n {
				req.Commits[j] = kop.OffsetCommit{Group: req.Group, Topic: s.FullTopic(keys[j].Topic),
					Partition: keys[j].Partition, Offset: s.Offset(i, j, r)}
			}
			left -= n
			if err := fn(req); err != nil {
				return err
			}
		}
	}
	return nil
}

// Stats is what a load wrote.
type Stats struct {
	Requests int           `json:"requests"` // OffsetCommit requests (Pulsar messages on the Pulsar path)
	Commits  int           `json:"commits"`  // offset records
	Bytes    int64         `json:"bytes"`    // message payload bytes (Pulsar path)
	Elapsed  time.Duration `json:"elapsed"`
}

func (st Stats) String() string {
	rate := float64(st.Commits) / max(st.Elapsed.Seconds(), 1e-9)
	return fmt.Sprintf("%d requests, %d commits, %d bytes in %s (%.0f commits/s)", st.Requests, st.Commits, st.Bytes,
		st.Elapsed.Round(10*time.Millisecond), rate)
}
