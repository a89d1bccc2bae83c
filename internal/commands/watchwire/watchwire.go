// Package watchwire builds the clusters watch follows (and sync setup seeds) from the
// Factory: tailers, fetchers and, as watch's flags ask, repair sessions, keepers and the
// sync's committers, leases and deployment check.
package watchwire

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/audit"
	"github.com/kop-offsets/kop-offsets/internal/commands/clients"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/session"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/connect"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/lease"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/offsetsync"
	"github.com/kop-offsets/kop-offsets/internal/standby"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/watch"
	"github.com/twmb/franz-go/pkg/kadm"
)

// WatchBuild is what WatchClusters builds besides the followers (watch's flags).
type WatchBuild struct {
	// Repair: a reload session per selected cluster (--repair, --refuse-live, --wait).
	Repair, RefuseLive    bool
	Wait, CoordinatorWait time.Duration
	// KeepTranslations: a keeper per selected cluster (--keep-translations).
	KeepTranslations bool
	AlignmentMax     int64
	// Sync: a committer (audited), a describer, the data copies and the writer lease per
	// selected cluster, and the deployment checked (refused while the offsets topic
	// replicates between them).
	Sync   bool
	Writes session.Writes
	Logger *slog.Logger
}

// WatchClusters builds the real clients of watch from f: a pulsarx.Reader (loader view)
// and Admin per cluster, kadm for KoP, and with Repair a reload session (Planner,
// Executor) per selected cluster (its planner asks every cluster's activity: reload
// refuses groups of unknown activity on the cluster written to, and live ones there under
// RefuseLive). watch and sync setup's seed use it. release closes the clients.
func WatchClusters(f *cmdutil.Factory, sel, all []config.Cluster, b WatchBuild) ([]watch.Cluster, func(), error) {
	o := &b
	{
		var closers []func()
		release := func() {
			for i := len(closers) - 1; i >= 0; i-- {
				closers[i]()
			}
		}
		var out []watch.Cluster
		var copies map[string]align.Source
		if o.KeepTranslations || o.Sync {
			copies = dataCopies(f, all)
		}
		if o.Sync && len(sel) < 2 {
			return nil, nil, cmdutil.UsageErrorf("--sync needs two clusters or more to sync between, got %d", len(sel))
		}
		var sites []offsetsync.Site
		for _, cl := range sel {
			ps, err := clients.DialPulsar(f, cl, true)
			if err != nil {
				release()
				return nil, nil, cmdutil.ConfigError(err)
			}
			closers = append(closers, ps.Client.Close)
			wc := watch.Cluster{
				Name: cl.Name, KafkaNamespace: cl.KafkaNamespace,
				Tailer:      ps.Reader,
				Replication: survey.AdminReplication{Admin: ps.Admin, OffsetsTopic: cl.OffsetsTopic(), Names: ps.Names},
			}
			kc, err := f.KafkaClient(cl, kop.ClientOpts(f.Flags.Timeout)...)
			switch {
			case errors.Is(err, connect.ErrNotConfigured):
				// No kafkaBootstrap: the persisted side only.
			case err != nil:
				release()
				return nil, nil, cmdutil.ConfigError(err)
			default:
				closers = append(closers, kc.Close)
				ka := kadm.NewClient(kc)
				wc.Fetcher = &kop.Fetcher{Admin: ka, Client: kc, RequestTimeout: f.Flags.Timeout, CoordinatorWait: o.CoordinatorWait}
				if o.Sync {
					// Every commit and delete sent is recorded (--audit-file, --audit-topic).
					actx, acancel := context.WithTimeout(context.Background(), cmp.Or(f.Flags.Timeout, 30*time.Second))
					cm, closeTrail, err := o.Writes.SyncTrail(actx, cl, kop.Committer{Admin: ka}, audit.PulsarPublisher(ps.Client), func(format string, a ...any) {
						o.Logger.Warn(fmt.Sprintf(format, a...), "cluster", cl.Name)
					})
					acancel()
					if err != nil {
						release()
						return nil, nil, err
					}
					closers = append(closers, closeTrail)
					wc.Committer = cm
					wc.Members = kop.KafkaGroups{Admin: ka, KafkaNamespace: cl.KafkaNamespace}
				}
			}
			if o.Sync {
				if wc.Committer == nil {
					release()
					return nil, nil, cmdutil.ConfigError(fmt.Errorf("cluster %s: --sync commits through KoP: kafkaBootstrap is not configured", cl.Name))
				}
				wc.Data = copies[cl.Name]
				if !o.Writes.NoLease {
					// Held while this process syncs: a second replica waits for it.
					wc.SyncLease = &lease.Lease{Cluster: cl.Name, Topic: o.Writes.TopicOf(cl), Broker: lease.Pulsar{Client: ps.Client, Admin: ps.Admin}, Self: audit.Self()}
				}
				sites = append(sites, offsetsync.Site{Name: cl.Name, PulsarName: cl.PulsarName(), OffsetsTopic: cl.OffsetsTopic(), Admin: ps.Admin})
			}
			if o.Repair {
				sess, err := session.NewSessionFunc(f, func(format string, a ...any) {
					o.Logger.Debug(fmt.Sprintf(format, a...), "cluster", cl.Name)
				}, o.Writes)(cl, all)
				if err != nil {
					release()
					return nil, nil, cmdutil.ConfigError(err)
				}
				closers = append(closers, sess.Close)
				sess.Executor.Wait = o.Wait
				// The writer lease is taken before a cycle's first unload and given back
				// after its last (watch.GuardedReloader), never for the process's lifetime.
				rs := watch.NewReloadSession(sess.Planner, sess.Executor, f.Flags.Timeout)
				rs.Planner.RefuseLive = o.RefuseLive
				wc.Reloader = watch.GuardedReloader{Reloader: rs, Guard: sess}
			}
			if o.KeepTranslations {
				w := &keepWriter{client: ps.Client, reader: ps.Reader, topic: cl.OffsetsTopic()}
				closers = append(closers, w.Close)
				wc.Keeper = &standby.Keeper{Cluster: cl.Name, KafkaNamespace: cl.KafkaNamespace, Sources: copies, Writer: w, MaxMessages: o.AlignmentMax}
				if !o.Writes.NoLease {
					// Taken for each cycle's keeping and given back after it: a failover or
					// repair can write between two cycles; a sync (which holds it) is never
					// written over.
					wc.KeepLease = &lease.Lease{Cluster: cl.Name, Topic: o.Writes.TopicOf(cl), Broker: lease.Pulsar{Client: ps.Client, Admin: ps.Admin}, Self: audit.Self()}
				}
			}
			out = append(out, wc)
		}
		if o.Sync {
			ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(f.Flags.Timeout, 30*time.Second))
			defer cancel()
			steps := offsetsync.Check(ctx, sites)
			if err := offsetsync.Refusal(steps); err != nil {
				release()
				// A cluster whose replication could not be read is 3, as in sync setup:
				// the deployment is unknown, not found wrong.
				if slices.ContainsFunc(steps, func(st offsetsync.SetupStep) bool { return st.Error != "" }) {
					return nil, nil, cmdutil.UnreachableError(err)
				}
				return nil, nil, cmdutil.DriftError(err)
			}
		}
		return out, release, nil
	}
}

// dataCopies reads every cluster's data topics through its KoP listener (clusters without
// kafkaBootstrap have none: their commits are not kept).
func dataCopies(f *cmdutil.Factory, all []config.Cluster) map[string]align.Source {
	out := map[string]align.Source{}
	for _, cl := range all {
		if len(cl.KafkaBootstrap) == 0 {
			continue
		}
		out[cl.Name] = clients.DataCopies(f, cl)
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

func (k *keepWriter) KeepAsync(ctx context.Context, cs []kop.OffsetCommit, mark loader.KeptMark, done func(error)) {
	k.mu.Lock()
	if k.w == nil {
		n, err := k.reader.Partitions(ctx)
		if err != nil {
			k.mu.Unlock()
			done(fmt.Errorf("partition count of %s: %w", k.topic, err))
			return
		}
		k.w = kop.NewWriter(k.client, k.topic, n)
	}
	w := k.w
	k.mu.Unlock()
	w.KeepAsync(ctx, cs, mark, done)
}

func (k *keepWriter) Close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.w != nil {
		k.w.Close()
	}
}
