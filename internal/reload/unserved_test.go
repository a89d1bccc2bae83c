package reload

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kop-offsets/kop-offsets/internal/testkit"
)

// KoP does not coordinate the group here (the partition it lives in is not served): the
// group cannot be live here, so the plan does not refuse the bundle that brings it back.
func TestPlanUnservedGroupIsNotActive(t *testing.T) {
	g := groupIn("g", 3, 8)
	rd := testkit.NewMemReader(8).Commit(testkit.OffsetCommit{Group: g, Topic: topic1, Partition: 0, Offset: 10})
	notCoordinator := &staticDescriber{groups: map[string]GroupActivity{g: {Err: kerr.NotCoordinator}}}
	plan := func(f OffsetFetcher) *Plan {
		pl, err := (&Planner{Cluster: scus, Admin: newFakeAdmin(t), Reader: rd, Describers: map[string]GroupDescriber{"scus": notCoordinator},
			Fetcher: f}).Plan(context.Background(), Request{Partitions: []int32{3}})
		if err != nil {
			t.Fatal(err)
		}
		return pl
	}
	pl := plan(errFetcher{kerr.NotCoordinator})
	if b := pl.Bundles[0]; b.Refused || len(b.Active) != 0 || pl.Groups[0].Here != ActivityUnserved {
		t.Fatalf("%+v %+v", b, pl.Groups[0])
	}
	// KoP unreachable is another matter: not proven idle, refused.
	pl = plan(errFetcher{context.DeadlineExceeded})
	if b := pl.Bundles[0]; !b.Refused || pl.Groups[0].Here != ActivityUnknown {
		t.Fatalf("unreachable: %+v %+v", b, pl.Groups[0])
	}
}
