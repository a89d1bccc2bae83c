package loader

import (
	"context"
	"time"
)

// Message is one message of an offsets-topic partition, as a Pulsar reader returns it.
// Key is the Kafka key when the producer set one (decoded from base64 when the message
// carried partition_key_b64_encoded); decoders must not depend on it because the same key
// is inside the record batch in Value.
type Message struct {
	Partition   int32     // offsets-topic partition index
	MessageID   string    // Pulsar message id, "ledger:entry:partition:batch"
	PublishTime time.Time // broker publish time
	Key         []byte
	Value       []byte // a Kafka record batch (magic 2), or empty for a placeholder
	// ReplicatedFrom names the cluster the message was replicated from; empty when it was
	// written on the cluster it was read from. A committed offset counts in its origin's
	// numbering of the data topic.
	ReplicatedFrom string
	// Kept marks a kept translation (kept.go); nil for every other message.
	Kept *KeptMark
}

// OffsetTopicReader reads the offsets topic of one cluster. Implementations never create
// a durable subscription: they use non-durable readers.
type OffsetTopicReader interface {
	// Partitions returns the partition count of the offsets topic.
	Partitions(ctx context.Context) (int32, error)
	// ReadPartition calls fn for every message of one partition, from the earliest one to
	// the last one that existed when the call started, in order. It stops at the first
	// error fn returns and returns it.
	ReadPartition(ctx context.Context, partition int32, fn func(Message) error) error
}
