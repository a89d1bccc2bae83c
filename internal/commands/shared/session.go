package shared

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/audit"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/connect"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
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

// SessionFunc builds the Session of target; all are every configured cluster (target
// included), whose KoP listeners are asked whether the affected groups are live.
type SessionFunc func(target config.Cluster, all []config.Cluster) (*Session, error)

// Ref is the reload.ClusterRef of a configured cluster.
func Ref(cl config.Cluster) reload.ClusterRef {
	return reload.ClusterRef{Name: cl.Name, Tenant: cl.Tenant, MetadataNamespace: cl.MetadataNamespace, KafkaNamespace: cl.KafkaNamespace}
}

// WriteSetup is what the RunE of a writing command (reload, repair) resolves after its own
// flags: the --no-lease/--audit-* flags w are checked (a usage error), -o is resolved, and
// the sessions log through the Factory's logger at debug level (--verbose).
func WriteSetup(f *cmdutil.Factory, w Writes) (output.Format, SessionFunc, error) {
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

// NewSessionFunc returns the SessionFunc of the real clients built from f: pulsarx.Admin
// for the admin API, a non-durable pulsarx.Reader for the offsets topic, kadm for the KoP
// listeners (one per cluster that has kafkaBootstrap). The executor's admin takes the
// target's writer lease before an unload and records every write in the audit trail, as
// w says (default DefaultWrites).
func NewSessionFunc(f *cmdutil.Factory, logf func(string, ...any), w ...Writes) SessionFunc {
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
		ps, err := DialPulsar(f, target, false)
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
			aligner.Sources[cl.Name] = DataCopies(f, cl)
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

// Target resolves the one cluster a writing command works on (--cluster; the only
// configured cluster when there is one) and returns it with every configured cluster.
func Target(f *cmdutil.Factory) (config.Cluster, []config.Cluster, error) {
	cfg, err := f.Config()
	if err != nil {
		return config.Cluster{}, nil, err
	}
	sel, err := f.Clusters()
	if err != nil {
		return config.Cluster{}, nil, err
	}
	if len(sel) != 1 {
		return config.Cluster{}, nil, cmdutil.UsageErrorf("reload writes to one cluster: select it with --cluster NAME (configured: %s)", strings.Join(config.Names(cfg.Clusters), ", "))
	}
	all, err := allClusters(f, sel)
	return sel[0], all, err
}

// ErrNeedConfirmation means a writing command has neither --yes nor a terminal to ask on.
var ErrNeedConfirmation = errors.New("this command writes to the clusters (its plan says what): pass --yes to confirm, or --dry-run to only see the plan (stdin/stdout are not a terminal, so it cannot ask)")

// CheckConfirmable fails with a usage error (exit 2) before anything is contacted when a
// write would need a confirmation nobody can give.
func CheckConfirmable(ios *iostreams.IOStreams, dryRun, yes bool) error {
	if dryRun || yes || ios.CanPrompt() {
		return nil
	}
	return cmdutil.UsageError(ErrNeedConfirmation)
}

// Confirm asks question on the terminal (stderr) and reads the answer from stdin: only
// "y" or "yes" confirms.
func Confirm(ios *iostreams.IOStreams, question string) (bool, error) {
	fmt.Fprintf(ios.ErrOut, "%s [y/N] ", question)
	var line strings.Builder
	buf := make([]byte, 1)
	for {
		n, err := ios.In.Read(buf)
		if n > 0 {
			if buf[0] == '\n' {
				break
			}
			line.WriteByte(buf[0])
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return false, err
		}
	}
	a := strings.ToLower(strings.TrimSpace(line.String()))
	return a == "y" || a == "yes", nil
}

// Targets returns the clusters a command selected (--cluster; default all) with every
// configured cluster.
func Targets(f *cmdutil.Factory) func() ([]config.Cluster, []config.Cluster, error) {
	return func() ([]config.Cluster, []config.Cluster, error) {
		sel, err := f.Clusters()
		if err != nil {
			return nil, nil, err
		}
		all, err := allClusters(f, sel)
		return sel, all, err
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
