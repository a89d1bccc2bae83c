package session

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kop-offsets/kop-offsets/internal/audit"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/lease"
	"github.com/kop-offsets/kop-offsets/internal/reload"
)

// Writes are the flags of the writer lease and of the audit trail: every writing command
// (reload, repair, watch --repair; failover with the defaults) takes a cluster's lease
// before its first write there and records each write.
type Writes struct {
	// NoLease writes without the lease (two writers may then unload one cluster at once).
	NoLease bool
	// LeaseTopic is the lock topic; "" is lease.DefaultTopic of the cluster's tenant.
	// "{tenant}" in it is replaced by the cluster's tenant.
	LeaseTopic string
	// LeaseWait is how long to keep trying while another process holds the lease.
	LeaseWait time.Duration
	// AuditFile is the JSON-lines trail; "" writes none.
	AuditFile string
	// AuditTopic, when set, is a topic of the cluster written to that receives a copy of
	// each record; "{tenant}" in it is replaced by the cluster's tenant.
	AuditTopic string
}

// DefaultWrites are the values of the flags when not given: the lease on, no wait, the
// trail at audit.DefaultFile.
func DefaultWrites() Writes {
	return Writes{AuditFile: audit.DefaultFile(os.Getenv)}
}

// BindWriteFlags binds --no-lease, --lease-topic, --audit-file and, with wait, --lease-wait
// to w (watch never waits: it tries again next cycle).
func BindWriteFlags(fl *pflag.FlagSet, w *Writes, wait bool) {
	d := DefaultWrites()
	fl.BoolVar(&w.NoLease, "no-lease", false, "write without the cluster's writer lease (another host may then unload the same cluster at once)")
	fl.StringVar(&w.LeaseTopic, "lease-topic", "", "lock topic of the writer lease, in a namespace replicated to its cluster only; {tenant} is replaced by the cluster's tenant (default persistent://<tenant>/kop-offsets/writer-lease)")
	if wait {
		fl.DurationVar(&w.LeaseWait, "lease-wait", 0, "how long to wait for the writer lease while another process holds it (0: fail at once, naming the holder)")
	}
	fl.StringVar(&w.AuditFile, "audit-file", d.AuditFile, "append a JSON line per write (unload, lookup, commit) to this file; \"\" for none")
	fl.Lookup("audit-file").DefValue = audit.DefaultFileHelp
	fl.StringVar(&w.AuditTopic, "audit-topic", "", "also publish each audit record to this topic of the cluster written to ({tenant}: the cluster's tenant); a topic that cannot be written refuses the writes")
}

// Validate checks the values of the flags (a usage error, exit 2).
func (w *Writes) Validate() error {
	if w.LeaseWait < 0 {
		return cmdutil.FlagErrorf("--lease-wait must not be negative, got %s", w.LeaseWait)
	}
	if w.NoLease && (w.LeaseTopic != "" || w.LeaseWait != 0) {
		return cmdutil.FlagErrorf("--no-lease cannot be combined with --lease-topic or --lease-wait")
	}
	return nil
}

// TopicOf is the lock topic of cl.
func (w Writes) TopicOf(cl config.Cluster) string { return w.topic(cl) }

// topic is the lock topic of cl.
func (w Writes) topic(cl config.Cluster) string {
	if w.LeaseTopic == "" {
		return lease.DefaultTopic(cl.Tenant)
	}
	return strings.ReplaceAll(w.LeaseTopic, "{tenant}", cl.Tenant)
}

// BeforeWrite opens the audit trail (file and topic) and takes the lease: a writing command
// calls it after its plan and confirmation, before the first write, so that a trail that
// cannot be written or a lease held elsewhere stops it with nothing written. Calling it
// again while the lease is held is a no-op.
func (s *Session) BeforeWrite(ctx context.Context) error {
	if s.audit != nil {
		if err := s.audit.Open(); err != nil {
			return cmdutil.ConfigError(err)
		}
	}
	if s.topic != nil {
		if err := s.topic.Open(ctx); err != nil {
			return cmdutil.ConfigError(fmt.Errorf("%w; nothing was written", err))
		}
	}
	if s.Lease != nil {
		return s.Lease.Acquire(ctx)
	}
	return nil
}

// Replan returns RunOptions.Replan for req: after BeforeWrite had to wait for the lease, it
// plans req again (the holder may have reloaded the same groups meanwhile); else it
// returns no plan and the one made before stands.
func (s *Session) Replan(req reload.Request) func(context.Context) (*reload.Plan, error) {
	return func(ctx context.Context) (*reload.Plan, error) {
		if s.Lease == nil || !s.Lease.Waited() {
			return nil, nil
		}
		return s.Planner.Plan(ctx, req)
	}
}

