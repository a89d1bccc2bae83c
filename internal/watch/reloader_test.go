package watch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/reload"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

func TestShutdownSafeAdminNeverLeavesABundleUnloaded(t *testing.T) {
	adm := fakes.NewAdmin("wus") // fails calls on a done context, as the admin client does
	a := ShutdownSafeAdmin{BundleAdmin: adm, CallTimeout: time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	if err := a.UnloadBundle(ctx, "public/__kafka", "0x00000000_0x40000000"); err != nil {
		t.Fatal(err)
	}
	cancel() // the signal arrives between the unload and the lookup
	if _, err := a.LookupOwner(ctx, "persistent://public/__kafka/__consumer_offsets-partition-0"); err != nil {
		t.Fatalf("the lookup after an unload was cancelled: %v", err)
	}
	if !adm.Owned("0x00000000_0x40000000") {
		t.Error("the bundle was left unloaded")
	}
	// After the signal no new unload starts.
	err := a.UnloadBundle(ctx, "public/__kafka", "0x40000000_0x80000000")
	if err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "not unloaded") {
		t.Errorf("unload after the signal: %v", err)
	}
	if w := adm.Writes(); len(w) != 2 || w[0] != "unload public/__kafka/0x00000000_0x40000000" ||
		w[1] != "lookup persistent://public/__kafka/__consumer_offsets-partition-0" {
		t.Errorf("calls that reached the admin: %v", w)
	}
}

func TestNewReloadSessionWrapsAdminAndRefusesActive(t *testing.T) {
	p := &reload.Planner{AllowActive: true}
	e := &reload.Executor{Admin: fakes.NewAdmin("wus")}
	s := NewReloadSession(p, e, 0)
	if s.Planner.AllowActive {
		t.Error("AllowActive kept")
	}
	if _, ok := s.Executor.Admin.(ShutdownSafeAdmin); !ok {
		t.Errorf("admin not wrapped: %T", s.Executor.Admin)
	}
}

// TestReloadSessionHealsBundleWithLiveGroup: watch --repair's real planner and executor on a
// bundle of wus where a stale group S shares its offsets partition with a group L live on
// wus that keeps committing (between the plan and the unload too). The bundle is not refused,
// S is healed, and L's offset never goes back (its own commits are no loss).
func TestReloadSessionHealsBundleWithLiveGroup(t *testing.T) {
	const topic = "persistent://public/default/topic-1"
	in := func(prefix string, p int32) string {
		for i := 0; ; i++ {
			if g := fmt.Sprintf("%s-%d", prefix, i); loader.PartitionFor(g, 8) == p {
				return g
			}
		}
	}
	s, l := in("stale", 3), in("live", 3)
	k := fakes.NewKoP(t)
	rd := fakes.NewMemReader(8).Commit(kop.OffsetCommit{Group: s, Topic: topic, Partition: 0, Offset: 10900},
		kop.OffsetCommit{Group: l, Topic: topic, Partition: 0, Offset: 200})
	k.Set(s, "topic-1", 0, 500) // stale: the topic holds 10900
	k.Set(l, "topic-1", 0, 200)
	k.SetMembers(l, 1)
	lOffset := int64(200)
	commitL := func() { // KoP's commit path: the topic, then the cache
		lOffset += 10
		rd.Commit(kop.OffsetCommit{Group: l, Topic: topic, Partition: 0, Offset: lOffset})
		k.Set(l, "topic-1", 0, lOffset)
	}
	adm := fakes.NewAdmin("wus")
	adm.OnUnload = func(string) { k.Set(s, "topic-1", 0, 10900); k.Set(l, "topic-1", 0, lOffset) } // the load
	kg := kop.KafkaGroups{Admin: k.Admin(t, kgo.RetryTimeout(2*time.Second)), KafkaNamespace: "public/default"}
	wus := reload.ClusterRef{Name: "wus"}
	rs := NewReloadSession(&reload.Planner{Cluster: wus, Admin: adm, Reader: rd, Fetcher: kg, Describers: map[string]reload.GroupDescriber{"wus": kg}},
		&reload.Executor{Cluster: wus, Admin: adm, Reader: rd, Fetcher: kg, Wait: 2 * time.Second, PollInterval: 10 * time.Millisecond}, time.Second)
	plan, err := rs.Plan(context.Background(), []string{s})
	if err != nil {
		t.Fatal(err)
	}
	pb := plan.Bundles[0]
	if pb.Refused || !slices.Contains(pb.Active, l) {
		t.Fatalf("the bundle with %s live on wus: %+v", l, pb)
	}
	commitL() // after the plan
	res := rs.Reload(context.Background(), plan, pb)
	if res.Status != reload.BundleVerified || !res.Unloaded {
		t.Fatalf("%+v", res)
	}
	fo := func(g string) int64 {
		offs, err := kg.FetchOffsets(context.Background(), g)
		if err != nil || len(offs) != 1 {
			t.Fatalf("%s: %v %v", g, offs, err)
		}
		return offs[0].Offset
	}
	if got := fo(s); got != 10900 {
		t.Errorf("stale group serves %d after the reload, want 10900", got)
	}
	if got := fo(l); got != 210 {
		t.Errorf("live group serves %d after the reload, want its last commit 210", got)
	}
}
