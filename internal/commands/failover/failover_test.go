package failover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/session"
	"github.com/kop-offsets/kop-offsets/internal/config"
	fo "github.com/kop-offsets/kop-offsets/internal/failover"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/lease"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/reload"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

func TestNewCmdFailoverFlags(t *testing.T) {
	tests := []clitest.FlagCase[Options]{
		{Args: []string{"--target", "wus", "--yes"}, Want: Options{To: "wus", Yes: true}},
		// --from and --to, the old spellings of --source and --target, still work.
		{Args: []string{"--from", "scus", "--to", "wus"}, Want: Options{From: "scus", To: "wus"}},
		// The writer lease and the audit trail, as for reload and repair.
		{Args: []string{"--target", "wus", "--lease-wait", "30s", "--lease-topic", "persistent://{tenant}/locks/w", "--audit-file", "/tmp/a.jsonl"},
			Want: Options{To: "wus", Writes: session.Writes{LeaseWait: 30 * time.Second, LeaseTopic: "persistent://{tenant}/locks/w", AuditFile: "/tmp/a.jsonl"}}},
		{Args: []string{"--target", "wus", "--no-lease", "--lease-wait", "1s"}, Err: "--no-lease cannot be combined"},
		{Args: []string{"--target", "wus", "--lease-wait", "-1s"}, Err: "must not be negative"},
		{Args: []string{"--source", "wus", "--target", "wus"}, Err: "name the same cluster"},
		{Args: []string{"--source", "scus"}, Err: "--target names the cluster"},
	}
	clitest.CheckFlags(t, NewCmdFailover, tests, func(got, want *Options) bool {
		if got.From != want.From || got.To != want.To || got.Yes != want.Yes {
			return false
		}
		// The default audit file depends on the environment: compared when a case names one.
		return want.Writes.AuditFile == "" || got.Writes == want.Writes
	})
}

// The writer lease held elsewhere stops failover with 3 and an audit trail that cannot be
// written with 2, nothing written, as for reload and repair (issue 32: both were 4): the
// guard runs before the first write (Session.BeforeWrite), classified as RunPlan does.
func TestBeforeWriteStopsFailover(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want outcome.Outcome
	}{
		{fmt.Errorf("writer lease: %w", &lease.HeldError{Cluster: "wus", Topic: "persistent://public/locks/w"}), outcome.Unreachable},
		{cmdutil.ConfigError(errors.New("audit file /nonexistent/a.jsonl: no such file or directory")), outcome.Usage},
	} {
		ios, _, out, _ := iostreams.Test()
		w := &countingWriter{}
		opts := &Options{IO: ios, Format: output.JSON, From: "scus", To: "wus", Yes: true,
			Config: func() (*config.Config, error) {
				return &config.Config{Clusters: []config.Cluster{{Name: "scus"}, {Name: "wus"}}}, nil
			},
			Session: func(from, to config.Cluster, _ []config.Cluster) (*Session, error) {
				return &Session{Planner: planner(t), Executor: &fo.Executor{Writer: w},
					BeforeWrite: func(context.Context) error { return tc.err }, Close: func() {}}, nil
			}}
		err := run(context.Background(), opts)
		var doc Document
		if jerr := json.Unmarshal(out.Bytes(), &doc); jerr != nil || doc.Result == nil {
			t.Fatalf("%v: document %q (%v)", tc.err, out, jerr)
		}
		if got := cmdutil.OutcomeOf(err); got != tc.want || doc.ExitCode != tc.want || w.n != 0 || len(doc.Result.Written) != 0 {
			t.Errorf("%v: exit %d (document %d), want %d; %d writes", tc.err, got, doc.ExitCode, tc.want, w.n)
		}
	}
}

