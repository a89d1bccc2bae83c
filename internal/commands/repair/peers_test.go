package repair

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/commands/session"
	"github.com/kop-offsets/kop-offsets/internal/commands/sources"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/reload"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest/describe"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

// countingDescriber counts the DescribeGroups calls that reach a cluster.
type countingDescriber struct {
	describe.Idle
	calls *atomic.Int32
}

func (c countingDescriber) DescribeGroups(ctx context.Context, gs []string) (map[string]reload.GroupActivity, error) {
	c.calls.Add(1)
	return c.Idle.DescribeGroups(ctx, gs)
}

// peerDownHarness is newHarness with scus, a peer repair does not write to, unreadable:
// asked reports how often a check asked scus (a check without it in down).
func peerDownHarness(t *testing.T, writeErr bool) (h *harness, asked *int, described *atomic.Int32, downs *[]map[string]error) {
	h = newHarness(t)
	h.opts.Format = output.JSON
	asked, described, downs = new(int), new(atomic.Int32), new([]map[string]error)
	inner := h.opts.Check
	h.opts.Check = func(ctx context.Context, all []config.Cluster, scope Scope, down map[string]error) (*survey.Report, error) {
		*downs = append(*downs, down)
		rep, err := inner(ctx, all, scope, down)
		if down["scus"] == nil {
			*asked++
		}
		rep.ExitCode = outcome.Unreachable
		rep.Unread = []string{"scus"}
		rep.Errors = []survey.ClusterError{{Cluster: "scus", Endpoint: "admin", Error: "cluster scus: admin API: context deadline exceeded"}}
		if writeErr {
			rep.Errors = append(rep.Errors, survey.ClusterError{Cluster: "wus", Endpoint: "kafka", Error: "cluster wus: kafka: i/o timeout"})
		}
		return rep, err
	}
	newSession := h.opts.NewSession
	h.opts.NewSession = func(target config.Cluster, all []config.Cluster) (*session.Session, error) {
		s, err := newSession(target, all)
		if err == nil {
			s.Planner.Describers["scus"] = countingDescriber{calls: described}
		}
		return s, err
	}
	return h, asked, described, downs
}

// Issue 47: `repair --cluster wus` with scus gone asks scus once (the first check), not in
// the plan nor in the second check, and exits 0 when wus is right: scus is named in
// peersUnread. An endpoint error of wus itself still makes it 3.
func TestRepairPeerDownAskedOnce(t *testing.T) {
	for _, tc := range []struct {
		name     string
		writeErr bool
		want     outcome.Outcome
	}{
		{"only the peer is down: 0", false, outcome.OK},
		{"the cluster written to has an error too: 3", true, outcome.Unreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, asked, described, downs := peerDownHarness(t, tc.writeErr)
			_ = repairRun(context.Background(), h.opts)
			var doc Document
			if err := json.Unmarshal(h.out.Bytes(), &doc); err != nil {
				t.Fatalf("%v\n%s", err, h.errb)
			}
			if len(h.unloads()) != 1 || len(doc.After.Stale) != 0 {
				t.Fatalf("wus not repaired: writes %v, after %+v\n%s", h.admin.Writes(), doc.After, h.errb)
			}
			if *asked != 1 || described.Load() != 0 || len(*downs) != 2 || (*downs)[1]["scus"] == nil {
				t.Errorf("scus asked by %d checks and %d describes, want 1 and 0 (downs %v)", *asked, described.Load(), *downs)
			}
			if doc.ExitCode != tc.want || !slices.Equal(doc.PeersUnread, []string{"scus"}) {
				t.Errorf("exit %d peersUnread %v, want %d [scus]\n%s", doc.ExitCode, doc.PeersUnread, tc.want, h.errb)
			}
		})
	}
}

// A cluster repair writes to that the first check could not read is not a peer: 3.
func TestRepairWrittenClusterUnreadIsNotAPeer(t *testing.T) {
	r := &run{}
	first := &survey.Report{Unread: []string{"wus", "scus"}, Errors: []survey.ClusterError{{Cluster: "wus", Error: "x"}}}
	r.down = peersDown(first, []string{"wus"})
	if len(r.down) != 1 || r.down["scus"] == nil {
		t.Fatalf("down %v", r.down)
	}
	r.raiseUnlessPeers(first.Errors)
	if r.worst != outcome.Unreachable {
		t.Errorf("worst %d", r.worst)
	}
	// A check unreachable without a named error stays 3: nothing says it was a peer.
	bare := &run{down: r.down}
	if bare.raiseUnlessPeers(nil); bare.worst != outcome.Unreachable {
		t.Errorf("no named error: worst %d", bare.worst)
	}
}

// The second check does not dial a peer in down (its name check would wait a --timeout
// again): the survey reports it unread from the first check's error, the others as usual.
func TestSkipDownDoesNotDialThePeer(t *testing.T) {
	rd := fakes.NewMemReader(8).Commit(kop.OffsetCommit{Group: "G", Topic: "persistent://public/default/topic-1", Partition: 0, Offset: 7})
	var dialled []string
	connect := func(cl config.Cluster, _ sources.SourceOptions) (survey.Cluster, func(), error) {
		dialled = append(dialled, cl.Name)
		return survey.Cluster{Name: cl.Name, KafkaNamespace: cl.KafkaNamespace, Reader: rd}, nil, nil
	}
	why := errors.New("did not answer the first check")
	sk := skipDown(connect, map[string]error{"scus": why})
	var srcs []survey.Cluster
	for _, n := range []string{"scus", "wus"} {
		c, _, err := sk(config.Cluster{Name: n, KafkaNamespace: "public/default"}, sources.SourceOptions{})
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, c)
	}
	rep, err := survey.Run(context.Background(), srcs, survey.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dialled, []string{"wus"}) || !slices.Equal(rep.Unread, []string{"scus"}) || rep.ExitCode != outcome.Unreachable {
		t.Fatalf("dialled %v unread %v exit %d", dialled, rep.Unread, rep.ExitCode)
	}
	if len(rep.Rows) != 1 || rep.Rows[0].Group != "G" {
		t.Errorf("rows %+v", rep.Rows)
	}
}
