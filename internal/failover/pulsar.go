package failover

import (
	"context"
	"encoding/base64"
	"fmt"
	"sync"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/kop-offsets/kop-offsets/internal/check"
	"github.com/kop-offsets/kop-offsets/internal/offsets"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/reload"
	"github.com/kop-offsets/kop-offsets/internal/testkit"
)

// PulsarWriter is the LocalWriter of a cluster's offsets topic: one message per request, as
// KoP writes it (the group's key, one record batch), with replication disabled so the record
// never reaches another cluster.
type PulsarWriter struct {
	Client interface {
		CreateProducer(pulsar.ProducerOptions) (pulsar.Producer, error)
	}
	OffsetsTopic string // persistent://<tenant>/<ns>/__consumer_offsets
	Partitions   int32

	mu        sync.Mutex
	producers map[int32]pulsar.Producer
}

// WriteLocal implements LocalWriter.
func (w *PulsarWriter) WriteLocal(ctx context.Context, commits []testkit.OffsetCommit) error {
	if len(commits) == 0 {
		return nil
	}
	key, value, err := testkit.EncodeRequest(commits, timeNow())
	if err != nil {
		return err
	}
	p := offsets.PartitionFor(commits[0].Group, w.Partitions)
	prod, err := w.producer(p)
	if err != nil {
		return err
	}
	_, err = prod.Send(ctx, &pulsar.ProducerMessage{Key: base64.StdEncoding.EncodeToString(key), Payload: value, DisableReplication: true})
	if err != nil {
		return fmt.Errorf("send to %s: %w", pulsarx.PartitionTopic(w.OffsetsTopic, p), err)
	}
	return nil
}

func (w *PulsarWriter) producer(p int32) (pulsar.Producer, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if prod, ok := w.producers[p]; ok {
		return prod, nil
	}
	topic := pulsarx.PartitionTopic(w.OffsetsTopic, p)
	prod, err := w.Client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		return nil, fmt.Errorf("producer for %s: %w", topic, err)
	}
	if w.producers == nil {
		w.producers = map[int32]pulsar.Producer{}
	}
	w.producers[p] = prod
	return prod, nil
}

// Close closes the producers.
func (w *PulsarWriter) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.producers {
		p.Close()
	}
	w.producers = nil
}

// AdminBacklog is the Backlog of the source's replicators toward one target.
type AdminBacklog struct {
	Replication check.ReplicationSource
	Target      string
}

// Backlog implements Backlog.
func (a AdminBacklog) Backlog(ctx context.Context, p int32) (int64, error) {
	st, err := a.Replication.OutboundReplication(ctx, p)
	if err != nil {
		return 0, err
	}
	return st[a.Target].Backlog, nil
}

// SessionReloader is the Reloader of a reload Planner and Executor of the target.
type SessionReloader struct {
	Planner  *reload.Planner
	Executor *reload.Executor
}

// Plan implements Reloader.
func (s SessionReloader) Plan(ctx context.Context, groups []string, intended map[reload.IntendedKey]int64) (*reload.Plan, error) {
	s.Planner.Intended = intended
	return s.Planner.Plan(ctx, reload.Request{Groups: groups})
}

// Execute implements Reloader.
func (s SessionReloader) Execute(ctx context.Context, plan *reload.Plan) *reload.Execution {
	return s.Executor.Execute(ctx, plan, plan.Executable())
}
