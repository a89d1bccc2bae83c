package synccmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/kop-offsets/kop-offsets/internal/audit"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/offsetsync"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
	"github.com/kop-offsets/kop-offsets/internal/watch"
)

// pulsar is one cluster's offsets topic policies and replicators, as Pulsar keeps them:
// a replicator stops once the policy leaves its remote out (unless stuck).
type pulsar struct {
	namespace, topic []string
	err              error
	stuck            bool // the replicators stay
	writes           int
}

func (p *pulsar) TopicReplicationClusters(context.Context, string) ([]string, bool, error) {
	switch {
	case p.err != nil:
		return nil, false, p.err
	case p.topic != nil:
		return p.topic, true, nil
	}
	return p.namespace, false, nil
}

func (p *pulsar) SetTopicReplicationClusters(_ context.Context, _ string, cs []string) error {
	p.writes++
	p.topic = cs
	return nil
}

func (p *pulsar) RemoveTopicReplicationClusters(context.Context, string) error {
	p.writes++
	p.topic = nil
	return nil
}

func (p *pulsar) Replicators(ctx context.Context, _ string) (map[string]bool, error) {
	out := map[string]bool{}
	cs, _, _ := p.TopicReplicationClusters(ctx, "")
	if p.stuck {
		cs = p.namespace
	}
	for _, c := range cs {
		out[c] = true
	}
	return out, nil
}

type trail []audit.Record

func (t *trail) Write(r audit.Record) error { *t = append(*t, r); return nil }

func setup(t *testing.T, ps map[string]*pulsar, mod func(*SetupOptions)) (Result, outcome.Outcome, *trail) {
	t.Helper()
	f, s := clitest.NewFactory("x", false)
	tr := &trail{}
	o := &SetupOptions{IO: f.IOStreams, Format: output.JSON, Yes: true, Verify: 2 * time.Second, SeedTimeout: time.Second, Audit: tr,
		Seed: func(context.Context, []config.Cluster) (watch.SyncSweep, error) { return watch.SyncSweep{}, nil },
		Clusters: func() ([]config.Cluster, error) {
			var cls []config.Cluster
			for _, n := range slices.Sorted(func(y func(string) bool) {
				for n := range ps {
					if !y(n) {
						return
					}
				}
			}) {
				cls = append(cls, config.Cluster{Name: n, Tenant: "public", MetadataNamespace: "__kafka"})
			}
			return cls, nil
		},
		Admins: func([]config.Cluster) (map[string]offsetsync.Replication, func(), error) {
			out := map[string]offsetsync.Replication{}
			for n, p := range ps {
				out[n] = p
			}
			return out, func() {}, nil
		}}
	if mod != nil {
		mod(o)
	}
	err := setupRun(context.Background(), o)
	var res Result
	if s.Out.Len() == 0 {
		return res, cmdutil.OutcomeOf(err), tr // refused before a plan (declined)
	}
	if jerr := json.Unmarshal(s.Out.Bytes(), &res); jerr != nil {
		t.Fatalf("%v: %v\n%s", err, jerr, s.Out)
	}
	return res, cmdutil.OutcomeOf(err), tr
}

func replicated() map[string]*pulsar {
	ns := []string{"scus", "wus"}
	return map[string]*pulsar{"scus": {namespace: ns}, "wus": {namespace: ns}}
}

func TestSetupAndUndo(t *testing.T) {
	ps := replicated()
	res, code, tr := setup(t, ps, nil)
	if code != outcome.OK || len(res.Changes) != 2 || !slices.Equal(ps["scus"].topic, []string{"scus"}) || !slices.Equal(ps["wus"].topic, []string{"wus"}) {
		t.Fatalf("setup: exit %d, %+v", code, res)
	}
	if len(*tr) != 2 || (*tr)[0].Action != audit.ActionPolicy || (*tr)[0].Result != audit.ResultOK || res.Next != "kop-offsets watch --sync --cluster scus --cluster wus" {
		t.Fatalf("trail %+v, next %q", *tr, res.Next)
	}
	// Again: nothing to do, nothing written.
	if res, code, _ = setup(t, ps, nil); code != outcome.OK || len(res.Changes) != 0 || ps["scus"].writes != 1 {
		t.Fatalf("second setup: exit %d, %+v", code, res)
	}
	res, code, _ = setup(t, ps, func(o *SetupOptions) { o.Undo = true })
	if code != outcome.OK || ps["scus"].topic != nil || ps["wus"].topic != nil {
		t.Fatalf("undo: exit %d, %+v", code, res)
	}
}

