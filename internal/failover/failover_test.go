package failover

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/reload"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

const topic1 = "persistent://public/default/topic-1"

// groups asks a fake KoP as failover asks a real one.
func groups(t *testing.T, k *fakes.KoP) kop.KafkaGroups {
	return kop.KafkaGroups{Admin: k.Admin(t), KafkaNamespace: "public/default"}
}

type backlog int64

func (b backlog) Backlog(context.Context, int32) (int64, error) { return int64(b), nil }

// setup: scus held 10 messages before replication, the group read scus to 60 (wus 50).
func setup(t *testing.T) (*Planner, *fakes.MemReader, *fakes.KoP, *fakes.KoP) {
	c := kop.OffsetCommit{Group: "g", Topic: topic1, Partition: 0, Offset: 60}
	pl, dst, sk, wk := planner(t, "scus", "wus", fakes.NewMemReader(8).Commit(c), fakes.NewMemReader(8).Replicated("scus", c),
		fakes.Sequence(0, 110), fakes.Sequence(10, 110))
	sk.Set("g", "topic-1", 0, 60)
	wk.Set("g", "topic-1", 0, 30)
	return pl, dst, sk, wk
}

// planner is a Planner from cluster from to cluster to with their offsets topics and fake
// KoPs, and topic-1's copies on each.
func planner(t *testing.T, from, to string, src, dst *fakes.MemReader, fromCopy, toCopy []uint64) (*Planner, *fakes.MemReader, *fakes.KoP, *fakes.KoP) {
	fk, tk := fakes.NewKoP(t), fakes.NewKoP(t)
	pl := &Planner{
		From: Side{Name: from, KafkaNamespace: "public/default", Reader: src, Groups: groups(t, fk)},
		To:   Side{Name: to, KafkaNamespace: "public/default", Reader: dst, Groups: groups(t, tk)},
		Aligner: &align.Aligner{Sources: map[string]align.Source{
			from: fakes.MemCopies{Topics: map[string][]uint64{"topic-1": fromCopy}},
			to:   fakes.MemCopies{Topics: map[string][]uint64{"topic-1": toCopy}},
		}},
		Backlog: backlog(0),
	}
	return pl, dst, fk, tk
}

func TestPlan(t *testing.T) {
	ctx := context.Background()
	pl, _, _, wk := setup(t)
	plan, err := pl.Plan(ctx, Scope{})
	if err != nil {
		t.Fatal(err)
	}
	r := plan.Rows[0]
	if len(plan.Rows) != 1 || r.Action != ActionWrite || *r.Translated != 50 || *r.Served != 30 || *r.Persisted != 60 || r.PersistedOrigin != "scus" {
		t.Fatalf("%+v", plan.Rows)
	}

	wk.SetMembers("g", 2)
	if plan, _ := pl.Plan(ctx, Scope{}); plan.Rows[0].Action != ActionRefused || !strings.Contains(plan.Rows[0].Why, "2 live members on wus") {
		t.Fatalf("live: %+v", plan.Rows[0])
	}
	wk.SetMembers("g", 0)

	pl.Backlog = backlog(3)
	if plan, _ := pl.Plan(ctx, Scope{}); plan.Rows[0].Action != ActionRefused || !strings.Contains(plan.Blocked, "backlog of 3") {
		t.Fatalf("backlog: %+v %s", plan.Rows[0], plan.Blocked)
	}
	pl.Backlog = backlog(0)

	pl.Aligner = nil
	if plan, _ := pl.Plan(ctx, Scope{}); plan.Rows[0].Action != ActionRefused || !strings.Contains(plan.Rows[0].Why, "alignment unknown") {
		t.Fatalf("no aligner: %+v", plan.Rows[0])
	}
	pl, dst, _, _ := setup(t)

	// The group went on on wus itself, past the translation: its own commit is the floor,
	// the failover lands it there (KoP serves 30, the topic holds 70: a reload).
	dst.Commit(kop.OffsetCommit{Group: "g", Topic: topic1, Partition: 0, Offset: 70})
	if plan, _ := pl.Plan(ctx, Scope{}); plan.Rows[0].Action != ActionReload || *plan.Rows[0].Translated != 70 || !strings.Contains(plan.Rows[0].Why, "own commit 70 on wus") {
		t.Fatalf("own newer: %+v", plan.Rows[0])
	}
	// An own commit past the copy's end is no position there (no floor): never moved back.
	pl, dst, _, _ = setup(t)
	dst.Commit(kop.OffsetCommit{Group: "g", Topic: topic1, Partition: 0, Offset: 150})
	if plan, _ := pl.Plan(ctx, Scope{}); plan.Rows[0].Action != ActionRefused || !strings.Contains(plan.Rows[0].Why, "committed 150 on wus itself") {
		t.Fatalf("own newer, past the end: %+v", plan.Rows[0])
	}
	pl.AcceptLoss = true
	if plan, _ := pl.Plan(ctx, Scope{}); plan.Rows[0].Action != ActionWrite {
		t.Fatalf("--accept-loss: %+v", plan.Rows[0])
	}

	// Already there.
	pl, dst, _, wk = setup(t)
	dst.Commit(kop.OffsetCommit{Group: "g", Topic: topic1, Partition: 0, Offset: 50})
	wk.Set("g", "topic-1", 0, 50)
	if plan, _ := pl.Plan(ctx, Scope{}); plan.Rows[0].Action != ActionNone {
		t.Fatalf("already served: %+v", plan.Rows[0])
	}
	// Scope: another group matches nothing.
	if plan, _ := pl.Plan(ctx, Scope{Groups: []string{"other*"}}); len(plan.Rows) != 0 {
		t.Fatalf("scope: %+v", plan.Rows)
	}
}

