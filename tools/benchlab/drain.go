package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// drain is the reference for a replay: a plain non-durable reader per offsets partition that
// only receives every message from the earliest to the last one that existed at the start,
// and touches nothing but its length. It is what any reader of these partitions pays at least
// (the read limit of the cluster and of pulsar-client-go), with the readers kop-offsets uses:
// the same queue size, the same number at once, the compacted view (LoaderView).
func drain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("drain", flag.ContinueOnError)
	urls := fs.String("service-url", "pulsar://127.0.0.1:16650", "Pulsar service URLs, comma-separated (several clusters are drained at once)")
	topic := fs.String("topic", "persistent://public/__kafka/__consumer_offsets", "partitioned topic")
	parts := fs.Int("partitions", 8, "partitions of the topic")
	concurrency := fs.Int("concurrency", 4, "partitions read at once per cluster (kop-offsets' default)")
	queue := fs.Int("queue", pulsarx.DefaultReceiverQueueSize, "receiver queue size (kop-offsets' default)")
	compacted := fs.Bool("compacted", true, "read the compacted view, as kop-offsets' replay does")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var (
		msgs, bytes atomic.Int64
		wg          sync.WaitGroup
		errMu       sync.Mutex
		firstErr    error
	)
	start := time.Now()
	var clients []pulsar.Client
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for _, url := range strings.Split(*urls, ",") {
		client, err := pulsar.NewClient(pulsar.ClientOptions{URL: url, Logger: plog.DefaultNopLogger()})
		if err != nil {
			return err
		}
		clients = append(clients, client)
		sem := make(chan struct{}, *concurrency)
		for p := range *parts {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				n, b, err := drainPartition(ctx, client, fmt.Sprintf("%s-partition-%d", *topic, p), *queue, *compacted)
				msgs.Add(n)
				bytes.Add(b)
				if err != nil {
					errMu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("%s %s-partition-%d: %w", url, *topic, p, err)
					}
					errMu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{"messages": msgs.Load(), "bytes": bytes.Load(), "seconds": time.Since(start).Seconds()})
}

func drainPartition(ctx context.Context, client pulsar.Client, topic string, queue int, compacted bool) (n, b int64, err error) {
	rd, err := client.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID(),
		StartMessageIDInclusive: true, ReceiverQueueSize: queue, ReadCompacted: compacted})
	if err != nil {
		return 0, 0, err
	}
	defer rd.Close()
	last, err := rd.GetLastMessageID()
	if err != nil {
		return 0, 0, err
	}
	if last.EntryID() < 0 || last.LedgerID() < 0 {
		return 0, 0, nil
	}
	// One timer for many messages, as pulsarx's loop: the least a reader pays per message.
	timeout := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, time.Minute) }
	nctx, cancel := timeout()
	defer func() { cancel() }()
	lastMsg := time.Now()
	for {
		msg, err := rd.Next(nctx)
		if err != nil {
			if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
				return n, b, err
			}
			if time.Since(lastMsg) >= time.Minute {
				return n, b, fmt.Errorf("no message for 1m before %v", last)
			}
			cancel()
			nctx, cancel = timeout()
			continue
		}
		lastMsg = time.Now()
		n++
		b += int64(len(msg.Key()) + len(msg.Payload()))
		id := msg.ID()
		past := id.LedgerID() > last.LedgerID() || (id.LedgerID() == last.LedgerID() && id.EntryID() > last.EntryID())
		lastEntry := id.LedgerID() == last.LedgerID() && id.EntryID() == last.EntryID()
		if past || (lastEntry && (id.BatchIdx() < 0 || id.BatchIdx()+1 >= id.BatchSize())) {
			return n, b, nil
		}
	}
}
