// Package session wires a reload session to one target cluster (planner, executor, the KoP
// listeners of every cluster) and guards its writes: the writer lease and the audit trail
// (--no-lease, --lease-*, --audit-*).
package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/audit"
	"github.com/kop-offsets/kop-offsets/internal/commands/clients"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/connect"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/lease"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/reload"
)

// Session is a Planner and an Executor wired to one target cluster, plus the KoP
// listeners of every cluster for the activity of the groups.
type Session struct {
	Planner  *reload.Planner
	Executor *reload.Executor
	Close    func()
	// Lease is the target's writer lease; nil with --no-lease. BeforeWrite takes it.
	Lease *lease.Lease

	audit *audit.File
	topic *audit.Topic
	who   audit.Who
	logf  func(string, ...any)
}

// Func builds the Session of target; all are every configured cluster (target
// included), whose KoP listeners are asked whether the affected groups are live.
type Func func(target config.Cluster, all []config.Cluster) (*Session, error)

// Ref is the reload.ClusterRef of a configured cluster.
func Ref(cl config.Cluster) reload.ClusterRef {
	return reload.ClusterRef{Name: cl.Name, Tenant: cl.Tenant, MetadataNamespace: cl.MetadataNamespace, KafkaNamespace: cl.KafkaNamespace}
}

// WriteSetup is what the RunE of a writing command (reload, repair) resolves after its own
// flags: the --no-lease/--audit-* flags w are checked (a usage error), -o is resolved, and
// the sessions log through the Factory's logger at debug level (--verbose).
func WriteSetup(f *cmdutil.Factory, w Writes) (output.Format, Func, error) {
	if err := w.Validate(); err != nil {
		return "", nil, err
	}
	format, err := f.OutputFormat(output.StandardSpec)
	if err != nil {
		return "", nil, err
	}
	return format, NewSessionFunc(f, func(format string, a ...any) {
		f.Logger().Debug(fmt.Sprintf(format, a...))
	}, w), nil
}

// NewSessionFunc returns the Func of the real clients built from f: pulsarx.Admin
// for the admin API, a non-durable pulsarx.Reader for the offsets topic, kadm for the KoP
// listeners (one per cluster that has kafkaBootstrap). The executor's admin takes the
// target's writer lease before an unload and records every write in the audit trail, as
// w says (default DefaultWrites).
func NewSessionFunc(f *cmdutil.Factory, logf func(string, ...any), w ...Writes) Func {
	writes := DefaultWrites()
	if len(w) > 0 {
		writes = w[0]
	}
	return func(target config.Cluster, all []config.Cluster) (*Session, error) {
		var closers []func()
		closeAll := func() {
			for i := len(closers) - 1; i >= 0; i-- {
				closers[i]()
			}
		}
		ps, err := clients.DialPulsar(f, target, false)
		if err != nil {
			return nil, err
		}
		adm, pc, rd := ps.Admin, ps.Client, ps.Reader
		closers = append(closers, pc.Close)
		ds := map[string]reload.GroupDescriber{}
		var fetcher reload.OffsetFetcher
		// Offsets replicated from another cluster are translated through both clusters'
		// KoP listeners before anything is unloaded (never skip).
		aligner := &align.Aligner{Sources: map[string]align.Source{}}
		for _, cl := range all {
			kc, err := f.KafkaClient(cl)
			if err != nil {
				if errors.Is(err, connect.ErrNotConfigured) {
					ds[cl.Name] = nil
					continue
				}
				closeAll()
				return nil, err
			}
			closers = append(closers, kc.Close)
			aligner.Sources[cl.Name] = clients.DataCopies(f, cl)
			kg := kop.KafkaGroups{Admin: kadm.NewClient(kc), Client: kc, KafkaNamespace: cl.KafkaNamespace}
			ds[cl.Name] = kg
			if cl.Name == target.Name {
				fetcher = kg
			}
		}
		ref := Ref(target)
		s := &Session{
			Planner:  &reload.Planner{Cluster: ref, Admin: adm, Reader: rd, Describers: ds, Fetcher: fetcher, Aligner: aligner},
			Executor: &reload.Executor{Cluster: ref, Admin: adm, Fetcher: fetcher, Reader: rd, Log: logf},
			Close:    closeAll,
			logf:     logf,
		}
		s.Guard(writes, target, lease.Pulsar{Client: pc, Admin: adm}, audit.PulsarPublisher(pc))
		return s, nil
	}
}

// NotAnswering marks cluster, a peer of the target that did not answer earlier in the run,
// as down for this session: its groups' activity is unknown and reads of its data copies
// fail at once with err, so that the plan and its re-plan do not wait on it again.
func (s *Session) NotAnswering(cluster string, err error) {
	if _, ok := s.Planner.Describers[cluster]; ok {
		s.Planner.Describers[cluster] = notAnswering{err}
	}
	if a, ok := s.Planner.Aligner.(*align.Aligner); ok {
		if _, ok := a.Sources[cluster]; ok {
			a.Sources[cluster] = align.Unreachable{Cluster: cluster, Err: err}
		}
	}
}

// notAnswering is the GroupDescriber of a cluster that did not answer: no group described.
type notAnswering struct{ err error }

func (n notAnswering) DescribeGroups(context.Context, []string) (map[string]reload.GroupActivity, error) {
	return nil, fmt.Errorf("not asked: %w", n.err)
}
