package pulsarx

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// fakeID is a pulsar.MessageID with a settable batch size (pulsar.NewMessageID has none).
type fakeID struct {
	ledger, entry    int64
	batch, batchSize int32
}

func (i fakeID) Serialize() []byte   { return nil }
func (i fakeID) LedgerID() int64     { return i.ledger }
func (i fakeID) EntryID() int64      { return i.entry }
func (i fakeID) BatchIdx() int32     { return i.batch }
func (i fakeID) PartitionIdx() int32 { return -1 }
func (i fakeID) BatchSize() int32    { return i.batchSize }
func (i fakeID) String() string      { return "" }

type fakeMsg struct {
	pulsar.Message // unused methods panic
	id             fakeID
	key            string
	value          []byte
	at             time.Time
	from           string // replicated from
	props          map[string]string
}

func (m fakeMsg) ID() pulsar.MessageID          { return m.id }
func (m fakeMsg) Key() string                   { return m.key }
func (m fakeMsg) Payload() []byte               { return m.value }
func (m fakeMsg) Properties() map[string]string { return m.props }
func (m fakeMsg) PublishTime() time.Time        { return m.at }
func (m fakeMsg) GetReplicatedFrom() string     { return m.from }

// single builds a non-batched message as pulsar-client-go reports it (index 0 of 1).
func single(ledger, entry int64, key, value string) fakeMsg {
	return fakeMsg{id: fakeID{ledger, entry, 0, 1}, key: key, value: []byte(value), at: time.UnixMilli(1_700_000_000_000 + entry).UTC()}
}

type fakeReader struct {
	pulsar.Reader
	topic   string
	msgs    []fakeMsg
	last    pulsar.MessageID
	hasNext bool
	pos     int
	nexts   int
	sought  time.Time
	closed  bool
	onClose func()
}

func (r *fakeReader) Topic() string { return r.topic }
func (r *fakeReader) GetLastMessageID() (pulsar.MessageID, error) {
	if r.last == nil {
		return nil, errors.New("no last id")
	}
	return r.last, nil
}
func (r *fakeReader) HasNext() bool                { return r.hasNext }
func (r *fakeReader) SeekByTime(t time.Time) error { r.sought = t; return nil }
func (r *fakeReader) Close() {
	r.closed = true
	if r.onClose != nil {
		r.onClose()
	}
}
func (r *fakeReader) Next(ctx context.Context) (pulsar.Message, error) {
	r.nexts++
	if r.pos < len(r.msgs) {
		m := r.msgs[r.pos]
		r.pos++
		return m, nil
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// fakeClient hands out fakeReaders by topic and records the options and concurrency.
type fakeClient struct {
	mu      sync.Mutex
	readers map[string]*fakeReader
	opts    []pulsar.ReaderOptions
	open    atomic.Int32
	maxOpen atomic.Int32
	err     error
}

func (c *fakeClient) CreateReader(o pulsar.ReaderOptions) (pulsar.Reader, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.opts = append(c.opts, o)
	if c.err != nil {
		return nil, c.err
	}
	r, ok := c.readers[o.Topic]
	if !ok {
		return nil, errors.New("topic does not exist: " + o.Topic)
	}
	if o.StartMessageID != nil && !o.StartMessageIDInclusive {
		// A read after a position: the broker starts past it.
		r.pos = 0
		for r.pos < len(r.msgs) && compareEntry(r.msgs[r.pos].id, o.StartMessageID) <= 0 {
			r.pos++
		}
	}
	n := c.open.Add(1)
	for {
		m := c.maxOpen.Load()
		if n <= m || c.maxOpen.CompareAndSwap(m, n) {
			break
		}
	}
	r.onClose = func() { c.open.Add(-1) }
	return r, nil
}

type fakeCounter struct {
	n   int32
	err error
}

func (f fakeCounter) PartitionedTopicPartitions(context.Context, string) (int32, error) {
	return f.n, f.err
}