// planner plans one group to write on wus: it read scus to 60, which is wus's 50.
func planner(t *testing.T) *fo.Planner {
	const topic = "persistent://public/default/topic-1"
	c := kop.OffsetCommit{Group: "g", Topic: topic, Partition: 0, Offset: 60}
	sk, wk := fakes.NewKoP(t), fakes.NewKoP(t)
	sk.Set("g", "topic-1", 0, 60)
	wk.Set("g", "topic-1", 0, 30)
	return &fo.Planner{
		From: fo.Side{Name: "scus", KafkaNamespace: "public/default", Reader: fakes.NewMemReader(8).Commit(c),
			Groups: kop.KafkaGroups{Admin: sk.Admin(t), KafkaNamespace: "public/default"}},
		To: fo.Side{Name: "wus", KafkaNamespace: "public/default", Reader: fakes.NewMemReader(8).Replicated("scus", c),
			Groups: kop.KafkaGroups{Admin: wk.Admin(t), KafkaNamespace: "public/default"}},
		Aligner: &align.Aligner{Sources: map[string]align.Source{
			"scus": fakes.MemCopies{Topics: map[string][]uint64{"topic-1": fakes.Sequence(0, 110)}},
			"wus":  fakes.MemCopies{Topics: map[string][]uint64{"topic-1": fakes.Sequence(10, 110)}},
		}},
		Backlog: noBacklog{},
	}
}

type noBacklog struct{}

func (noBacklog) Backlog(context.Context, int32) (int64, error) { return 0, nil }

// countingWriter counts the commit requests that reach it (none may).
type countingWriter struct{ n int }

func (c *countingWriter) CommitRequests(_ context.Context, reqs [][]kop.OffsetCommit) []kop.Sent {
	c.n += len(reqs)
	return make([]kop.Sent, len(reqs))
}

// A dry run whose plan refuses nothing: 0, the plan printed, nothing written, no lease taken.
func TestFailoverDryRunRefusesNothing(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	w := &countingWriter{}
	beforeWrite := 0
	opts := &Options{IO: ios, Format: output.JSON, From: "scus", To: "wus", DryRun: true,
		Config: func() (*config.Config, error) {
			return &config.Config{Clusters: []config.Cluster{{Name: "scus"}, {Name: "wus"}}}, nil
		},
		Session: func(from, to config.Cluster, _ []config.Cluster) (*Session, error) {
			return &Session{Planner: planner(t), Executor: &fo.Executor{Writer: w},
				BeforeWrite: func(context.Context) error { beforeWrite++; return nil }, Close: func() {}}, nil
		}}
	err := run(context.Background(), opts)
	var doc Document
	if jerr := json.Unmarshal(out.Bytes(), &doc); jerr != nil || doc.Plan == nil {
		t.Fatalf("document %q (%v)", out, jerr)
	}
	if got := cmdutil.OutcomeOf(err); got != outcome.OK || doc.ExitCode != outcome.OK || !doc.DryRun {
		t.Errorf("exit %d (document %d, dryRun %v), want 0: %v", got, doc.ExitCode, doc.DryRun, err)
	}
	if doc.Plan.Count(fo.ActionWrite) != 1 || doc.Plan.Count(fo.ActionRefused) != 0 || w.n != 0 || beforeWrite != 0 {
		t.Errorf("plan %+v; %d writes, %d lease/trail takes", doc.Plan.Rows, w.n, beforeWrite)
	}
}