// fakeTarget is the target side of Apply: the writer appends to its offsets topic, the
// reloader makes KoP serve what the topic holds (or refuses).
type fakeTarget struct {
	dst     *fakes.MemReader
	kop     *fakes.KoP
	refuse  string
	failW   map[string]error // the requests of these groups fail
	written int
	batches int
	plans   []map[reload.IntendedKey]int64
	targets []reload.PartitionReplayer
}

func (f *fakeTarget) CommitRequests(_ context.Context, reqs [][]kop.OffsetCommit) []kop.Sent {
	out := make([]kop.Sent, len(reqs))
	f.batches++
	for i, cs := range reqs {
		if err := f.failW[cs[0].Group]; err != nil {
			out[i].Err = err
			continue
		}
		f.written++
		f.dst.Commit(cs...)
	}
	return out
}

func (f *fakeTarget) Plan(_ context.Context, groups []string, intended map[reload.IntendedKey]int64, target reload.PartitionReplayer) (*reload.Plan, error) {
	f.plans, f.targets = append(f.plans, intended), append(f.targets, target)
	b := reload.PlannedBundle{Range: "0x00000000_0x40000000", Refused: f.refuse != "", Reason: f.refuse}
	return &reload.Plan{Bundles: []reload.PlannedBundle{b}}, nil
}

func (f *fakeTarget) Execute(context.Context, *reload.Plan) *reload.Execution {
	f.kop.Set("g", "topic-1", 0, 50)
	return &reload.Execution{}
}

func TestApply(t *testing.T) {
	ctx := context.Background()
	pl, dst, _, wk := setup(t)
	plan, _ := pl.Plan(ctx, Scope{})
	ft := &fakeTarget{dst: dst, kop: wk}
	ex := &Executor{From: pl.From, To: pl.To, Writer: ft, Reloader: ft}
	res := ex.Apply(ctx, plan)
	if res.ExitCode != outcome.OK || ft.written != 1 || len(res.Proof) != 1 || !res.Proof[0].OK || !res.Proof[0].SourceKept {
		t.Fatalf("%+v", res)
	}
	// The pre-plan took the row as it is (60), the second as written (50).
	k := reload.IntendedKey{Group: "g", Topic: "topic-1", Partition: 0}
	if len(ft.plans) != 2 || ft.plans[0][k] != 60 || ft.plans[1][k] != 50 {
		t.Fatalf("intended: %+v", ft.plans)
	}
	// One batch of writes; both reload plans got the failover's replay of wus's topic.
	if ft.batches != 1 || len(ft.targets) != 2 || ft.targets[0] == nil || ft.targets[1] != ft.targets[0] {
		t.Fatalf("%d batches, targets %v", ft.batches, ft.targets)
	}
	if !strings.Contains(res.Proof[0].Message, "scus offset 60 is wus offset 50") {
		t.Errorf("proof message %q", res.Proof[0].Message)
	}

	// A reload that would be refused: nothing written, exit 4 (a refusal, as reload's).
	pl, dst, _, wk = setup(t)
	plan, _ = pl.Plan(ctx, Scope{})
	ft = &fakeTarget{dst: dst, kop: wk, refuse: "live members: other@wus"}
	res = (&Executor{From: pl.From, To: pl.To, Writer: ft, Reloader: ft}).Apply(ctx, plan)
	if res.ExitCode != outcome.WriteFailed || ft.written != 0 || !strings.Contains(res.Error, "nothing was written") {
		t.Fatalf("refused: %+v", res)
	}

	// A record that cannot be written: exit 4, the group not among those written.
	pl, dst, _, wk = setup(t)
	plan, _ = pl.Plan(ctx, Scope{})
	ft = &fakeTarget{dst: dst, kop: wk, failW: map[string]error{"g": errors.New("produce: connection reset")}}
	res = (&Executor{From: pl.From, To: pl.To, Writer: ft, Reloader: ft}).Apply(ctx, plan)
	if res.ExitCode != outcome.WriteFailed || len(res.Written) != 0 || !strings.Contains(res.Error, "cluster wus: write of group g topic-1[0] failed: produce: connection reset") {
		t.Fatalf("write failed: %+v", res)
	}
	if we := res.WriteErrors; len(we) != 1 || we[0] != (WriteError{Cluster: "wus", Group: "g", Topic: "topic-1", Partition: 0, Offset: 50, Error: "produce: connection reset"}) {
		t.Fatalf("write errors %+v", we)
	}

	// The target does not serve it afterwards: exit 4.
	pl, dst, _, wk = setup(t)
	plan, _ = pl.Plan(ctx, Scope{})
	ft = &fakeTarget{dst: dst, kop: fakes.NewKoP(t)}
	res = (&Executor{From: pl.From, To: Side{Name: "wus", Groups: groups(t, wk)}, Writer: ft, Reloader: ft}).Apply(ctx, plan)
	if res.ExitCode != outcome.WriteFailed || !strings.Contains(res.Error, "wus serves 30 after the reload, want 50") {
		t.Fatalf("not served: %+v", res)
	}

}

