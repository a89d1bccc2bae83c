package reload

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

// splitPlan plans the reload of a stale group of offsets partition 3 (KoP serves 500, the
// topic holds 10900) on the lab's layout. KoP serves 10900 once a bundle holding partition 3
// is unloaded; unloaded records the ranges unloaded.
func splitPlan(t *testing.T) (g string, fa *fakes.Admin, fetcher *fakes.KoP, rd *fakes.MemReader, plan *Plan, unloaded func() []string) {
	t.Helper()
	g = groupIn("G", 3, 8)
	k := fakes.NewKoP(t)
	k.Set(g, "topic-1", 0, 500) // the stale cache
	rd = fakes.NewMemReader(8).Commit(kop.OffsetCommit{Group: g, Topic: topic1, Partition: 0, Offset: 10900})
	fa = fakes.NewAdmin("scus")
	var mu sync.Mutex
	var ranges []string
	fa.OnUnload = func(r string) {
		mu.Lock()
		ranges = append(ranges, r)
		mu.Unlock()
		b, err := pulsarx.ParseBundleRange(r)
		if err != nil {
			t.Error(err)
			return
		}
		if b.Contains(pulsarx.TopicHash(scus.PartitionTopic(3))) {
			k.Set(g, "topic-1", 0, 10900) // what KoP's load puts in the cache
		}
	}
	kg := kafkaGroups(t, k)
	plan, err := (&Planner{Cluster: scus, Admin: fa, Reader: rd, Describers: map[string]GroupDescriber{"scus": kg}, Fetcher: kg}).
		Plan(context.Background(), Request{Groups: []string{g}})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Executable()) != 1 {
		t.Fatalf("plan: %+v", plan.Bundles)
	}
	return g, fa, k, rd, plan, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(ranges)
	}
}

func executeLogged(t *testing.T, fa *fakes.Admin, k *fakes.KoP, rd *fakes.MemReader, plan *Plan) (*Execution, string) {
	t.Helper()
	var mu sync.Mutex
	var logs []string
	kg := kafkaGroups(t, k)
	ex := (&Executor{Cluster: scus, Admin: fa, Fetcher: kg, Reader: rd, Wait: 5 * time.Second, PollInterval: 50 * time.Millisecond,
		Log: func(f string, a ...any) {
			mu.Lock()
			logs = append(logs, fmt.Sprintf(f, a...))
			mu.Unlock()
		}}).Execute(context.Background(), plan, plan.Executable())
	return ex, strings.Join(logs, "\n")
}

// The planned bundle of public/__kafka is split between the plan and the execution
// (pulsar-admin namespaces split-bundle): its range no longer exists, and an unload of it
// fails (412). The executor reads the bundles again before the unload and unloads, in its
// place, the parts of it that hold its offsets partitions, says so, and verifies the load.
func TestExecuteUnloadsThePartsOfASplitBundle(t *testing.T) {
	g, fa, k, rd, plan, unloaded := splitPlan(t)
	pb := plan.Executable()[0]
	lo, hi, err := fa.Split(pb.Range)
	if err != nil {
		t.Fatal(err)
	}
	// The parts that hold the planned offsets partitions (one or both halves).
	var want []string
	for _, part := range pb.OffsetsPartitions {
		b, err := pulsarx.FindBundle(fa.BundleList, scus.PartitionTopic(part))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(want, b.Range) {
			want = append(want, b.Range)
		}
	}
	slices.Sort(want)
	t.Logf("planned %s (offsets partitions %v), split into %s and %s; parts holding them: %v", pb.Range, pb.OffsetsPartitions, lo, hi, want)

	ex, logs := executeLogged(t, fa, k, rd, plan)
	b := ex.Bundles[0]
	if ex.ExitCode != 0 || b.Status != BundleVerified || !b.Unloaded || !slices.Equal(b.SplitInto, want) {
		t.Fatalf("exit %d, %+v; want verified, split into %v\n%s", ex.ExitCode, b, want, logs)
	}
	if !slices.Equal(ex.Unloaded, want) || len(ex.NotUnloaded) != 0 {
		t.Errorf("execution: unloaded %v, not unloaded %v; want the parts %v unloaded", ex.Unloaded, ex.NotUnloaded, want)
	}
	if got := unloaded(); !slices.Equal(got, want) {
		t.Errorf("unloaded %v, want exactly the parts %v (never the planned range, nothing outside it)", got, want)
	}
	if gr := ex.Groups[0]; gr.Group != g || gr.Status != GroupFresh || FormatTest(gr.After) != "topic-1/0=10900" {
		t.Errorf("group: %+v", gr)
	}
	if !strings.Contains(logs, "was split since the plan") || !strings.Contains(logs, strings.Join(want, ", ")) {
		t.Errorf("the split is not said:\n%s", logs)
	}
}

