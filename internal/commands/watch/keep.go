package watch

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/shared"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// dataCopies reads every cluster's data topics through its KoP listener (clusters without
// kafkaBootstrap have none: their commits are not kept).
func dataCopies(f *cmdutil.Factory, all []config.Cluster) map[string]align.Source {
	out := map[string]align.Source{}
	for _, cl := range all {
		if len(cl.KafkaBootstrap) == 0 {
			continue
		}
		out[cl.Name] = shared.DataCopies(f, cl)
	}
	return out
}

// keepWriter is a kop.Writer for the cluster's offsets topic made at its first write, when
// the partition count is known (the cluster may be down when watch starts).
type keepWriter struct {
	client pulsar.Client
	reader interface {
		Partitions(ctx context.Context) (int32, error)
	}
	topic string

	mu sync.Mutex
	w  *kop.Writer
}

func (k *keepWriter) Keep(ctx context.Context, cs []kop.OffsetCommit, mark loader.KeptMark) (int32, pulsar.MessageID, error) {
	k.mu.Lock()
	if k.w == nil {
		n, err := k.reader.Partitions(ctx)
		if err != nil {
			k.mu.Unlock()
			return 0, nil, fmt.Errorf("partition count of %s: %w", k.topic, err)
		}
		k.w = kop.NewWriter(k.client, k.topic, n)
	}
	w := k.w
	k.mu.Unlock()
	return w.Keep(ctx, cs, mark)
}

func (k *keepWriter) Close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.w != nil {
		k.w.Close()
	}
}