// TestPlanSourceDown: scus is gone. wus holds, for g, the translation watch kept of scus's
// 60 (wus 50), then scus's 70 replicated untranslated; for h, scus's 40 with no kept
// translation; for k, the kept translation is the newest.
func TestPlanSourceDown(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	dst := fakes.NewMemReader(8).
		Replicated("scus", kop.OffsetCommit{Group: "g", Topic: topic1, Offset: 60}).
		Kept(loader.KeptMark{From: "scus", Sources: []int64{60}, At: at}, kop.OffsetCommit{Group: "g", Topic: topic1, Offset: 50}).
		Replicated("scus", kop.OffsetCommit{Group: "g", Topic: topic1, Offset: 70}).
		Replicated("scus", kop.OffsetCommit{Group: "h", Topic: topic1, Offset: 40}).
		Replicated("scus", kop.OffsetCommit{Group: "k", Topic: topic1, Offset: 30}).
		Kept(loader.KeptMark{From: "scus", Sources: []int64{30}, At: at}, kop.OffsetCommit{Group: "k", Topic: topic1, Offset: 20})
	wk := fakes.NewKoP(t)
	wk.Set("k", "topic-1", 0, 20)
	src := fakes.NewMemReader(8)
	src.Err = errors.New("i/o timeout")
	pl := &Planner{
		From:       Side{Name: "scus", KafkaNamespace: "public/default", Reader: src},
		To:         Side{Name: "wus", KafkaNamespace: "public/default", Reader: dst, Groups: groups(t, wk)},
		SourceDown: src.Err, Now: func() time.Time { return at.Add(90 * time.Second) },
	}
	plan, err := pl.Plan(context.Background(), Scope{})
	if err != nil {
		t.Fatal(err)
	}
	if plan.SourceDown == "" || len(plan.Rows) != 3 {
		t.Fatalf("plan %+v", plan)
	}
	g, h, k := plan.Rows[0], plan.Rows[1], plan.Rows[2]
	if g.Action != ActionWrite || *g.Translated != 50 || g.Source != 70 || !strings.Contains(g.Why, "newer commit 70 could not be translated") || !strings.Contains(g.Why, "1m30s ago") {
		t.Fatalf("g: %+v (%s)", g, g.Why)
	}
	if h.Action != ActionRefused || h.Translated != nil || !strings.Contains(h.Why, "no kept translation of scus's 40") {
		t.Fatalf("h: %+v (%s)", h, h.Why)
	}
	if k.Action != ActionNone || *k.Translated != 20 || k.Source != 30 {
		t.Fatalf("k: %+v (%s)", k, k.Why)
	}
	if src.Reads[0]+src.Reads[1] > 0 {
		t.Fatal("the source was read")
	}
	// Members of g on wus: refused, as with the source up.
	wk.SetMembers("g", 1)
	plan, _ = pl.Plan(context.Background(), Scope{Groups: []string{"g"}})
	if r := plan.Rows[0]; r.Action != ActionRefused || !strings.Contains(r.Why, "live members") {
		t.Fatalf("g with members: %+v", r)
	}
}

