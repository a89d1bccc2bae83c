package reload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

// The standby (scus in these tests: the plan's cluster) holds a commit replicated from wus.
// wus held 10 messages before replication began, so wus offset N is scus offset N-10.
func TestPlanRefusesSkip(t *testing.T) {
	ctx := context.Background()
	g := groupIn("g", 3, 8)
	idle := map[string]GroupDescriber{"scus": &staticDescriber{}}
	c := kop.OffsetCommit{Group: g, Topic: topic1, Partition: 0, Offset: 60}
	copies := func(scusIDs []uint64) *align.Aligner {
		return &align.Aligner{Sources: map[string]align.Source{
			"wus":  fakes.MemCopies{Topics: map[string][]uint64{"topic-1": fakes.Sequence(0, 100)}},
			"scus": fakes.MemCopies{Topics: map[string][]uint64{"topic-1": scusIDs}},
		}}
	}
	plan := func(t *testing.T, a Aligner, accept bool, intended map[IntendedKey]int64) PlannedBundle {
		t.Helper()
		rd := fakes.NewMemReader(8).Replicated("wus", c)
		p := &Planner{Cluster: scus, Admin: fakes.NewAdmin("scus"), Reader: rd, Describers: idle,
			Fetcher: staticFetcher{g: {{Topic: "topic-1", Partition: 0, Offset: 5}}}, AcceptLoss: accept, Aligner: a, Intended: intended}
		pl, err := p.Plan(ctx, Request{Groups: []string{g}})
		if err != nil {
			t.Fatal(err)
		}
		if pl.Groups[0].Persisted[0].Origin != "wus" {
			t.Fatalf("origin not carried: %+v", pl.Groups[0].Persisted)
		}
		return pl.Bundles[0]
	}
	t.Run("shifted copies: refused, named, with the fix", func(t *testing.T) {
		b := plan(t, copies(fakes.Sequence(10, 100)), false, nil)
		if !b.Refused || len(b.Skips) != 1 || b.Skips[0].Skipped != 10 || *b.Skips[0].Translated != 50 {
			t.Fatalf("%+v", b)
		}
		for _, want := range []string{g + " topic-1[0]: would serve 60 from wus, the group is at 50 here: 10 messages skipped",
			"kop-offsets failover --source wus --target scus --group " + g, "--accept-loss"} {
			if !strings.Contains(b.Reason, want) {
				t.Errorf("reason %q lacks %q", b.Reason, want)
			}
		}
	})
	t.Run("aligned copies: the user's story reloads", func(t *testing.T) {
		if b := plan(t, copies(fakes.Sequence(0, 100)), false, nil); b.Refused || len(b.Skips) != 0 {
			t.Fatalf("%+v", b)
		}
	})
	t.Run("a message on the standby alone, before the position: the group must read it", func(t *testing.T) {
		b := plan(t, copies(append([]uint64{900}, fakes.Sequence(0, 100)...)), false, nil)
		if !b.Refused || *b.Skips[0].Translated != 0 || !strings.Contains(b.Reason, "exists on scus only") {
			t.Fatalf("%+v", b)
		}
	})
	t.Run("alignment unknown: refused", func(t *testing.T) {
		b := plan(t, nil, false, nil)
		if !b.Refused || len(b.Skips) != 1 || !b.Skips[0].Unknown || !strings.Contains(b.Reason, "alignment unknown") {
			t.Fatalf("%+v", b)
		}
	})
	t.Run("--accept-loss names the loss", func(t *testing.T) {
		if b := plan(t, copies(fakes.Sequence(10, 100)), true, nil); b.Refused || len(b.Skips) != 1 {
			t.Fatalf("%+v", b)
		}
	})
	t.Run("a value written on purpose is not a skip", func(t *testing.T) {
		if b := plan(t, copies(fakes.Sequence(10, 100)), false, map[IntendedKey]int64{{g, "topic-1", 0}: 60}); b.Refused {
			t.Fatalf("%+v", b)
		}
	})
}

// Random misaligned histories: commits written on the plan's cluster and replicated from the
// other, copies shifted by what each side holds alone. No executable bundle predicts a
// replicated offset past the group's translated position.
func TestPlanNeverSkipsProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	for iter := range 200 {
		rd := fakes.NewMemReader(8)
		wusIDs := fakes.Sequence(0, 200)
		var scusIDs []uint64
		for _, id := range wusIDs {
			switch rng.IntN(15) {
			case 0: // never replicated
			case 1:
				scusIDs = append(scusIDs, 5000+id, id) // written on scus alone
			default:
				scusIDs = append(scusIDs, id)
			}
		}
		var history []string
		own := map[string]int64{} // the group's last commit on scus: its floor there
		for range 1 + rng.IntN(6) {
			g := fmt.Sprintf("g%d", rng.IntN(4))
			c := kop.OffsetCommit{Group: g, Topic: topic1, Partition: 0, Offset: int64(rng.IntN(200))}
			if rng.IntN(2) == 0 {
				rd.Replicated("wus", c)
				history = append(history, fmt.Sprintf("wus %s=%d", g, c.Offset))
			} else {
				rd.Commit(c)
				own[g] = c.Offset
				history = append(history, fmt.Sprintf("scus %s=%d", g, c.Offset))
			}
		}
		a := &align.Aligner{Sources: map[string]align.Source{
			"wus": fakes.MemCopies{Topics: map[string][]uint64{"topic-1": wusIDs}}, "scus": fakes.MemCopies{Topics: map[string][]uint64{"topic-1": scusIDs}},
		}}
		pl, err := (&Planner{Cluster: scus, Admin: fakes.NewAdmin("scus"), Reader: rd, Describers: map[string]GroupDescriber{"scus": &staticDescriber{}},
			Fetcher: staticFetcher{}, Aligner: a}).Plan(context.Background(), Request{Partitions: []int32{0, 1, 2, 3, 4, 5, 6, 7}})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range pl.Executable() {
			for _, ag := range pl.GroupsIn(b.Range) {
				for _, p := range ag.Persisted {
					if p.Origin != "wus" {
						continue
					}
					// The group consumed scus's messages before its own commit there.
					res := a.TranslateAll(context.Background(), []align.Request{{From: "wus", To: "scus", Topic: p.Topic, Partition: p.Partition, Offset: p.Offset, Floor: own[ag.Group]}})
					for _, r := range res {
						if r.Err != nil || p.Offset > r.Translated {
							t.Fatalf("iteration %d: bundle %s reloaded with %s at %d from wus, translated %d (%v)\nhistory: %s",
								iter, b.Range, ag.Group, p.Offset, r.Translated, r.Err, strings.Join(history, ", "))
						}
					}
				}
			}
		}
	}
}

