package pulsarx

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/kop-offsets/kop-offsets/internal/offsets"
)

// TailMessage is a message read by Tail, with what only a live reader can say about it.
type TailMessage struct {
	offsets.Message
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
	topic := PartitionTopic(r.topic, partition)
	fail := func(what string, err error) error {
		return fmt.Errorf("cluster %s: topic %s partition %d: %s: %w", r.cluster, r.topic, partition, what, err)
	}
	if ctx.Err() != nil {
		return nil
	}
	sub := r.opts.SubscriptionRolePrefix + "-" + randomSuffix()
	rd, err := r.client.CreateReader(pulsar.ReaderOptions{
		Topic:                   topic,
		SubscriptionName:        sub,
		StartMessageID:          pulsar.EarliestMessageID(),
		StartMessageIDInclusive: true,
		ReceiverQueueSize:       r.opts.ReceiverQueueSize,
		SubscriptionRolePrefix:  r.opts.SubscriptionRolePrefix,
		ReadCompacted:           r.opts.Compacted,
	})
	if err != nil {
		return fail("create reader", err)
	}
	defer rd.Close()

	last, err := rd.GetLastMessageID()
	if err != nil {
		return fail("get last message id", err)
	}
	caught := false
	catchUp := func() {
		if !caught {
			caught = true
			caughtUp()
		}
	}
	if last == nil || last.EntryID() < 0 || last.LedgerID() < 0 {
		catchUp()
	}
	prober, _ := r.admin.(CursorProber)
	var lastRead pulsar.MessageID
	idleSince := time.Now()
	for {
		nctx, ncancel := ctx, context.CancelFunc(func() {})
		if !caught {
			// Until the catch-up, wake up now and then: the last message may be a placeholder
			// the client drops (CursorProber), or retention may have removed the rest.
			wait := r.opts.IdleTimeout
			if prober != nil && wait > probeInterval {
				wait = probeInterval
			}
			nctx, ncancel = context.WithTimeout(ctx, wait)
		}
		msg, err := rd.Next(nctx)
		ncancel()
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return nil
			case !errors.Is(err, context.DeadlineExceeded):
				return fail("read", err)
			}
			if prober != nil {
				l, e, ok, perr := prober.CursorMarkDelete(ctx, topic, sub)
				if perr == nil && ok && compareEntry(entryPos{l, e}, last) >= 0 {
					catchUp()
					continue
				}
			}
			if time.Since(idleSince) >= r.opts.IdleTimeout {
				return fail("read", fmt.Errorf("no message for %s before the last message id %s (last read %s)",
					r.opts.IdleTimeout, formatID(last, partition), formatID(lastRead, partition)))
			}
			continue
		}
		idleSince = time.Now()
		id := msg.ID()
		if !caught && compareEntry(id, last) > 0 {
			catchUp()
		}
		lastRead = id
		tm := TailMessage{Message: r.toMessage(partition, msg), ReplicatedFrom: msg.GetReplicatedFrom()}
		if err := fn(tm); err != nil {
			return err
		}
		if !caught && isLastOf(id, last) {
			catchUp()
		}
	}
}
