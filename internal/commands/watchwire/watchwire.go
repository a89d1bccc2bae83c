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
	"github.com/twmb/franz-go/pkg/kadm"

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
)

// Build is what Clusters builds besides the followers (watch's flags).
type Build struct {
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

// Clusters builds the real clients of watch from f: a pulsarx.Reader (loader view) and
// Admin per cluster, kadm for KoP, and with Repair a reload session (Planner, Executor) per
// selected cluster (its planner asks every cluster's activity: reload refuses groups of
// unknown activity on the cluster written to, and live ones there under RefuseLive). watch
// and sync setup's seed use it. release closes the clients; on an error nothing is left open.
func Clusters(f *cmdutil.Factory, sel, all []config.Cluster, b Build) (out []watch.Cluster, release func(), err error) {
	if b.Sync && len(sel) < 2 {
		return nil, nil, cmdutil.UsageErrorf("--sync needs two clusters or more to sync between, got %d", len(sel))
	}
	w := &wiring{f: f, all: all, b: b}
	defer func() {
		if err != nil {
			w.release()
		}
	}()
	if b.KeepTranslations || b.Sync {
		w.copies = dataCopies(f, all)
	}
	var sites []offsetsync.Site
	for _, cl := range sel {
		wc, site, err := w.cluster(cl)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, wc)
		if b.Sync {
			sites = append(sites, site)
		}
	}
	if b.Sync {
		ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(f.Flags.Timeout, 30*time.Second))
		defer cancel()
		if err := syncRefusal(offsetsync.Check(ctx, sites)); err != nil {
			return nil, nil, err
		}
	}
	return out, w.release, nil
}

// syncRefusal is the error with which --sync refuses the deployment steps found, nil when
// they allow it. A cluster whose replication could not be read is exit 3, as in sync
// setup: the deployment is unknown, not found wrong.
func syncRefusal(steps []offsetsync.SetupStep) error {
	err := offsetsync.Refusal(steps)
	switch {
	case err == nil:
		return nil
	case slices.ContainsFunc(steps, func(st offsetsync.SetupStep) bool { return st.Error != "" }):
		return cmdutil.UnreachableError(err)
	default:
		return cmdutil.DriftError(err)
	}
}

// wiring builds the clusters of one Clusters call and keeps what they must close.
type wiring struct {
	f       *cmdutil.Factory
	all     []config.Cluster
	b       Build
	copies  map[string]align.Source
	closers []func()
}

// release closes what was built, the last first.
func (w *wiring) release() {
	for i := len(w.closers) - 1; i >= 0; i-- {
		w.closers[i]()
	}
}

// cluster builds one selected cluster's follower and, with Sync, its site for the
// deployment check.
func (w *wiring) cluster(cl config.Cluster) (watch.Cluster, offsetsync.Site, error) {
	ps, err := clients.DialPulsar(w.f, cl, true)
	if err != nil {
		return watch.Cluster{}, offsetsync.Site{}, cmdutil.ConfigError(err)
	}
	w.closers = append(w.closers, ps.Client.Close)
	wc := watch.Cluster{
		Name: cl.Name, KafkaNamespace: cl.KafkaNamespace,
		Tailer:      ps.Reader,
		Replication: survey.AdminReplication{Admin: ps.Admin, OffsetsTopic: cl.OffsetsTopic(), Names: ps.Names},
	}
	if err := w.kafka(cl, ps, &wc); err != nil {
		return watch.Cluster{}, offsetsync.Site{}, err
	}
	var site offsetsync.Site
	if w.b.Sync {
		if site, err = w.sync(cl, ps, &wc); err != nil {
			return watch.Cluster{}, offsetsync.Site{}, err
		}
	}
	if w.b.Repair {
		if err := w.repair(cl, &wc); err != nil {
			return watch.Cluster{}, offsetsync.Site{}, err
		}
	}
	if w.b.KeepTranslations {
		w.keep(cl, ps, &wc)
	}
	return wc, site, nil
}