// TestSourceNotAnswering: a source that is gone is said, not guessed (issue 47): with
// --source-gone it is not contacted; a source that does not answer ends the run with 3,
// naming the flag, unless the operator says it is gone at the prompt on a terminal.
func TestSourceNotAnswering(t *testing.T) {
	refused := errors.New("admin API: dial tcp 10.0.0.1:8080: connection refused")
	for _, tc := range []struct {
		name       string
		gone, yes  bool
		tty        bool
		answer     bool
		probe      error
		wantDown   bool
		wantExit   outcome.Outcome
		wantProbes int
		wantAsked  bool
	}{
		{name: "said gone: not contacted", gone: true, yes: true, wantDown: true, wantProbes: 0},
		{name: "answers", yes: true, wantProbes: 1},
		{name: "no answer, --yes: refused", yes: true, probe: refused, wantExit: outcome.Unreachable, wantProbes: 1},
		{name: "no answer, no terminal: refused", probe: refused, wantExit: outcome.Unreachable, wantProbes: 1},
		{name: "no answer, terminal, no", tty: true, probe: refused, wantExit: outcome.Unreachable, wantProbes: 1, wantAsked: true},
		{name: "no answer, terminal, yes", tty: true, answer: true, probe: refused, wantDown: true, wantProbes: 1, wantAsked: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ios, _, _, _ := iostreams.Test()
			ios.SetStdinTTY(tc.tty)
			ios.SetStdoutTTY(tc.tty)
			asked := false
			opts := &Options{IO: ios, SourceGone: tc.gone, Yes: tc.yes, Confirm: func(q string) (bool, error) {
				asked = strings.Contains(q, "Is scus's region gone?")
				return tc.answer, nil
			}}
			probes := 0
			down, err := sourceDown(opts, "scus", "wus", func() error { probes++; return tc.probe })
			if (down != nil) != tc.wantDown || cmdutil.OutcomeOf(err) != tc.wantExit || probes != tc.wantProbes || asked != tc.wantAsked {
				t.Fatalf("down %v, err %v (exit %d), %d probes, asked %v", down, err, cmdutil.OutcomeOf(err), probes, asked)
			}
			if tc.wantExit == outcome.Unreachable && (!strings.Contains(err.Error(), "--source-gone") || !strings.Contains(err.Error(), "connection refused")) {
				t.Errorf("the refusal does not name the flag and the cause: %v", err)
			}
		})
	}
}

// failingWriter fails every request with err.
type failingWriter struct{ err error }

func (f failingWriter) CommitRequests(_ context.Context, reqs [][]kop.OffsetCommit) []kop.Sent {
	out := make([]kop.Sent, len(reqs))
	for i := range out {
		out[i].Err = f.err
	}
	return out
}

// planOnly plans one bundle, refused for nothing, and must not execute it.
type planOnly struct{ t *testing.T }

func (p planOnly) Plan(context.Context, []string, map[reload.IntendedKey]int64, reload.PartitionReplayer) (*reload.Plan, error) {
	return &reload.Plan{Bundles: []reload.PlannedBundle{{Range: "0x00000000_0x40000000"}}}, nil
}

func (p planOnly) Execute(context.Context, *reload.Plan) *reload.Execution {
	p.t.Error("a bundle was reloaded after a failed write")
	return &reload.Execution{}
}

// A record that cannot be written: each row named on stderr with its cluster, group, topic
// and partition, exit 4, nothing reloaded.
func TestFailoverNamesRowsNotWritten(t *testing.T) {
	ios, _, _, errOut := iostreams.Test()
	opts := &Options{IO: ios, Format: output.Table, From: "scus", To: "wus", Yes: true,
		Config: func() (*config.Config, error) {
			return &config.Config{Clusters: []config.Cluster{{Name: "scus"}, {Name: "wus"}}}, nil
		},
		Session: func(from, to config.Cluster, _ []config.Cluster) (*Session, error) {
			pl := planner(t)
			return &Session{Planner: pl, Executor: &fo.Executor{From: pl.From, To: pl.To, Writer: failingWriter{errors.New("producer closed")}, Reloader: planOnly{t}},
				Close: func() {}}, nil
		}}
	err := run(context.Background(), opts)
	if got := cmdutil.OutcomeOf(err); got != outcome.WriteFailed {
		t.Fatalf("exit %d, want 4 (%v)", got, err)
	}
	if want := "not written: cluster wus group g topic topic-1 partition 0 (offset 50): producer closed"; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
}