// AfterWrite gives the lease back (watch --repair holds it only while it writes).
func (s *Session) AfterWrite() {
	if s.Lease != nil {
		s.Lease.Release()
	}
}

// Commits wraps failover's commit writer: the lease is taken before the first request, and
// each request is recorded in the trail.
func (s *Session) Commits(w audit.CommitWriter, offsetsTopic string) audit.CommitWriter {
	return guardedCommits{s: s, w: audit.Commits{CommitWriter: w, Cluster: s.Executor.Cluster.Name, Topic: offsetsTopic,
		Reason: "failover: translated offsets", Who: s.who, Sink: s.sink(), OnError: s.onAuditError}}
}

type guardedCommits struct {
	s *Session
	w audit.CommitWriter
}

func (g guardedCommits) CommitRequests(ctx context.Context, reqs [][]kop.OffsetCommit) []kop.Sent {
	if err := g.s.BeforeWrite(ctx); err != nil {
		out := make([]kop.Sent, len(reqs))
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	return g.w.CommitRequests(ctx, reqs)
}

func (s *Session) sink() audit.Sink {
	var sinks audit.Sinks
	if s.audit != nil {
		sinks = append(sinks, s.audit)
	}
	if s.topic != nil {
		sinks = append(sinks, s.topic)
	}
	if len(sinks) == 0 {
		return audit.Discard{}
	}
	return sinks
}

// closeTrail closes the audit file and topic.
func (s *Session) closeTrail() {
	if s.audit != nil {
		_ = s.audit.Close()
	}
	if s.topic != nil {
		s.topic.Close()
	}
}

func (s *Session) onAuditError(err error) {
	if s.logf != nil {
		s.logf("audit trail: %v", err)
	}
}

// Guard wraps the executor's admin of s: UnloadBundle takes the lease (when on) and every
// unload and lookup is recorded. broker holds the target's lock topic; publish opens the
// audit topic (with --audit-topic). s.Close then gives the lease back and closes the trail
// before what it closed until now.
func (s *Session) Guard(w Writes, target config.Cluster, broker lease.Broker, publish func(context.Context, string) (audit.Publisher, error)) {
	s.guard(w, target, broker, publish)
	closeAll := s.Close
	s.Close = func() {
		s.AfterWrite()
		s.closeTrail()
		closeAll()
	}
}

func (s *Session) guard(w Writes, target config.Cluster, broker lease.Broker, publish func(context.Context, string) (audit.Publisher, error)) {
	s.who = audit.Self()
	if w.AuditFile != "" {
		s.audit = &audit.File{Path: w.AuditFile}
	}
	if w.AuditTopic != "" {
		s.topic = &audit.Topic{Name: strings.ReplaceAll(w.AuditTopic, "{tenant}", target.Tenant), New: publish}
	}
	ba := s.Executor.Admin
	if !w.NoLease {
		s.Lease = &lease.Lease{Cluster: target.Name, Topic: w.topic(target), Broker: broker,
			Self: s.who, Wait: w.LeaseWait}
		ba = lease.Admin{BundleAdmin: ba, Lease: s.Lease}
	}
	s.Executor.Admin = audit.Admin{BundleAdmin: ba, Cluster: target.Name, Who: s.who, Sink: s.sink(), OnError: s.onAuditError}
}

// SyncTrail wraps target's sync committer (watch --sync) so that each OffsetCommit and
// OffsetDelete it sends is recorded in the trail (--audit-file, and --audit-topic on target).
// The trail is opened first: one that cannot be written refuses the start, with nothing
// written. closeTrail closes it.
func (w Writes) SyncTrail(ctx context.Context, target config.Cluster, c audit.SyncCommitter, publish func(context.Context, string) (audit.Publisher, error), logf func(string, ...any)) (audit.SyncCommitter, func(), error) {
	s := &Session{logf: logf, who: audit.Self()}
	if w.AuditFile != "" {
		s.audit = &audit.File{Path: w.AuditFile}
	}
	if w.AuditTopic != "" {
		s.topic = &audit.Topic{Name: strings.ReplaceAll(w.AuditTopic, "{tenant}", target.Tenant), New: publish}
	}
	if s.audit != nil {
		if err := s.audit.Open(); err != nil {
			return nil, nil, cmdutil.ConfigError(err)
		}
	}
	if s.topic != nil {
		if err := s.topic.Open(ctx); err != nil {
			s.closeTrail()
			return nil, nil, cmdutil.ConfigError(fmt.Errorf("cluster %s: %w; nothing was written", target.Name, err))
		}
	}
	return audit.SyncCommits{SyncCommitter: c, Cluster: target.Name, Reason: "watch --sync: translated offsets", Who: s.who, Sink: s.sink(), OnError: s.onAuditError}, s.closeTrail, nil
}
