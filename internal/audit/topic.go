package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// Publisher sends one message to a topic.
type Publisher interface {
	Publish(ctx context.Context, payload []byte) error
	Close()
}

// Topic copies records to a topic in the cluster written to: the same JSON line the file
// holds, one message per record. The publisher is opened on Open (before the first write,
// so that a topic that cannot be written stops the command with nothing written) or on the
// first Write.
type Topic struct {
	Name string
	// New opens the publisher of Name (PulsarPublisher in the product).
	New func(ctx context.Context, topic string) (Publisher, error)
	// Timeout bounds one send (default 30s): a record is sent after its write returned.
	Timeout time.Duration

	mu  sync.Mutex
	pub Publisher
}

// Open opens the publisher; a no-op once open.
func (t *Topic) Open(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.open(ctx)
}

func (t *Topic) open(ctx context.Context) error {
	if t.pub != nil {
		return nil
	}
	pub, err := t.New(ctx, t.Name)
	if err != nil {
		return fmt.Errorf("audit topic %s cannot be written: %w", t.Name, err)
	}
	t.pub = pub
	return nil
}

// Write implements Sink.
func (t *Topic) Write(r Record) error { return t.WriteAll([]Record{r}) }

// BatchPublisher is a Publisher that sends many messages without a round trip each.
type BatchPublisher interface {
	PublishAll(ctx context.Context, payloads [][]byte) error
}

// WriteAll implements BatchSink: the records sent at once when the publisher can, each
// bounded by Timeout as Write's.
func (t *Topic) WriteAll(rs []Record) error {
	payloads := make([][]byte, 0, len(rs))
	for _, r := range rs {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		payloads = append(payloads, b)
	}
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.open(ctx); err != nil {
		return err
	}
	var err error
	if bp, ok := t.pub.(BatchPublisher); ok {
		err = bp.PublishAll(ctx, payloads)
	} else {
		for _, b := range payloads {
			if err = t.pub.Publish(ctx, b); err != nil {
				break
			}
		}
	}
	if err != nil {
		return fmt.Errorf("audit topic %s: %w", t.Name, err)
	}
	return nil
}

// Close closes the publisher (a no-op when it was never opened).
func (t *Topic) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pub != nil {
		t.pub.Close()
		t.pub = nil
	}
}

// Sinks writes each record to every sink, and returns their errors joined.
type Sinks []Sink

// Write implements Sink.
func (s Sinks) Write(r Record) error {
	var errs []error
	for _, k := range s {
		errs = append(errs, k.Write(r))
	}
	return errors.Join(errs...)
}

// WriteAll implements BatchSink: each sink takes the records at once where it can.
func (s Sinks) WriteAll(rs []Record) error {
	var errs []error
	for _, k := range s {
		errs = append(errs, WriteAll(k, rs))
	}
	return errors.Join(errs...)
}

// PulsarPublisher returns the Topic.New of client: a producer on the topic (the broker
// creates the topic when its namespace allows it). A producer that cannot be created (no
// permission to produce, no such namespace) is the error Open reports.
func PulsarPublisher(client pulsar.Client) func(ctx context.Context, topic string) (Publisher, error) {
	return func(_ context.Context, topic string) (Publisher, error) {
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
		if err != nil {
			return nil, err
		}
		return pulsarPublisher{p}, nil
	}
}

type pulsarPublisher struct{ p pulsar.Producer }

func (p pulsarPublisher) Publish(ctx context.Context, payload []byte) error {
	_, err := p.p.Send(ctx, &pulsar.ProducerMessage{Payload: payload})
	return err
}

// PublishAll implements BatchPublisher: every message handed to the producer, then every
// acknowledgement awaited; the first error, with how many failed.
func (p pulsarPublisher) PublishAll(ctx context.Context, payloads [][]byte) error {
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		first  error
		failed int
	)
	for _, b := range payloads {
		wg.Add(1)
		p.p.SendAsync(ctx, &pulsar.ProducerMessage{Payload: b}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				defer mu.Unlock()
				if failed++; first == nil {
					first = err
				}
			}
		})
	}
	wg.Wait()
	if failed > 1 {
		return fmt.Errorf("%d of %d records not sent, the first: %w", failed, len(payloads), first)
	}
	return first
}

func (p pulsarPublisher) Close() { p.p.Close() }
