package kop

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// Sent is how one request of a batch went: the offsets partition it went to, its message
// id, or why it was not written.
type Sent struct {
	Partition int32
	ID        pulsar.MessageID
	Err       error
}

// CommitRequests publishes many OffsetCommit requests, each of one group and one message
// as CommitRequest publishes it, without a round trip each: every message is handed to
// its partition's producer before any acknowledgement is awaited. Result i is reqs[i]'s; a
// request that fails does not stop the others. A group's messages keep their order.
func (w *Writer) CommitRequests(ctx context.Context, reqs [][]OffsetCommit) []Sent {
	now := time.Now()
	return w.sendAll(ctx, reqs, func(cs []OffsetCommit) (*pulsar.ProducerMessage, error) {
		key, v, err := EncodeRequest(cs, now)
		if err != nil {
			return nil, err
		}
		return &pulsar.ProducerMessage{Key: base64.StdEncoding.EncodeToString(key), Payload: v, DisableReplication: w.Local}, nil
	})
}

// HoldRequests is Hold of many groups at once, sent as CommitRequests sends.
func (w *Writer) HoldRequests(ctx context.Context, reqs [][]OffsetCommit, from string) []Sent {
	now := time.Now()
	return w.sendAll(ctx, reqs, func(cs []OffsetCommit) (*pulsar.ProducerMessage, error) {
		key, v, err := EncodeRequest(cs, now)
		if err != nil {
			return nil, err
		}
		return &pulsar.ProducerMessage{Key: base64.StdEncoding.EncodeToString(key), Payload: v,
			DisableReplication: true, Properties: map[string]string{loader.PropHeldFrom: from}}, nil
	})
}

// CommitRequests holds many groups' values at once (Writer.HoldRequests).
func (h HoldWriter) CommitRequests(ctx context.Context, reqs [][]OffsetCommit) []Sent {
	return h.W.HoldRequests(ctx, reqs, h.From)
}

var errEmptyRequest = errors.New("kopcommit: an OffsetCommit request without commits")

// sendAll sends the message build makes of each request asynchronously to its group's
// partition, then waits for every acknowledgement once.
func (w *Writer) sendAll(ctx context.Context, reqs [][]OffsetCommit, build func([]OffsetCommit) (*pulsar.ProducerMessage, error)) []Sent {
	out := make([]Sent, len(reqs))
	var wg sync.WaitGroup
	for i, cs := range reqs {
		if len(cs) == 0 {
			out[i].Err = errEmptyRequest
			continue
		}
		p := loader.PartitionFor(cs[0].Group, w.partitions)
		out[i].Partition = p
		m, err := build(cs)
		if err != nil {
			out[i].Err = err
			continue
		}
		prod, err := w.producer(p)
		if err != nil {
			out[i].Err = err
			continue
		}
		wg.Add(1)
		// Each callback writes its own element; Wait orders those writes before the return.
		prod.SendAsync(ctx, m, func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			defer wg.Done()
			if err != nil {
				out[i].Err = fmt.Errorf("send to %s-partition-%d: %w", w.topic, p, err)
				return
			}
			out[i].ID = id
		})
	}
	wg.Wait()
	return out
}
