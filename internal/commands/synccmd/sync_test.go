package synccmd

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/audit"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/offsetsync"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
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
	o := &SetupOptions{IO: f.IOStreams, Format: output.JSON, Yes: true, Verify: 2 * time.Second, Audit: tr,
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
}