// The bundles were redone since the plan so that the planned partitions now sit in a bundle
// reaching beyond the planned range (here: one bundle for the whole namespace): unloading it
// would touch topics the plan never checked. Nothing is unloaded or looked up; the bundle is
// refused with the reason, and the exit code is not 0.
func TestExecuteRefusesBundlesRedoneSincePlan(t *testing.T) {
	_, fa, k, rd, plan, unloaded := splitPlan(t)
	whole, err := pulsarx.BundlesFromBoundaries([]string{"0x00000000", "0xffffffff"})
	if err != nil {
		t.Fatal(err)
	}
	fa.BundleList = whole
	ex, logs := executeLogged(t, fa, k, rd, plan)
	b := ex.Bundles[0]
	if ex.ExitCode != 4 || b.Status != BundleRefused || b.Unloaded || b.Loaded ||
		!strings.Contains(b.Error, "reaches beyond the planned "+plan.Bundles[0].Range) || !strings.Contains(b.Error, "plan again") {
		t.Fatalf("exit %d, %+v\n%s", ex.ExitCode, b, logs)
	}
	if len(unloaded()) != 0 || len(fa.Writes()) != 0 {
		t.Errorf("unloads %v, writes %v: nothing may be unloaded or looked up", unloaded(), fa.Writes())
	}
}

// The bundles cannot be read again just before the unload: nothing is unloaded, exit 3.
func TestExecuteBundlesUnreadableBeforeUnload(t *testing.T) {
	_, fa, k, rd, plan, _ := splitPlan(t)
	fa.BundlesErr = errUnreachable
	ex, logs := executeLogged(t, fa, k, rd, plan)
	b := ex.Bundles[0]
	if ex.ExitCode != 3 || b.Status != BundleUnloadFailed || b.Unloaded || !strings.Contains(b.Error, "could not be read again just before the unload") {
		t.Fatalf("exit %d, %+v\n%s", ex.ExitCode, b, logs)
	}
	if len(fa.Writes()) != 0 {
		t.Errorf("writes %v: nothing may be unloaded or looked up", fa.Writes())
	}
}

// The planned bundle 0x00000000_0x40000000 (offsets partitions 0 and 4) was split so that each
// partition sits in a part of its own; the unload of one part fails. Both parts are tried,
// Unloaded lists only the part that was unloaded, and the failure is exit 3.
func TestExecuteSplitPartUnloadFails(t *testing.T) {
	g := groupIn("G", 0, 8)
	k := fakes.NewKoP(t)
	k.Set(g, "topic-1", 0, 10900) // served already: the verification does not wait
	rd := fakes.NewMemReader(8).Commit(kop.OffsetCommit{Group: g, Topic: topic1, Partition: 0, Offset: 10900})
	fa := fakes.NewAdmin("scus")
	kg := kafkaGroups(t, k)
	plan, err := (&Planner{Cluster: scus, Admin: fa, Reader: rd, Describers: map[string]GroupDescriber{"scus": kg}, Fetcher: kg}).
		Plan(context.Background(), Request{Groups: []string{g}})
	if err != nil || len(plan.Executable()) != 1 || plan.Executable()[0].Range != "0x00000000_0x40000000" {
		t.Fatalf("plan: %+v %v", plan, err)
	}
	// Partition 4 hashes below 0x14000000, partition 0 above it.
	if fa.BundleList, err = pulsarx.BundlesFromBoundaries([]string{"0x00000000", "0x14000000", "0x40000000", "0x80000000", "0xc0000000", "0xffffffff"}); err != nil {
		t.Fatal(err)
	}
	fa.UnloadErr["0x14000000_0x40000000"] = adminErr(500, "unload bundle")
	ex, logs := executeLogged(t, fa, k, rd, plan)
	b := ex.Bundles[0]
	if ex.ExitCode != 3 || b.Status != BundleUnloadFailed || !slices.Equal(b.SplitInto, []string{"0x00000000_0x14000000", "0x14000000_0x40000000"}) {
		t.Fatalf("exit %d, %+v\n%s", ex.ExitCode, b, logs)
	}
	if !slices.Equal(ex.Unloaded, []string{"0x00000000_0x14000000"}) {
		t.Errorf("unloaded %v, want only the part whose unload succeeded", ex.Unloaded)
	}
}
