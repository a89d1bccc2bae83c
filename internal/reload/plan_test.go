package reload

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

const topic1 = "persistent://public/default/topic-1"

var scus = ClusterRef{Name: "scus", Tenant: "public", MetadataNamespace: "__kafka", KafkaNamespace: "public/default"}

// Offsets partitions per bundle for the lab layout (CRC-32 of the partition names, the
// same answer Pulsar 4.0.8 gives on the lab): b0 {0,4}, b1 {1,5}, b2 {3,7}, b3 {2,6}.
const (
	b0 = "0x00000000_0x40000000"
	b1 = "0x40000000_0x80000000"
	b2 = "0x80000000_0xc0000000"
	b3 = "0xc0000000_0xffffffff"
)

func TestPlanBlastRadius(t *testing.T) {
	ctx := context.Background()
	adm := fakes.NewAdmin("scus")
	g := groupIn("g", 3, 8)         // requested, partition 3 -> bundle b2
	same := groupIn("same", 3, 8)   // same partition
	neigh := groupIn("neigh", 7, 8) // other partition of the same bundle
	other := groupIn("other", 0, 8) // another bundle: untouched
	rd := fakes.NewMemReader(8).Commit(
		kop.OffsetCommit{Group: g, Topic: topic1, Partition: 0, Offset: 10900},
		kop.OffsetCommit{Group: same, Topic: topic1, Partition: 0, Offset: 5},
		kop.OffsetCommit{Group: neigh, Topic: topic1, Partition: 1, Offset: 7},
		kop.OffsetCommit{Group: other, Topic: topic1, Partition: 0, Offset: 9},
	)
	live := &staticDescriber{groups: map[string]GroupActivity{neigh: {State: "Stable", Members: 2}}}
	idle := &staticDescriber{}
	p := &Planner{Cluster: scus, Admin: adm, Reader: rd, Describers: map[string]GroupDescriber{"scus": idle, "wus": live},
		Fetcher: staticFetcher{g: {{Topic: "topic-1", Partition: 0, Offset: 500}}}} // g's cache is stale, the others' empty
	plan, err := p.Plan(ctx, Request{Groups: []string{g}})
	if err != nil {
		t.Fatal(err)
	}
	if plan.OffsetsPartitions != 8 || len(plan.Bundles) != 1 || plan.Bundles[0].Range != b2 {
		t.Fatalf("plan bundles: %+v", plan.Bundles)
	}
	if got := plan.Bundles[0].OffsetsPartitions; !slices.Equal(got, []int32{3, 7}) {
		t.Errorf("offsets partitions of %s: %v, want [3 7]", b2, got)
	}
	wantGroups := []string{g, neigh, same}
	slices.Sort(wantGroups)
	if got := plan.Bundles[0].Groups; !slices.Equal(got, wantGroups) {
		t.Errorf("affected groups %v, want %v (not %s)", got, wantGroups, other)
	}
	// Active-passive: the group is live on wus only; reloading scus touches none of its
	// members, so the bundle is not refused, and the plan says the cache will lag again.
	if plan.Bundles[0].Refused || !slices.Equal(plan.Bundles[0].LiveElsewhere, []string{neigh}) || len(plan.Bundles[0].Active) != 0 {
		t.Errorf("a group live on wus only must not refuse a reload of scus: %+v", plan.Bundles[0])
	}
	ag, _ := plan.Group(g)
	if !ag.Requested || ag.Status != ActivityIdle || len(ag.Persisted) != 1 || ag.Persisted[0] != (TopicOffset{Topic: "topic-1", Partition: 0, Offset: 10900}) {
		t.Errorf("group %s: %+v", g, ag)
	}
	an, _ := plan.Group(neigh)
	if an.Requested || an.Status != ActivityLive || *an.Activity["wus"].Members != 2 || an.Activity["scus"].Status != ActivityIdle {
		t.Errorf("group %s: %+v", neigh, an)
	}
	if len(plan.Executable()) != 1 || len(plan.Refused()) != 0 {
		t.Error("Executable/Refused")
	}
	// Planning writes nothing: only partitioned metadata and bundles were asked.
	for _, c := range adm.Calls() {
		if strings.HasPrefix(c, "unload") || strings.HasPrefix(c, "lookup") {
			t.Errorf("planning made a writing call: %s", c)
		}
	}

	// Live on the cluster written to: reloaded by default (its members pause; its own
	// commits are no loss), listed as active.
	p.Describers = map[string]GroupDescriber{"scus": live, "wus": idle}
	plan, err = p.Plan(ctx, Request{Groups: []string{g}})
	if err != nil || plan.Bundles[0].Refused || !slices.Equal(plan.Bundles[0].Active, []string{neigh}) || len(plan.Executable()) != 1 {
		t.Fatalf("a group live on scus, by default: %+v %v", plan.Bundles, err)
	}
	// --refuse-live: refused, named, unless --allow-active.
	p.RefuseLive = true
	plan, err = p.Plan(ctx, Request{Groups: []string{g}})
	if err != nil || !plan.Bundles[0].Refused || !strings.Contains(plan.Bundles[0].Reason, neigh+"@scus") || len(plan.Executable()) != 0 {
		t.Fatalf("with RefuseLive a group live on scus must refuse a reload of scus: %+v %v", plan.Bundles, err)
	}
	p.AllowActive = true
	plan, err = p.Plan(ctx, Request{Groups: []string{g}})
	if err != nil || plan.Bundles[0].Refused || len(plan.Executable()) != 1 {
		t.Fatalf("--allow-active: %+v %v", plan.Bundles, err)
	}
}