func TestSetupDryRunWritesNothing(t *testing.T) {
	ps := replicated()
	res, code, tr := setup(t, ps, func(o *SetupOptions) { o.DryRun, o.Yes = true, false })
	if code != outcome.OK || len(res.Changes) != 2 || ps["scus"].writes+ps["wus"].writes != 0 || len(*tr) != 0 {
		t.Fatalf("dry run: exit %d, writes %d/%d, %+v", code, ps["scus"].writes, ps["wus"].writes, res)
	}
}

func TestSetupRefusesAnUnreadableCluster(t *testing.T) {
	ps := replicated()
	ps["wus"].err = errors.New("connection refused")
	res, code, _ := setup(t, ps, nil)
	if code != outcome.Unreachable || ps["scus"].writes != 0 {
		t.Fatalf("exit %d, scus writes %d: %+v", code, ps["scus"].writes, res)
	}
}

func TestSetupNotVerified(t *testing.T) {
	ps := replicated()
	ps["scus"].stuck = true
	res, code, _ := setup(t, ps, nil)
	if code != outcome.WriteFailed || res.Verdict == "" {
		t.Fatalf("a replicator that stays: exit %d, %+v", code, res)
	}
}

func TestSetupDeclined(t *testing.T) {
	ps := replicated()
	_, code, _ := setup(t, ps, func(o *SetupOptions) {
		o.Yes = false
		o.Confirm = func(string) (bool, error) { return false, nil }
	})
	if code != outcome.Usage || ps["scus"].writes != 0 {
		t.Fatalf("declined: exit %d, writes %d", code, ps["scus"].writes)
	}
	// stdin that cannot be read is no answer: 2 as well, nothing written (it was 3).
	ps = replicated()
	_, code, _ = setup(t, ps, func(o *SetupOptions) {
		o.Yes = false
		o.Confirm = func(string) (bool, error) { return false, io.ErrUnexpectedEOF }
	})
	if code != outcome.Usage || ps["scus"].writes != 0 {
		t.Fatalf("unreadable stdin: exit %d, writes %d", code, ps["scus"].writes)
	}
}

// seeder is a SeedFunc that records when it ran and what the offsets topics' policies were
// then, and answers sw, err.
type seeder struct {
	ps       map[string]*pulsar
	calls    int
	clusters []string
	stopped  bool // at the call, no offsets topic replicated to the other
	sw       watch.SyncSweep
	err      error
}

func (s *seeder) seed(_ context.Context, cls []config.Cluster) (watch.SyncSweep, error) {
	s.calls++
	s.clusters = nil
	for _, c := range cls {
		s.clusters = append(s.clusters, c.Name)
	}
	s.stopped = slices.Equal(s.ps["scus"].topic, []string{"scus"}) && slices.Equal(s.ps["wus"].topic, []string{"wus"})
	return s.sw, s.err
}

