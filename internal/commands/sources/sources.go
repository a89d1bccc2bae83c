// Package sources builds the per-cluster sources check, groups, doctor and repair read
// (survey.Cluster): the persisted side, replication stats and what KoP serves.
package sources

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kop-offsets/kop-offsets/internal/commands/clients"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/explain"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/survey"
)

// SourceOptions say which sides a Connect must build.
type SourceOptions struct {
	Cached          bool // build a Fetcher (KoP)
	Copies          bool // build an align.Source (KoP) for alignment
	CoordinatorWait time.Duration
	Describe        bool // describe groups (groups command)
}

// ConnectFunc builds the sources of one cluster; release frees them. Building asks the
// cluster's admin API one thing, its Pulsar name (clients.DialPulsar): a wrong name is a
// configuration error (exit 2) like the others; a cluster that does not answer is not an
// error here but the source's Down, which the run reports. Nothing else is read yet.
type ConnectFunc func(cl config.Cluster, so SourceOptions) (c survey.Cluster, release func(), err error)

// BuildSources resolves the clusters and builds their sources (ConnectFunc). Errors are exit 2.
func BuildSources(clusters func() ([]config.Cluster, error), connect ConnectFunc, so SourceOptions) ([]survey.Cluster, func(), error) {
	cls, err := clusters()
	if err != nil {
		return nil, nil, err
	}
	var out []survey.Cluster
	var closers []func()
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	for _, cl := range cls {
		c, closeFn, err := connect(cl, so)
		if err != nil {
			closeAll()
			return nil, nil, cmdutil.ConfigError(err)
		}
		out = append(out, c)
		if closeFn != nil {
			closers = append(closers, closeFn)
		}
	}
	return out, closeAll, nil
}

// FactoryConnect builds real sources from the Factory: a pulsarx.Reader and Admin for the
// persisted side and replication stats, kadm for KoP.
func FactoryConnect(f *cmdutil.Factory) ConnectFunc {
	return func(cl config.Cluster, so SourceOptions) (survey.Cluster, func(), error) {
		ps, err := clients.DialPulsar(f, cl, true)
		if err != nil {
			return survey.Cluster{}, nil, err
		}
		pc := ps.Client
		closers := []func(){pc.Close}
		c := survey.Cluster{
			Name: cl.Name, KafkaNamespace: cl.KafkaNamespace,
			Reader:      ps.Reader,
			Replication: survey.AdminReplication{Admin: ps.Admin, OffsetsTopic: cl.OffsetsTopic(), Names: ps.Names},
			Owner:       partitionOwner(ps.Admin, cl),
			URLs:        explain.URLs(cl),
			FromFlags:   cl.FromFlags,
		}
		if ps.Down != nil {
			c.Down = ps.Down
		}
		if so.Cached || so.Describe {
			kc, err := f.KafkaClient(cl, kop.ClientOpts(f.Flags.Timeout)...)
			if err != nil {
				pc.Close()
				return survey.Cluster{}, nil, err
			}
			closers = append(closers, kc.Close)
			c.Fetcher = &kop.Fetcher{Admin: kadm.NewClient(kc), Client: kc, RequestTimeout: f.Flags.Timeout, CoordinatorWait: so.CoordinatorWait, Describe: so.Describe}
		}
		if so.Copies {
			c.Copies = clients.DataCopies(f, cl)
		}
		return c, func() {
			for _, fn := range closers {
				fn()
			}
		}, nil
	}
}

// partitionOwner names the broker owning an offsets partition's bundle from the brokers'
// ownership lists (pulsarx.Owners): it never looks a topic up, which would make a broker
// take the bundle.
func partitionOwner(admin *pulsarx.Admin, cl config.Cluster) func(context.Context, int32) (string, error) {
	owners := pulsarx.NewOwners(admin, cl.Name)
	return func(ctx context.Context, p int32) (string, error) {
		b, err := admin.BundleForTopic(ctx, pulsarx.PartitionTopic(cl.OffsetsTopic(), p))
		if err != nil {
			return "", err
		}
		o, ok, err := owners.Owner(ctx, cl.Tenant+"/"+cl.MetadataNamespace, b.Range)
		if err != nil || !ok {
			return "", err
		}
		return o.Broker, nil
	}
}