// KoP's answer carries no origin: a replicated persisted offset it serves is the same offset.
func TestSameOffsetsIgnoresOrigin(t *testing.T) {
	served := []TopicOffset{{Topic: "topic-1", Partition: 0, Offset: 10900}}
	persisted := []TopicOffset{{Topic: "topic-1", Partition: 0, Offset: 10900, Origin: "scus"}}
	if !sameOffsets(served, persisted) {
		t.Fatal("a replicated offset KoP serves counts as different")
	}
	if sameOffsets([]TopicOffset{{Topic: "topic-1", Partition: 0, Offset: 500}}, persisted) {
		t.Fatal("500 and 10900 count as the same")
	}
}

type countingAligner struct{ calls int }

func (c *countingAligner) TranslateAll(context.Context, []align.Request) map[align.Request]align.Result {
	c.calls++
	return nil
}

// KoP does not answer on the plan's cluster: the copies are not read through it (each read
// would wait for the same failure); the replicated rows stay unknown, refused.
func TestPlanKoPDownDoesNotAlign(t *testing.T) {
	g := groupIn("g", 3, 8)
	rd := fakes.NewMemReader(8).Replicated("wus", kop.OffsetCommit{Group: g, Topic: topic1, Partition: 0, Offset: 60})
	a := &countingAligner{}
	pl, err := (&Planner{Cluster: scus, Admin: fakes.NewAdmin("scus"), Reader: rd, Describers: map[string]GroupDescriber{"scus": &staticDescriber{}},
		Fetcher: errFetcher{errors.New("dial tcp 127.0.0.1:19092: connect: connection refused")}, Aligner: a}).Plan(context.Background(), Request{Groups: []string{g}})
	if err != nil {
		t.Fatal(err)
	}
	if b := pl.Bundles[0]; a.calls != 0 || !b.Refused || len(b.Skips) != 1 || !b.Skips[0].Unknown {
		t.Fatalf("aligner calls %d, %+v", a.calls, b)
	}
}

// The 2x2 story's refusal: a bundle holds the stale group of the story and an unrelated
// group with a replicated commit whose copies cannot be compared (its topic is gone on one
// side). KoP already serves the unrelated group's value, so the load changes nothing for it
// and its alignment is not asked; the bundle reloads. Served differently, it is refused.
func TestPlanChecksAlignmentOnlyWhereTheLoadChangesTheValue(t *testing.T) {
	ctx := context.Background()
	stale, other := groupIn("story", 3, 8), groupIn("other", 3, 8)
	const topic2 = "persistent://public/default/topic-2"
	rd := fakes.NewMemReader(8).
		Replicated("wus", kop.OffsetCommit{Group: stale, Topic: topic1, Partition: 0, Offset: 60}).
		Replicated("wus", kop.OffsetCommit{Group: other, Topic: topic2, Partition: 0, Offset: 70})
	a := &align.Aligner{Sources: map[string]align.Source{ // topic-2 exists nowhere: unknown alignment
		"wus":  fakes.MemCopies{Topics: map[string][]uint64{"topic-1": fakes.Sequence(0, 100)}},
		"scus": fakes.MemCopies{Topics: map[string][]uint64{"topic-1": fakes.Sequence(0, 100)}},
	}}
	plan := func(t *testing.T, otherServed int64) PlannedBundle {
		t.Helper()
		p := &Planner{Cluster: scus, Admin: fakes.NewAdmin("scus"), Reader: rd, Describers: map[string]GroupDescriber{"scus": &staticDescriber{}},
			Fetcher: staticFetcher{stale: {{Topic: "topic-1", Partition: 0, Offset: 5}}, other: {{Topic: "topic-2", Partition: 0, Offset: otherServed}}}, Aligner: a}
		pl, err := p.Plan(ctx, Request{Groups: []string{stale}})
		if err != nil {
			t.Fatal(err)
		}
		if len(pl.Bundles) != 1 || len(pl.Bundles[0].Groups) != 2 {
			t.Fatalf("want one bundle with both groups: %+v", pl.Bundles)
		}
		return pl.Bundles[0]
	}
	t.Run("served at the predicted value: not asked, reloaded", func(t *testing.T) {
		if b := plan(t, 70); b.Refused || len(b.Skips) != 0 {
			t.Fatalf("%+v", b)
		}
	})
	t.Run("served older: the load changes it, unknown alignment refuses", func(t *testing.T) {
		b := plan(t, 65)
		if !b.Refused || len(b.Skips) != 1 || b.Skips[0].Group != other || !b.Skips[0].Unknown {
			t.Fatalf("%+v", b)
		}
	})
}
