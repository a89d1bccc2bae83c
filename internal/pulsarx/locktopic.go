package pulsarx

import (
	"context"
	"net/http"
)

// CreateNamespace creates namespace ("tenant/ns") with no policies: the broker replicates
// it to its own cluster only. An existing namespace is not an error.
func (a *Admin) CreateNamespace(ctx context.Context, namespace string) error {
	err := a.do(ctx, "create namespace", namespace, func(cctx context.Context) error {
		return a.client.Namespaces().CreateNamespaceWithContext(cctx, namespace)
	})
	if isStatus(err, http.StatusConflict) {
		return nil
	}
	return err
}

// CreateTopic creates a non-partitioned topic. An existing topic is not an error.
func (a *Admin) CreateTopic(ctx context.Context, topic string) error {
	const op = "create topic"
	tn, err := a.topicName(op, topic)
	if err != nil {
		return err
	}
	err = a.do(ctx, op, topic, func(cctx context.Context) error {
		return a.client.Topics().CreateWithContext(cctx, *tn, 0)
	})
	if isStatus(err, http.StatusConflict) {
		return nil
	}
	return err
}

// Publisher is one producer connected to a topic, as topic stats show it.
type Publisher struct {
	Name           string
	Address        string
	ConnectedSince string
	AccessMode     string
	// Metadata are the producer's properties.
	Metadata map[string]string
}

// Publishers lists the producers connected to a non-partitioned topic.
func (a *Admin) Publishers(ctx context.Context, topic string) ([]Publisher, error) {
	st, err := a.topicStats(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := make([]Publisher, 0, len(st.Publishers))
	for _, p := range st.Publishers {
		out = append(out, Publisher{Name: p.ProducerName, Address: p.Address, ConnectedSince: p.ConnectedSince,
			AccessMode: string(p.AccessModel), Metadata: p.Metadata})
	}
	return out, nil
}
