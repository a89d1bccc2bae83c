package failover

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/reload"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

// goneTarget is wus after scus's region is gone, one group per landing:
//   - kept: the kept translation of scus's 60 (wus 50) is the newest record;
//   - older: kept 50 of scus's 60, then scus's 70 replicated untranslated 30 s later;
//   - own: its own 20 on wus, then scus's 45 replicated, nothing kept;
//   - early: scus's 45 replicated, nothing kept, KoP serves nothing;
//   - held: scus's 45 replicated, nothing kept, KoP serves an older 40;
//   - same: scus's 45 replicated, nothing kept, KoP serves 45.
//
// wus's copy of topic-1 starts at 5 and ends at 105.
func goneTarget(t *testing.T) (*Planner, *fakes.MemReader, *fakes.KoP) {
	at := time.Unix(1_800_000_000, 0)
	c := func(g string, o int64, ts time.Time) kop.OffsetCommit {
		return kop.OffsetCommit{Group: g, Topic: topic1, Offset: o, CommitTime: ts}
	}
	dst := fakes.NewMemReader(8).
		Replicated("scus", c("kept", 60, at)).
		Kept(loader.KeptMark{From: "scus", Sources: []int64{60}, At: at}, c("kept", 50, at)).
		Replicated("scus", c("older", 60, at)).
		Kept(loader.KeptMark{From: "scus", Sources: []int64{60}, At: at}, c("older", 50, at)).
		Replicated("scus", c("older", 70, at.Add(30*time.Second))).
		Commit(c("own", 20, at)).Replicated("scus", c("own", 45, at)).
		Replicated("scus", c("early", 45, at), c("held", 45, at), c("same", 45, at))
	wk := fakes.NewKoP(t)
	wk.Set("held", "topic-1", 0, 40)
	wk.Set("same", "topic-1", 0, 45)
	src := fakes.NewMemReader(8)
	src.Err = errors.New("said gone")
	pl := &Planner{
		From: Side{Name: "scus", KafkaNamespace: "public/default", Reader: src},
		To: Side{Name: "wus", KafkaNamespace: "public/default", Reader: dst, Groups: groups(t, wk),
			Copies: fakes.MemCopies{Start: 5, Topics: map[string][]uint64{"topic-1": fakes.Sequence(0, 100)}}},
		SourceDown: src.Err, Now: func() time.Time { return at.Add(time.Minute) },
	}
	return pl, dst, wk
}