func TestPlanPartitionsAndUnknownActivity(t *testing.T) {
	adm := fakes.NewAdmin("scus")
	rd := fakes.NewMemReader(8)
	p := &Planner{Cluster: scus, Admin: adm, Reader: rd, Describers: map[string]GroupDescriber{
		"scus": &staticDescriber{err: errors.New("unable to dial: connection refused")},
		"wus":  nil, // no kafkaBootstrap
	}}
	// Partitions 0 and 4 share bundle b0; 2 is in b3. A group that hashes to 5 (b1).
	g := groupIn("x", 5, 8)
	plan, err := p.Plan(context.Background(), Request{Partitions: []int32{4, 0, 2}, Groups: []string{g}})
	if err != nil {
		t.Fatal(err)
	}
	var ranges []string
	for _, b := range plan.Bundles {
		ranges = append(ranges, b.Range)
	}
	if !slices.Equal(ranges, []string{b0, b1, b3}) {
		t.Fatalf("bundles %v", ranges)
	}
	if !slices.Equal(plan.RequestedPartitions, []int32{0, 2, 4}) {
		t.Errorf("requested partitions %v", plan.RequestedPartitions)
	}
	// The requested group has no persisted offsets: it is still in the plan, unknown, and
	// its bundle is refused (not proven idle).
	ag, ok := plan.Group(g)
	if !ok || ag.Status != ActivityUnknown || ag.Activity["wus"].Error == "" || !strings.Contains(ag.Activity["scus"].Error, "connection refused") {
		t.Fatalf("group %+v", ag)
	}
	for _, b := range plan.Bundles {
		if b.Range == b1 && (!b.Refused || !strings.Contains(b.Reason, "not proven idle")) {
			t.Errorf("b1: %+v", b)
		}
		if b.Range != b1 && b.Refused {
			t.Errorf("bundle without groups refused: %+v", b)
		}
	}
}

func TestPlanErrors(t *testing.T) {
	ctx := context.Background()
	adm := fakes.NewAdmin("scus")
	adm.PartitionsErr = adminErr(404, "get partitioned metadata of")
	p := &Planner{Cluster: scus, Admin: adm, Reader: fakes.NewMemReader(8)}
	_, err := p.Plan(ctx, Request{Groups: []string{"G"}})
	var pe *PlanError
	if !errors.As(err, &pe) || !errors.Is(err, pulsarx.ErrNotFound) {
		t.Fatalf("want PlanError wrapping ErrNotFound, got %v", err)
	}

	adm = fakes.NewAdmin("scus")
	adm.BundlesErr = adminErr(0, "get bundles of")
	p.Admin = adm
	if _, err := p.Plan(ctx, Request{Groups: []string{"G"}}); !errors.Is(err, pulsarx.ErrUnreachable) {
		t.Fatalf("want ErrUnreachable, got %v", err)
	}

	p.Admin = fakes.NewAdmin("scus")
	if _, err := p.Plan(ctx, Request{Partitions: []int32{8}}); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("partition 8 of 8: want ErrBadRequest, got %v", err)
	}

	rd := fakes.NewMemReader(8)
	rd.Err = errors.New("broker gone")
	p.Reader = rd
	if _, err := p.Plan(ctx, Request{Groups: []string{"G"}}); !errors.As(err, &pe) || pe.Step == "" {
		t.Fatalf("reader failure: %v", err)
	}
}

// A --group glob has no offsets partition to hash to: it is expanded to the persisted
// groups it matches (every partition read once), and one that matches none is a bad
// request naming the cluster, not a reload of nothing.
func TestPlanGroupGlob(t *testing.T) {
	ctx := context.Background()
	a := groupIn("orders-a", 3, 8)      // b2
	b := groupIn("orders/b", 0, 8)      // b0: * crosses "/"
	other := groupIn("billing-x", 1, 8) // b1: not matched
	rd := fakes.NewMemReader(8).Commit(
		kop.OffsetCommit{Group: a, Topic: topic1, Partition: 0, Offset: 1},
		kop.OffsetCommit{Group: b, Topic: topic1, Partition: 0, Offset: 2},
		kop.OffsetCommit{Group: other, Topic: topic1, Partition: 0, Offset: 3},
	)
	p := &Planner{Cluster: scus, Admin: fakes.NewAdmin("scus"), Reader: rd,
		Describers: map[string]GroupDescriber{"scus": &staticDescriber{}}}
	plan, err := p.Plan(ctx, Request{Groups: []string{"orders*"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{a, b}
	slices.Sort(want)
	if !slices.Equal(plan.RequestedGroups, want) || !slices.Equal(plan.Patterns, []string{"orders*"}) {
		t.Fatalf("requested %v patterns %v, want %v from orders*", plan.RequestedGroups, plan.Patterns, want)
	}
	var ranges []string
	for _, pb := range plan.Bundles {
		ranges = append(ranges, pb.Range)
	}
	if !slices.Equal(ranges, []string{b0, b2}) {
		t.Errorf("bundles %v, want [%s %s] (not %s's %s)", ranges, b0, b2, other, b1)
	}
	// A literal beside a glob is kept as it is, persisted or not.
	plan, err = p.Plan(ctx, Request{Groups: []string{"orders-a*", "new-group"}})
	if err != nil || !slices.Contains(plan.RequestedGroups, "new-group") || !slices.Contains(plan.RequestedGroups, a) {
		t.Fatalf("literal beside glob: %v %v", plan.RequestedGroups, err)
	}
	_, err = p.Plan(ctx, Request{Groups: []string{"nothing-*"}})
	if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "cluster scus") || !strings.Contains(err.Error(), "nothing-*") {
		t.Fatalf("a glob matching nothing: want ErrBadRequest naming scus and the glob, got %v", err)
	}
}
