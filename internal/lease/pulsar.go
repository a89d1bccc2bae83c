package lease

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// Pulsar is the Broker of a Pulsar cluster: the lease is a producer with
// ProducerAccessModeExclusive on the lock topic, its metadata naming the holder.
type Pulsar struct {
	Client pulsar.Client
	Admin  *pulsarx.Admin
}

// Prepare implements Broker. The namespace is created when missing (the tenant-admin
// permission the bundle unloads already need); a namespace replicated to more than one
// cluster is refused: the lease must belong to one cluster.
func (p Pulsar) Prepare(ctx context.Context, topic string) error {
	tn, err := utils.GetTopicName(topic)
	if err != nil {
		return fmt.Errorf("lock topic: %w", err)
	}
	if tn.GetPartitionIndex() >= 0 {
		return fmt.Errorf("lock topic must not be a partition of a topic")
	}
	ns := tn.GetTenant() + "/" + tn.GetNamespace()
	clusters, err := p.Admin.NamespaceReplicationClusters(ctx, ns)
	if errors.Is(err, pulsarx.ErrNotFound) {
		if err := p.Admin.CreateNamespace(ctx, ns); err != nil {
			return fmt.Errorf("create namespace %s (replicated to this cluster only) or pass --no-lease: %w", ns, err)
		}
		clusters, err = p.Admin.NamespaceReplicationClusters(ctx, ns)
	}
	if err != nil {
		return err
	}
	if len(clusters) > 1 {
		return fmt.Errorf("namespace %s is replicated to %s: a writer lease must be held in one cluster only; "+
			"use a namespace replicated to this cluster alone (--lease-topic)", ns, strings.Join(clusters, ", "))
	}
	exists, err := p.Admin.TopicExists(ctx, topic)
	if err != nil {
		return err
	}
	if !exists {
		if err := p.Admin.CreateTopic(ctx, topic); err != nil {
			return fmt.Errorf("create the non-partitioned topic %s or pass --no-lease: %w", topic, err)
		}
	}
	return nil
}

// Claim implements Broker.
func (p Pulsar) Claim(_ context.Context, topic string, props map[string]string) (func(), error) {
	pr, err := p.Client.CreateProducer(pulsar.ProducerOptions{
		Topic:              topic,
		Name:               fmt.Sprintf("kop-offsets-%s-%s", props[keyHost], props[keyPID]),
		Properties:         props,
		ProducerAccessMode: pulsar.ProducerAccessModeExclusive,
		DisableBatching:    true,
	})
	if err != nil {
		// The broker answers ProducerFenced to a second exclusive producer, ProducerBusy to
		// a shared one meeting an exclusive one.
		if msg := err.Error(); strings.Contains(msg, "ProducerFenced") || strings.Contains(msg, "ProducerBusy") {
			return nil, fmt.Errorf("%w: %w", ErrBusy, err)
		}
		return nil, err
	}
	return pr.Close, nil
}

// Holders implements Broker.
func (p Pulsar) Holders(ctx context.Context, topic string) ([]Holder, error) {
	pubs, err := p.Admin.Publishers(ctx, topic)
	if err != nil {
		return nil, err
	}
	var out []Holder
	for _, pub := range pubs {
		h, ok := HolderFrom(pub.Metadata)
		if !ok {
			h.Producer = fmt.Sprintf("producer %s from %s, connected since %s", pub.Name, pub.Address, pub.ConnectedSince)
		}
		out = append(out, h)
	}
	return out, nil
}
