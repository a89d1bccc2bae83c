package check

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/connect"
)

// FactoryProber probes endpoints with the Factory's client constructors.
type FactoryProber struct{ F *cmdutil.Factory }

// Admin lists the Pulsar clusters: GET /admin/v2/clusters.
func (p *FactoryProber) Admin(ctx context.Context, cl config.Cluster) (string, error) {
	c, err := p.F.AdminClient(cl)
	if err != nil {
		return "", err
	}
	names, err := c.Clusters().ListWithContext(ctx)
	if err != nil {
		return "", fmt.Errorf("GET /admin/v2/clusters: %w", err)
	}
	return "pulsar clusters: " + strings.Join(names, ","), nil
}

// Pulsar looks up the partitioned metadata of the offsets topic over the binary protocol.
// It creates no producer, consumer or reader.
func (p *FactoryProber) Pulsar(ctx context.Context, cl config.Cluster) (string, error) {
	if err := connect.DialService(ctx, cl.ServiceURL, connect.DefaultDialTimeout); err != nil {
		return "", err
	}
	c, err := p.F.PulsarClient(cl)
	if err != nil {
		return "", err
	}
	type res struct {
		parts []string
		err   error
	}
	ch := make(chan res, 1)
	go func() {
		// Close only after the lookup returned: the client bounds it by its operation timeout.
		defer c.Close()
		parts, err := c.TopicPartitions(cl.OffsetsTopic())
		ch <- res{parts, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return "", fmt.Errorf("lookup %s: %w", cl.OffsetsTopic(), r.err)
		}
		if len(r.parts) == 1 && !strings.Contains(r.parts[0], "-partition-") {
			return "offsets topic is not partitioned (wrong tenant or metadataNamespace?)", nil
		}
		return fmt.Sprintf("offsets topic: %d partitions", len(r.parts)), nil
	case <-ctx.Done():
		return "", fmt.Errorf("lookup %s: %w", cl.OffsetsTopic(), ctx.Err())
	}
}

// Kafka sends a Metadata request (ApiVersions and SASL first) to the bootstrap servers.
func (p *FactoryProber) Kafka(ctx context.Context, cl config.Cluster) (string, error) {
	c, err := p.F.KafkaClient(cl)
	if err != nil {
		return "", err
	}
	defer c.Close()
	md, err := kadm.NewClient(c).BrokerMetadata(ctx)
	if err != nil {
		return "", fmt.Errorf("metadata: %w", err)
	}
	detail := fmt.Sprintf("%d brokers", len(md.Brokers))
	if md.Cluster != "" {
		detail += ", cluster id " + md.Cluster
	}
	return detail, nil
}