// TestPlanSourceGoneLandings: each row lands on the newest safe position and says which;
// never worse: a row whose safe position is older than what KoP serves is left (its served
// value held where the topic holds another), unless --accept-loss.
func TestPlanSourceGoneLandings(t *testing.T) {
	pl, _, _ := goneTarget(t)
	plan, err := pl.Plan(context.Background(), Scope{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		action, landing, translated, why string
	}{
		"kept":  {ActionReload, LandingKept, "50", "kept translation of scus's 60"},
		"older": {ActionWrite, LandingOlderKept, "50", "older kept: re-reads 10 messages / 30 s of commits; scus's newer commit 70 could not be translated"},
		"own":   {ActionWrite, LandingOwn, "20", "landing on the group's own commit 20 on wus"},
		"early": {ActionWrite, LandingEarliest, "5", "landing on the earliest position 5 of wus's copy (re-reads at most 100 messages"},
		"held":  {ActionHold, LandingLeft, "40", "KoP on wus serves 40, and landing on the earliest position 5"},
		"same":  {ActionRefused, LandingLeft, "nothing", "KoP on wus serves 45"},
	}
	if len(plan.Rows) != len(want) {
		t.Fatalf("%d rows: %+v", len(plan.Rows), plan.Rows)
	}
	for _, r := range plan.Rows {
		w := want[r.Group]
		if r.Action != w.action || r.Landing != w.landing || str(r.Translated) != w.translated || !strings.Contains(r.Why, w.why) {
			t.Errorf("%s: %s %s %s (%s), want %s %s %s (%s)", r.Group, r.Action, r.Landing, str(r.Translated), r.Why, w.action, w.landing, w.translated, w.why)
		}
	}
	if plan.Landings[LandingKept] != 1 || plan.Landings[LandingOlderKept] != 1 || plan.Landings[LandingOwn] != 1 ||
		plan.Landings[LandingEarliest] != 1 || plan.Landings[LandingLeft] != 2 {
		t.Errorf("landings %v", plan.Landings)
	}
	if plan.Outcome() != outcome.Found {
		t.Errorf("outcome %d, want 1 (rows left)", plan.Outcome())
	}

	// --accept-loss: the operator names the loss, the left rows land on the earliest.
	pl.AcceptLoss = true
	plan, _ = pl.Plan(context.Background(), Scope{Groups: []string{"held", "same"}})
	for _, r := range plan.Rows {
		if r.Action != ActionWrite || r.Landing != LandingEarliest || str(r.Translated) != "5" {
			t.Errorf("--accept-loss %s: %s %s %s (%s)", r.Group, r.Action, r.Landing, str(r.Translated), r.Why)
		}
	}
	if plan.Outcome() != outcome.Reread {
		t.Errorf("--accept-loss: outcome %d, want 5 (landed, some re-read)", plan.Outcome())
	}
}

// bundledTarget is the reload side of Apply with bundles: a group's bundle (default b1), a
// bundle refused with its reason; Execute makes KoP serve what was written in the
// executable bundles.
type bundledTarget struct {
	dst     *fakes.MemReader
	kop     *fakes.KoP
	bundle  map[string]string
	refuse  map[string]string
	writes  []string
	holds   []string
	planned [][]string
	last    map[reload.IntendedKey]int64
}

func (f *bundledTarget) of(g string) string {
	if b, ok := f.bundle[g]; ok {
		return b
	}
	return "b1"
}

type recorder struct {
	f    *bundledTarget
	hold bool
}

func (r recorder) CommitRequests(_ context.Context, reqs [][]kop.OffsetCommit) []kop.Sent {
	for _, cs := range reqs {
		for _, c := range cs {
			if r.hold {
				r.f.holds = append(r.f.holds, c.Group)
				r.f.dst.Replicated("scus", c) // what the loader makes of a held value
			} else {
				r.f.writes = append(r.f.writes, c.Group)
				r.f.dst.Commit(c)
			}
		}
	}
	return make([]kop.Sent, len(reqs))
}

// Plan plans the bundles of groups and every row group of them (the bundle's blast radius).
func (f *bundledTarget) Plan(_ context.Context, groups []string, intended map[reload.IntendedKey]int64, _ reload.PartitionReplayer) (*reload.Plan, error) {
	f.planned, f.last = append(f.planned, groups), intended
	p := &reload.Plan{}
	seen := map[string]bool{}
	for _, g := range groups {
		seen[f.of(g)] = true
	}
	for _, g := range []string{"kept", "older", "own", "early", "held", "same"} {
		if b := f.of(g); seen[b] {
			p.Groups = append(p.Groups, reload.AffectedGroup{Group: g, Bundle: b})
		}
	}
	for _, b := range []string{"b1", "b2"} {
		if seen[b] {
			p.Bundles = append(p.Bundles, reload.PlannedBundle{Range: b, Refused: f.refuse[b] != "", Reason: f.refuse[b]})
		}
	}
	return p, nil
}

func (f *bundledTarget) Execute(_ context.Context, p *reload.Plan) *reload.Execution {
	run := map[string]bool{}
	for _, b := range p.Executable() {
		run[b.Range] = true
	}
	for k, v := range f.last {
		if run[f.of(k.Group)] {
			f.kop.Set(k.Group, k.Topic, k.Partition, v)
		}
	}
	return &reload.Execution{}
}

// TestApplySourceGone: with the source gone, a bundle with left rows still lands the others
// (the left row's served value held so the reload keeps serving it), a refused bundle leaves
// its own rows only, and the exit code tells a runbook what happened.
func TestApplySourceGone(t *testing.T) {
	ctx := context.Background()
	apply := func(t *testing.T, scope []string, refuse map[string]string, bundle map[string]string) (*Plan, *Result, *bundledTarget) {
		pl, dst, wk := goneTarget(t)
		plan, err := pl.Plan(ctx, Scope{Groups: scope})
		if err != nil {
			t.Fatal(err)
		}
		f := &bundledTarget{dst: dst, kop: wk, bundle: bundle, refuse: refuse}
		ex := &Executor{From: pl.From, To: pl.To, Writer: recorder{f: f}, Holder: recorder{f: f, hold: true}, Reloader: f}
		return plan, ex.Apply(ctx, plan), f
	}
	t.Run("all kept", func(t *testing.T) {
		_, res, _ := apply(t, []string{"kept"}, nil, nil)
		if res.ExitCode != outcome.OK || len(res.Proof) != 1 || !res.Proof[0].OK {
			t.Fatalf("%+v", res)
		}
	})
	t.Run("some re-read", func(t *testing.T) {
		_, res, f := apply(t, []string{"kept", "older", "own", "early"}, nil, nil)
		if res.ExitCode != outcome.Reread || len(res.Proof) != 4 || len(f.writes) != 3 {
			t.Fatalf("exit %d, writes %v, %+v", res.ExitCode, f.writes, res)
		}
	})
	t.Run("some left", func(t *testing.T) {
		// b1: kept, older, held (left, held at 40), same (left, nothing to write); b2: early,
		// refused by the reload (an unrelated group live there).
		plan, res, f := apply(t, nil, map[string]string{"b2": "live members (--refuse-live): other@wus"}, map[string]string{"early": "b2", "own": "b2"})
		if res.ExitCode != outcome.Found || res.Error != "" {
			t.Fatalf("exit %d, want 1: %+v", res.ExitCode, res)
		}
		if strings.Join(f.holds, ",") != "held" || strings.Join(f.writes, ",") != "older" {
			t.Fatalf("holds %v, writes %v: want the held value and the landing of b1 only", f.holds, f.writes)
		}
		for _, g := range []string{"early", "own"} {
			if r := row(plan, g); r.Landing != LandingLeft || !strings.Contains(r.Why, "bundle b2: live members") {
				t.Errorf("%s in the refused bundle: %+v", g, r)
			}
		}
		// KoP serves the landings and keeps the held value: the reload did not make it serve 45.
		for g, want := range map[string]int64{"kept": 50, "older": 50, "held": 40, "same": 45} {
			if v, ok := f.kop.Get(g, "topic-1", 0); !ok || v != want {
				t.Errorf("%s: wus serves %d (%v), want %d", g, v, ok, want)
			}
		}
		if plan.Landings[LandingLeft] != 4 || plan.Landings[LandingKept] != 1 || plan.Landings[LandingOlderKept] != 1 {
			t.Errorf("landings after the refusal %v", plan.Landings)
		}
	})
}

func row(p *Plan, g string) Row {
	for _, r := range p.Rows {
		if r.Group == g {
			return r
		}
	}
	return Row{}
}
