package reload

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

// KoP does not coordinate the group here (the partition it lives in is not served): the
// group cannot be live here, so the plan does not refuse the bundle that brings it back.
func TestPlanUnservedGroupIsNotActive(t *testing.T) {
	g := groupIn("g", 3, 8)
	rd := fakes.NewMemReader(8).Commit(kop.OffsetCommit{Group: g, Topic: topic1, Partition: 0, Offset: 10})
	notCoordinator := &staticDescriber{groups: map[string]GroupActivity{g: {Err: kerr.NotCoordinator}}}
	plan := func(f OffsetFetcher) *Plan {
		pl, err := (&Planner{Cluster: scus, Admin: fakes.NewAdmin("scus"), Reader: rd, Describers: map[string]GroupDescriber{"scus": notCoordinator},
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

// countingFetcher answers NOT_COORDINATOR for the groups of the unserved partitions and
// counts who it was asked about.
type countingFetcher struct {
	mu       sync.Mutex
	asked    []string
	unserved map[int32]bool
}

func (c *countingFetcher) FetchOffsets(_ context.Context, g string) ([]TopicOffset, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, g)
	if c.unserved[loader.PartitionFor(g, 8)] {
		return nil, kerr.NotCoordinator
	}
	return []TopicOffset{}, nil
}

// One probe per offsets partition: the groups of an unserved partition are not asked one by
// one (at scale each would wait for its timeout), nor described there.
func TestPlanProbesUnservedPartitions(t *testing.T) {
	rd := fakes.NewMemReader(8)
	var in3 []string
	for i := 0; len(in3) < 20; i++ {
		g := fmt.Sprintf("g-%d", i)
		if loader.PartitionFor(g, 8) == 3 {
			in3 = append(in3, g)
			rd.Commit(kop.OffsetCommit{Group: g, Topic: topic1, Partition: 0, Offset: 10})
		}
	}
	f := &countingFetcher{unserved: map[int32]bool{3: true}}
	d := &staticDescriber{}
	pl, err := (&Planner{Cluster: scus, Admin: fakes.NewAdmin("scus"), Reader: rd, Describers: map[string]GroupDescriber{"scus": d},
		Fetcher: f}).Plan(context.Background(), Request{Partitions: []int32{3}})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range in3 {
		if slices.Contains(f.asked, g) {
			t.Fatalf("group %s of the unserved partition asked one by one: %v", g, f.asked)
		}
		for _, asked := range d.asked {
			if slices.Contains(asked, g) {
				t.Fatalf("group %s of the unserved partition described: %v", g, d.asked)
			}
		}
	}
	if b := pl.Bundles[0]; b.Refused || len(pl.Groups) != 20 || pl.Groups[0].Here != ActivityUnserved ||
		!strings.Contains(pl.Groups[0].Served.Error, "offsets partition 3 is not served") {
		t.Fatalf("%+v %+v", b, pl.Groups[0])
	}
}
