package reload

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/planrun"
	"github.com/kop-offsets/kop-offsets/internal/commands/session"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/lease"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/reload"
)

// joins describes every group idle until joined is set, then live (a consumer joined).
type joins struct{ joined *atomic.Bool }

func (j joins) DescribeGroups(_ context.Context, gs []string) (map[string]reload.GroupActivity, error) {
	out := map[string]reload.GroupActivity{}
	for _, g := range gs {
		out[g] = reload.GroupActivity{State: "Empty"}
		if j.joined.Load() {
			out[g] = reload.GroupActivity{State: "Stable", Members: 1}
		}
	}
	return out, nil
}

// TestReloadPlansAgainAfterWaitingForTheLease: while reload waits for the lease, the
// holder's work lets a consumer join the group; the plan made before the wait would
// unload a bundle with a live group. The plan made after the wait refuses it (--refuse-live).
func TestReloadPlansAgainAfterWaitingForTheLease(t *testing.T) {
	h := newHarness(t)
	h.opts.Yes, h.opts.Format = true, "json"
	h.opts.RefuseLive = true // the new plan refuses the group live since the wait
	b := &lease.MemBroker{FreeAfter: 2}
	b.Hold(jump)
	guarded(h, b, filepath.Join(t.TempDir(), "audit.jsonl"))
	var joined atomic.Bool
	guardedSession := h.opts.NewSession
	h.opts.NewSession = func(target config.Cluster, all []config.Cluster) (*session.Session, error) {
		s, err := guardedSession(target, all)
		if err != nil {
			return nil, err
		}
		s.Planner.Describers = map[string]reload.GroupDescriber{"scus": joins{&joined}}
		s.Lease.Wait = time.Minute
		s.Lease.Sleep = func(context.Context, time.Duration) error { joined.Store(true); return nil }
		return s, nil
	}
	err := reloadRun(context.Background(), h.opts)
	if cmdutil.OutcomeOf(err) != outcome.WriteFailed {
		t.Fatalf("exit %d (%v), want %d (refused)\n%s", cmdutil.ExitCode(err), err, outcome.WriteFailed, h.err)
	}
	if len(h.admin.Writes()) != 0 {
		t.Errorf("unloaded %v with the plan made before the wait", h.admin.Writes())
	}
	if !strings.Contains(h.err.String(), "the plan changed while waiting for the writer lease") {
		t.Errorf("stderr does not show the new plan:\n%s", h.err)
	}
	if !strings.Contains(h.out.String(), `"live"`) {
		t.Errorf("the document does not carry the new plan (the group live):\n%s", h.out)
	}
}

// TestRunPlanAsksAgainWhenTheNewPlanUnloadsOtherBundles: a confirmed plan that changes
// after the wait is shown and asked again; an unchanged one is not.
func TestRunPlanAsksAgainWhenTheNewPlanUnloadsOtherBundles(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		partition int32 // the fresh plan's request; -1: the same request as the first
		answers   string
		asked     int
		unloads   bool
	}{
		{"same bundles: asked once", -1, "y\n", 1, true},
		{"other bundles, declined the second time", 0, "y\nn\n", 2, false},
		{"other bundles, confirmed again", 0, "y\ny\n", 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			s, err := h.opts.NewSession(config.Cluster{Name: "scus", Tenant: "public", MetadataNamespace: "__kafka", KafkaNamespace: "public/default"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			first, err := s.Planner.Plan(ctx, reload.Request{Groups: []string{"G"}})
			if err != nil {
				t.Fatal(err)
			}
			req := reload.Request{Groups: []string{"G"}}
			if tc.partition >= 0 {
				req = reload.Request{Partitions: []int32{tc.partition}}
			}
			var questions []string
			answers := strings.Split(tc.answers, "\n")
			res := planrun.RunPlan(ctx, h.ios, "table", first, s.Executor, planrun.RunOptions{MaxBundles: 1,
				Confirm: func(q string) (bool, error) {
					questions = append(questions, q)
					return answers[len(questions)-1] == "y", nil
				},
				Replan: func(ctx context.Context) (*reload.Plan, error) { return s.Planner.Plan(ctx, req) },
			})
			if len(questions) != tc.asked {
				t.Fatalf("asked %d times, want %d: %q", len(questions), tc.asked, questions)
			}
			if tc.asked == 2 && questions[0] == questions[1] {
				t.Errorf("asked twice about the same bundles: %q", questions)
			}
			if got := len(h.admin.Writes()) > 0; got != tc.unloads {
				t.Errorf("unloaded %v, want %v (err %v)", h.admin.Writes(), tc.unloads, res.Err)
			}
			if tc.unloads && res.Plan == first && tc.partition >= 0 {
				t.Error("the result carries the plan made before the wait")
			}
		})
	}
}

// TestPlanShowsLiveGroupsReloaded: a group live on the cluster written to is reloaded by
// default and the plan says so; --refuse-live refuses the bundle.
func TestPlanShowsLiveGroupsReloaded(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		h := newHarness(t)
		h.opts.DryRun, h.opts.RefuseLive = true, refuse
		var joined atomic.Bool
		joined.Store(true)
		newSession := h.opts.NewSession
		h.opts.NewSession = func(target config.Cluster, all []config.Cluster) (*session.Session, error) {
			s, err := newSession(target, all)
			if err == nil {
				s.Planner.Describers = map[string]reload.GroupDescriber{"scus": joins{&joined}}
			}
			return s, err
		}
		err := reloadRun(context.Background(), h.opts)
		out := h.out.String()
		switch {
		case !refuse && (err != nil || !strings.Contains(out, "live on scus (reloaded: their members pause") || strings.Contains(out, "REFUSED")):
			t.Errorf("default: %v\n%s", err, out)
		case refuse && (!strings.Contains(out, "REFUSED: live members (--refuse-live): G@scus") || strings.Contains(out, "(reloaded:")):
			t.Errorf("--refuse-live: %v\n%s", err, out)
		}
	}
}