// kafka builds the KoP side of wc: the fetcher and, with Sync, the audited committer and
// the describer. A cluster without kafkaBootstrap has the persisted side only.
func (w *wiring) kafka(cl config.Cluster, ps *clients.PulsarSide, wc *watch.Cluster) error {
	kc, err := w.f.KafkaClient(cl, kop.ClientOpts(w.f.Flags.Timeout)...)
	switch {
	case errors.Is(err, connect.ErrNotConfigured):
		return nil
	case err != nil:
		return cmdutil.ConfigError(err)
	}
	w.closers = append(w.closers, kc.Close)
	ka := kadm.NewClient(kc)
	wc.Fetcher = &kop.Fetcher{Admin: ka, Client: kc, RequestTimeout: w.f.Flags.Timeout, CoordinatorWait: w.b.CoordinatorWait}
	if !w.b.Sync {
		return nil
	}
	// Every commit and delete sent is recorded (--audit-file, --audit-topic).
	ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(w.f.Flags.Timeout, 30*time.Second))
	defer cancel()
	cm, closeTrail, err := w.b.Writes.SyncTrail(ctx, cl, kop.Committer{Admin: ka}, audit.PulsarPublisher(ps.Client), func(format string, a ...any) {
		w.b.Logger.Warn(fmt.Sprintf(format, a...), "cluster", cl.Name)
	})
	if err != nil {
		return err
	}
	w.closers = append(w.closers, closeTrail)
	wc.Committer = cm
	wc.Members = kop.KafkaGroups{Admin: ka, KafkaNamespace: cl.KafkaNamespace}
	return nil
}

// sync gives wc the data copies and the writer lease --sync needs and returns its site.
func (w *wiring) sync(cl config.Cluster, ps *clients.PulsarSide, wc *watch.Cluster) (offsetsync.Site, error) {
	if wc.Committer == nil {
		return offsetsync.Site{}, cmdutil.ConfigError(fmt.Errorf("cluster %s: --sync commits through KoP: kafkaBootstrap is not configured", cl.Name))
	}
	wc.Data = w.copies[cl.Name]
	if !w.b.Writes.NoLease {
		// Held while this process syncs: a second replica waits for it.
		wc.SyncLease = w.lease(cl, ps)
	}
	return offsetsync.Site{Name: cl.Name, PulsarName: cl.PulsarName(), OffsetsTopic: cl.OffsetsTopic(), Admin: ps.Admin}, nil
}

// repair gives wc a reload session (--repair).
func (w *wiring) repair(cl config.Cluster, wc *watch.Cluster) error {
	sess, err := session.NewSessionFunc(w.f, func(format string, a ...any) {
		w.b.Logger.Debug(fmt.Sprintf(format, a...), "cluster", cl.Name)
	}, w.b.Writes)(cl, w.all)
	if err != nil {
		return cmdutil.ConfigError(err)
	}
	w.closers = append(w.closers, sess.Close)
	sess.Executor.Wait = w.b.Wait
	// The writer lease is taken before a cycle's first unload and given back after its
	// last (watch.GuardedReloader), never for the process's lifetime.
	rs := watch.NewReloadSession(sess.Planner, sess.Executor, w.f.Flags.Timeout)
	rs.Planner.RefuseLive = w.b.RefuseLive
	wc.Reloader = watch.GuardedReloader{Reloader: rs, Guard: sess}
	return nil
}

// keep gives wc a keeper of translated commits (--keep-translations).
func (w *wiring) keep(cl config.Cluster, ps *clients.PulsarSide, wc *watch.Cluster) {
	kw := &keepWriter{client: ps.Client, reader: ps.Reader, topic: cl.OffsetsTopic()}
	w.closers = append(w.closers, kw.Close)
	wc.Keeper = &standby.Keeper{Cluster: cl.Name, KafkaNamespace: cl.KafkaNamespace, Sources: w.copies, Writer: kw, MaxMessages: w.b.AlignmentMax}
	if !w.b.Writes.NoLease {
		// Taken for each cycle's keeping and given back after it: a failover or repair can
		// write between two cycles; a sync (which holds it) is never written over.
		wc.KeepLease = w.lease(cl, ps)
	}
}

// lease is cl's writer lease.
func (w *wiring) lease(cl config.Cluster, ps *clients.PulsarSide) *lease.Lease {
	return &lease.Lease{Cluster: cl.Name, Topic: w.b.Writes.TopicOf(cl), Broker: lease.Pulsar{Client: ps.Client, Admin: ps.Admin}, Self: audit.Self()}
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
