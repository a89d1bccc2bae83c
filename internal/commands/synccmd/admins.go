package synccmd

import (
	"context"

	"github.com/kop-offsets/kop-offsets/internal/commands/clients"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/offsetsync"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// factoryAdmins builds a pulsarx.Admin per cluster.
func factoryAdmins(f *cmdutil.Factory) func(cls []config.Cluster) (map[string]offsetsync.Replication, func(), error) {
	return func(cls []config.Cluster) (map[string]offsetsync.Replication, func(), error) {
		out := map[string]offsetsync.Replication{}
		for _, cl := range cls {
			a, err := clients.NewAdmin(cl, f.Flags.Timeout)
			if err != nil {
				return nil, nil, cmdutil.ConfigError(err)
			}
			out[cl.Name] = admin{a}
		}
		return out, func() {}, nil
	}
}

// admin is a pulsarx.Admin that lists its offsets topic's replicators.
type admin struct{ *pulsarx.Admin }

// Replicators implements Replicators: the remotes any partition of the offsets topic
// replicates to.
func (a admin) Replicators(ctx context.Context, offsetsTopic string) (map[string]bool, error) {
	n, err := a.PartitionedTopicPartitions(ctx, offsetsTopic)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for p := range n {
		st, err := a.ReplicationStats(ctx, pulsarx.PartitionTopic(offsetsTopic, p))
		if err != nil {
			return nil, err
		}
		for remote := range st {
			out[remote] = true
		}
	}
	return out, nil
}
