// Package offsets is the domain of kop-offsets: it decodes messages of KoP's
// __consumer_offsets topic (Decode), maps groups to offsets partitions exactly as KoP does
// (PartitionFor), replays a partition the way KoP's loader does (Replayer,
// PersistedOffsets), and normalises topic names between KoP's full names and the names it
// answers with (FullName, ShortName, NormalizeTopic).
//
// It has no CLI, no output and no Pulsar client: messages come from an OffsetTopicReader.
// The facts it follows are in design/domain.md; where the KoP source says more, the
// comments at the top of replay.go and topic.go record it.
package loader