// TestSetupSeeds: after the setup is verified (replication stopped), every group is synced
// once between the selected clusters, and the document says what the seed did.
func TestSetupSeeds(t *testing.T) {
	ps := replicated()
	sd := &seeder{ps: ps, sw: watch.SyncSweep{Groups: 12, Synced: 10, Offsets: 31, SplitBrain: []string{"both"}}}
	res, code, _ := setup(t, ps, func(o *SetupOptions) { o.Seed = sd.seed })
	if code != outcome.OK || sd.calls != 1 || !sd.stopped || !slices.Equal(sd.clusters, []string{"scus", "wus"}) {
		t.Fatalf("exit %d, seed called %d times (replication stopped then: %v, clusters %v): %+v", code, sd.calls, sd.stopped, sd.clusters, res)
	}
	if res.Seed == nil || res.Seed.Groups != 12 || res.Seed.Offsets != 31 || !strings.Contains(res.Verdict, "12 groups, 10 synced (31 offsets") || !strings.Contains(res.Verdict, "1 split brain") {
		t.Fatalf("seed %+v, verdict %q", res.Seed, res.Verdict)
	}
	// Set up already: nothing to write, the seed runs again (a set-up whose seed failed is
	// finished by running setup again).
	if _, code, _ = setup(t, ps, func(o *SetupOptions) { o.Seed = sd.seed }); code != outcome.OK || sd.calls != 2 {
		t.Fatalf("second setup: exit %d, seed calls %d", code, sd.calls)
	}
	// Neither a dry run nor an undo seeds; a setup that was not verified does not either.
	for name, mod := range map[string]func(*SetupOptions){
		"dry run": func(o *SetupOptions) { o.DryRun, o.Yes = true, false },
		"undo":    func(o *SetupOptions) { o.Undo = true },
	} {
		calls := sd.calls
		setup(t, replicated(), func(o *SetupOptions) { mod(o); o.Seed = sd.seed })
		if sd.calls != calls {
			t.Errorf("%s seeded", name)
		}
	}
	stuck := replicated()
	stuck["scus"].stuck = true
	calls := sd.calls
	if _, code, _ := setup(t, stuck, func(o *SetupOptions) { o.Seed = sd.seed }); code != outcome.WriteFailed || sd.calls != calls {
		t.Errorf("not verified: exit %d, seeded %v", code, sd.calls != calls)
	}
}

func TestSetupSeedOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sw     watch.SyncSweep
		err    error
		noSeed bool
		want   outcome.Outcome
		says   string
	}{
		{name: "groups left", sw: watch.SyncSweep{Groups: 5, Synced: 3, Again: []string{"a", "b"}}, want: outcome.WriteFailed, says: "2 groups not synced yet"},
		{name: "a cluster down", sw: watch.SyncSweep{Groups: 5, Down: []string{"wus"}}, want: outcome.OK, says: "not synced to or from wus"},
		{name: "another process syncs", err: fmt.Errorf("%w: cluster scus: held by pid 42", watch.ErrSyncStandby), want: outcome.OK, says: "not seeded: "},
		{name: "no kafkaBootstrap", err: cmdutil.ConfigError(errors.New("cluster wus: --sync commits through KoP: kafkaBootstrap is not configured")), want: outcome.Usage, says: "seed failed: "},
		{name: "timed out", err: context.DeadlineExceeded, want: outcome.WriteFailed, says: "seed failed: "},
		{name: "--no-seed", noSeed: true, want: outcome.OK, says: "not seeded (--no-seed)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := replicated()
			sd := &seeder{ps: ps, sw: tc.sw, err: tc.err}
			res, code, _ := setup(t, ps, func(o *SetupOptions) { o.Seed, o.NoSeed = sd.seed, tc.noSeed })
			if code != tc.want || !strings.Contains(res.Verdict, tc.says) || res.Seed == nil {
				t.Fatalf("exit %d (want %d), verdict %q (want %q), seed %+v", code, tc.want, res.Verdict, tc.says, res.Seed)
			}
			if tc.noSeed && sd.calls != 0 {
				t.Error("--no-seed seeded")
			}
		})
	}
}

func TestSetupFlags(t *testing.T) {
	f, _ := clitest.NewFactory("x", false)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--seed-timeout", "0"}, "--seed-timeout must be positive"},
		{[]string{"--alignment-max-messages", "0"}, "--alignment-max-messages must be positive"},
		{[]string{"--group", "a[", "--yes"}, `invalid argument "a[" for "--group" flag: not a valid glob`},
		{[]string{"--undo", "--no-seed", "--yes"}, "no meaning with --undo"},
		{[]string{"--undo", "--group", "g", "--yes"}, "no meaning with --undo"},
	} {
		cmd := NewCmdSetup(f, func(*SetupOptions) error { t.Fatalf("%v ran", tc.args); return nil })
		cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &cmdutil.FlagError{Err: err} }) // as root does
		err := clitest.Execute(context.Background(), cmd, tc.args...)
		if cmdutil.OutcomeOf(err) != outcome.Usage || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v (exit %d), want a usage error naming %q", tc.args, err, cmdutil.OutcomeOf(err), tc.want)
		}
	}
}
