// Package loader is KoP's loader as kop-offsets models it: it replays an offsets partition
// the way KoP's loader does (Replayer), keeps what it would load (PersistedOffsets: Predict,
// LoadFailure, pending transactional commits), maps groups to offsets partitions exactly as
// KoP does (PartitionFor), and normalises topic names between KoP's full names and the names
// it answers with (FullName, ShortName, NormalizeTopic).
//
// It has no CLI, no output and no Pulsar client: messages come from an OffsetTopicReader and
// are decoded by package offsetlog. The facts it follows are in design/domain.md; where the
// KoP source says more, the comments at the top of replay.go and topic.go record it.
package loader
