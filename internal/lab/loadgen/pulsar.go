package loadgen

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// PulsarOptions tune WritePulsar.
type PulsarOptions struct {
	// Batching lets the producers pack several messages into one Pulsar entry. kop's commit
	// Writer sends one message per entry, as KoP does; a reader (KoP's or ours) sees the same
	// messages either way, but entries differ, so measurements of reads use the default (false).
	Batching bool
	// MaxPending bounds the messages in flight per partition (default 2000).
	MaxPending int
	// Progress, when set, gets a line every few seconds.
	Progress io.Writer
}

// WritePulsar publishes the load of s to offsetsTopic (persistent://<tenant>/<ns>/__consumer_offsets,
// partitions partitions) with one producer per partition, as KoP would: each request becomes
// one message in the partition KoP maps the group to (loader.PartitionFor), keyed with the
// group's Pulsar key in base64 (the Java client's keyBytes()), holding one record batch.
// Sends are asynchronous; the first failure stops the load and is returned.
func WritePulsar(ctx context.Context, client pulsar.Client, offsetsTopic string, partitions int32, s Spec, o PulsarOptions) (Stats, error) {
	if err := s.Validate(); err != nil {
		return Stats{}, err
	}
	if o.MaxPending <= 0 {
		o.MaxPending = 2000
	}
	prods, closeAll, err := openProducers(client, offsetsTopic, partitions, o)
	defer closeAll()
	if err != nil {
		return Stats{}, err
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		st     Stats
		acked  atomic.Int64
		wg     sync.WaitGroup
		failed sync.Once
	)
	start := time.Now()
	stopProgress := progress(o.Progress, start, func() int64 { return acked.Load() }, int64(s.Commits))
	defer stopProgress()

	err = s.Requests(func(req Request) error {
		if err := context.Cause(ctx); err != nil {
			return err
		}
		key, value, err := kop.EncodeRequest(req.Commits, time.Now())
		if err != nil {
			return err
		}
		p := loader.PartitionFor(req.Group, partitions)
		n := int64(len(req.Commits))
		wg.Add(1)
		prods[p].SendAsync(ctx, &pulsar.ProducerMessage{Key: base64.StdEncoding.EncodeToString(key), Payload: value},
			func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				defer wg.Done()
				if err != nil {
					failed.Do(func() {
						cancel(fmt.Errorf("loadgen: send group %s to %s-partition-%d: %w", req.Group, offsetsTopic, p, err))
					})
					return
				}
				acked.Add(n)
			})
		st.Requests++
		st.Commits += int(n)
		st.Bytes += int64(len(value))
		return nil
	})
	for _, p := range prods {
		if ferr := p.FlushWithCtx(ctx); ferr != nil && err == nil && context.Cause(ctx) == nil {
			err = fmt.Errorf("loadgen: flush %s: %w", p.Topic(), ferr)
		}
	}
	wg.Wait()
	st.Elapsed = time.Since(start)
	if cause := context.Cause(ctx); cause != nil && err == nil {
		err = cause
	}
	if err != nil {
		return st, err
	}
	if got := acked.Load(); got != int64(st.Commits) {
		return st, fmt.Errorf("loadgen: %d of %d commits acknowledged by %s", got, st.Commits, offsetsTopic)
	}
	return st, nil
}

// openProducers opens one producer per partition of offsetsTopic; closeAll closes those
// opened, also when one failed to open.
func openProducers(client pulsar.Client, offsetsTopic string, partitions int32, o PulsarOptions) (prods []pulsar.Producer, closeAll func(), err error) {
	prods = make([]pulsar.Producer, partitions)
	closeAll = func() {
		for _, p := range prods {
			if p != nil {
				p.Close()
			}
		}
	}
	for p := range prods {
		topic := fmt.Sprintf("%s-partition-%d", offsetsTopic, p)
		opts := pulsar.ProducerOptions{
			Topic:              topic,
			DisableBatching:    !o.Batching,
			MaxPendingMessages: o.MaxPending,
			SendTimeout:        time.Minute,
		}
		if o.Batching {
			opts.BatchingMaxMessages = 1000
			opts.BatchingMaxPublishDelay = 5 * time.Millisecond
		}
		prod, err := client.CreateProducer(opts)
		if err != nil {
			return nil, closeAll, fmt.Errorf("loadgen: producer for %s: %w", topic, err)
		}
		prods[p] = prod
	}
	return prods, closeAll, nil
}

// progress prints done/total every 5 s until the returned stop is called.
func progress(w io.Writer, start time.Time, done func() int64, total int64) (stop func()) {
	if w == nil {
		return func() {}
	}
	t := time.NewTicker(5 * time.Second)
	quit := make(chan struct{})
	go func() {
		for {
			select {
			case <-t.C:
				d := done()
				fmt.Fprintf(w, "  %d/%d commits (%.0f%%) in %s\n", d, total, 100*float64(d)/float64(total), time.Since(start).Round(time.Second))
			case <-quit:
				return
			}
		}
	}()
	return func() { t.Stop(); close(quit) }
}
