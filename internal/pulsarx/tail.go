package pulsarx

import (
	"context"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// TailMessage is a message read by Tail, with what only a live reader can say about it.
type TailMessage struct {
	loader.Message
	// ReplicatedFrom names the cluster whose replicator published the message here; empty
	// for a message produced on this cluster.
	ReplicatedFrom string
}

// Tail reads partition from the earliest message and stays on it: fn gets every message
// that exists when the call starts, then every new one, until ctx ends (the normal end:
// nil). caughtUp is called once, from the goroutine that calls fn, when the messages that
// existed at the start have all been passed to fn (at once for an empty partition); a long
// running watcher counts what arrives after it as live. One reader is kept open, so the
// cost after the catch-up grows with the new messages only. The reader is non-durable: the
// broker forgets it when it is closed. fn's first error is returned unchanged.
//
// The pulsar client reconnects the reader by itself when the broker goes away; Tail only
// fails when the reader cannot be created or the broker answers an error.
func (r *Reader) Tail(ctx context.Context, partition int32, fn func(TailMessage) error, caughtUp func()) error {
	return r.consume(ctx, partition, true, caughtUp, span{}, func(msg pulsar.Message) error {
		return fn(TailMessage{Message: r.toMessage(partition, msg), ReplicatedFrom: r.origin(msg.GetReplicatedFrom())})
	})
}