// TestPlanSourceDownKeptOverANewer: kept translations that landed after a newer commit of
// their key (loader.Newer: the keeper raced replication, issue 51), with scus gone. g: scus's
// 10900 hidden by the kept 500: lands on the kept 500, saying that 10900 was not translated
// (the group re-reads, never skips). r: scus's reset to 500 hidden by the kept 10900: refused,
// landing there would skip what the group was moved back to read. o: the group's own 12000 on
// wus hidden by a kept 11000: its own number written back.
func TestPlanSourceDownKeptOverANewer(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	ms := func(s int64) time.Time { return time.UnixMilli(s * 1000) }
	c := func(g string, offset, sec int64) kop.OffsetCommit {
		return kop.OffsetCommit{Group: g, Topic: topic1, Offset: offset, CommitTime: ms(sec)}
	}
	dst := fakes.NewMemReader(8).
		Replicated("scus", c("g", 500, 1)).Replicated("scus", c("g", 10900, 2)).
		Kept(loader.KeptMark{From: "scus", Sources: []int64{500}, At: at}, c("g", 500, 1)).
		Replicated("scus", c("r", 10900, 1)).Replicated("scus", c("r", 500, 2)).
		Kept(loader.KeptMark{From: "scus", Sources: []int64{10900}, At: at}, c("r", 10900, 1)).
		Replicated("scus", c("o", 11000, 2)).Commit(c("o", 12000, 3)).
		Kept(loader.KeptMark{From: "scus", Sources: []int64{11000}, At: at}, c("o", 11000, 2))
	src := fakes.NewMemReader(8)
	src.Err = errors.New("i/o timeout")
	pl := &Planner{
		From:       Side{Name: "scus", KafkaNamespace: "public/default", Reader: src},
		To:         Side{Name: "wus", KafkaNamespace: "public/default", Reader: dst, Groups: groups(t, fakes.NewKoP(t))},
		SourceDown: src.Err, Now: func() time.Time { return at.Add(time.Minute) },
	}
	plan, err := pl.Plan(context.Background(), Scope{})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Rows) != 3 {
		t.Fatalf("plan %+v", plan)
	}
	g, o, r := plan.Rows[0], plan.Rows[1], plan.Rows[2]
	if g.Action != ActionReload || *g.Translated != 500 || g.Source != 10900 || !strings.Contains(g.Why, "newer commit 10900 could not be translated") {
		t.Fatalf("g: %+v (%s)", g, g.Why)
	}
	if r.Action != ActionRefused || r.Source != 500 || !strings.Contains(r.Why, "would skip what the group was moved back to read") {
		t.Fatalf("r: %+v (%s)", r, r.Why)
	}
	if o.Action != ActionWrite || *o.Translated != 12000 || !strings.Contains(o.Why, "own commit 12000 on wus, hidden by an older kept translation") {
		t.Fatalf("o: %+v (%s)", o, o.Why)
	}
}

// TestPlanFailback: scus wrote 10 messages before replication (never on wus); the group
// committed 60 on scus, failed over to wus, committed 80 there (scus 90), and fails back. Its
// own commit on scus is where the translation starts, not scus's first message.
func TestPlanFailback(t *testing.T) {
	ctx := context.Background()
	c := kop.OffsetCommit{Group: "g", Topic: topic1, Partition: 0, Offset: 80}
	own := kop.OffsetCommit{Group: "g", Topic: topic1, Partition: 0, Offset: 60}
	pl, _, wk, sk := planner(t, "wus", "scus", fakes.NewMemReader(8).Commit(c), fakes.NewMemReader(8).Commit(own).Replicated("wus", c),
		fakes.Sequence(0, 100), append(fakes.Sequence(1000, 1010), fakes.Sequence(0, 100)...))
	wk.Set("g", "topic-1", 0, 80)
	sk.Set("g", "topic-1", 0, 60)
	plan, err := pl.Plan(ctx, Scope{})
	if err != nil {
		t.Fatal(err)
	}
	r := plan.Rows[0]
	if len(plan.Rows) != 1 || r.Action != ActionWrite || *r.Translated != 90 || r.Translation.Floor == nil || *r.Translation.Floor != 60 {
		t.Fatalf("%+v", plan.Rows)
	}
}
