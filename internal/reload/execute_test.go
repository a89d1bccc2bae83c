package reload

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

// kafkaGroups is KafkaGroups over a fake KoP whose kgo retries coordinator errors for up to
// 2 s, as a short --coordinator-wait would.
func kafkaGroups(t *testing.T, k *fakes.KoP) kop.KafkaGroups {
	return kop.KafkaGroups{Admin: k.Admin(t, kgo.RetryTimeout(2*time.Second)), KafkaNamespace: "public/default"}
}

func TestKafkaGroupsDescribeLiveMember(t *testing.T) {
	k := fakes.NewKoP(t)
	k.Set("idle", "topic-1", 0, 3)
	k.SetMembers("live", 1)
	kg := kafkaGroups(t, k)
	ctx := context.Background()
	got, err := kg.DescribeGroups(ctx, []string{"live", "idle", "never"})
	if err != nil || got["live"].Members != 1 || got["live"].State != "Stable" {
		t.Fatalf("live group: %+v (%v)", got["live"], err)
	}
	if got["idle"].Members != 0 || got["never"].Members != 0 {
		t.Errorf("idle/never: %+v %+v", got["idle"], got["never"])
	}

	// A plan over the fake KoP: the live group's bundle is refused under --refuse-live.
	p := &Planner{Cluster: scus, Admin: fakes.NewAdmin("scus"), Reader: fakes.NewMemReader(8).Commit(
		kop.OffsetCommit{Group: "live", Topic: topic1, Partition: 0, Offset: 1}),
		Describers: map[string]GroupDescriber{"scus": kg}, RefuseLive: true}
	plan, err := p.Plan(ctx, Request{Groups: []string{"live"}})
	if err != nil {
		t.Fatal(err)
	}
	if !plan.Bundles[0].Refused || !strings.Contains(plan.Bundles[0].Reason, "live members (--refuse-live): live@scus") {
		t.Errorf("plan: %+v", plan.Bundles)
	}
}

// The whole reload against kfake: KoP serves 500 (stale) while the topic holds 10900; the
// unload makes the fake "KoP" answer COORDINATOR_LOAD_IN_PROGRESS twice, then the loaded value.
func TestExecuteVerifiesFreshCache(t *testing.T) {
	k := fakes.NewKoP(t)
	g := groupIn("G", 3, 8)
	k.Set(g, "topic-1", 0, 500) // the stale cache
	rd := fakes.NewMemReader(8).Commit(kop.OffsetCommit{Group: g, Topic: topic1, Partition: 0, Offset: 10900})
	fa := fakes.NewAdmin("scus")
	fa.OnUnload = func(string) {
		k.SetLoading(g, 2)
		k.Set(g, "topic-1", 0, 10900) // what KoP's load will put in the cache
	}
	kg := kafkaGroups(t, k)
	p := &Planner{Cluster: scus, Admin: fa, Reader: rd, Describers: map[string]GroupDescriber{"scus": kg}, Fetcher: kg}
	plan, err := p.Plan(context.Background(), Request{Groups: []string{g}})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Executable()) != 1 {
		t.Fatalf("idle group must be executable: %+v", plan.Bundles)
	}
	var logs []string
	ex := (&Executor{Cluster: scus, Admin: fa, Fetcher: kg, Reader: rd, Wait: 10 * time.Second, PollInterval: 50 * time.Millisecond,
		Log: func(f string, a ...any) { logs = append(logs, f) }}).Execute(context.Background(), plan, plan.Executable())
	if ex.ExitCode != 0 {
		t.Fatalf("exit %d: %+v", ex.ExitCode, ex.Bundles)
	}
	b := ex.Bundles[0]
	if b.Status != BundleVerified || !b.Unloaded || !b.Loaded || b.Owner != "pulsar://broker-1:6650" || b.VerifiedAt == nil {
		t.Errorf("bundle: %+v", b)
	}
	gr := ex.Groups[0]
	if gr.Status != GroupFresh || FormatTest(gr.Before) != "topic-1/0=500" || FormatTest(gr.After) != "topic-1/0=10900" {
		t.Errorf("group before/after: %s -> %s (%s)", FormatTest(gr.Before), FormatTest(gr.After), gr.Status)
	}
	if k.LoadingLeft(g) != 0 {
		t.Error("the coordinator errors were not all seen")
	}
	// Unload, then a lookup of each offsets partition of the bundle (3 and 7).
	calls := adm2(fa.Calls())
	want := []string{"unload public/__kafka/" + b2,
		"lookup persistent://public/__kafka/__consumer_offsets-partition-3",
		"lookup persistent://public/__kafka/__consumer_offsets-partition-7"}
	if !slices.Equal(calls, want) {
		t.Errorf("writing calls %v, want %v", calls, want)
	}
	if !slices.Equal(ex.Unloaded, []string{b2}) || len(ex.NotUnloaded) != 0 {
		t.Errorf("unloaded %v not %v", ex.Unloaded, ex.NotUnloaded)
	}
}

func TestExecuteCacheStillDiffers(t *testing.T) {
	k := fakes.NewKoP(t)
	g := groupIn("G", 3, 8)
	k.Set(g, "topic-1", 0, 500)
	rd := fakes.NewMemReader(8).Commit(kop.OffsetCommit{Group: g, Topic: topic1, Partition: 0, Offset: 10900})
	fa := fakes.NewAdmin("scus")
	kg := kafkaGroups(t, k)
	plan, err := (&Planner{Cluster: scus, Admin: fa, Reader: rd, AllowActive: true, Fetcher: kg}).Plan(context.Background(), Request{Groups: []string{g}})
	if err != nil {
		t.Fatal(err)
	}
	ex := (&Executor{Cluster: scus, Admin: fa, Fetcher: kg, Reader: rd, Wait: 300 * time.Millisecond, PollInterval: 50 * time.Millisecond}).
		Execute(context.Background(), plan, plan.Executable())
	if ex.ExitCode != 4 || ex.Bundles[0].Status != BundleCacheDiffers || ex.Groups[0].Status != GroupCacheDiffers {
		t.Fatalf("want exit 4 cache_differs: %d %+v %+v", ex.ExitCode, ex.Bundles, ex.Groups)
	}
	if FormatTest(ex.Groups[0].After) != "topic-1/0=500" || ex.Groups[0].Persisted[0].Offset != 10900 {
		t.Errorf("after %s persisted %v", FormatTest(ex.Groups[0].After), ex.Groups[0].Persisted)
	}
}

// KoP does not answer (nothing listens): the bundle is unloaded and loaded, the cache is
// not proven fresh: exit 3, and the report says so.
func TestExecuteKafkaUnreachable(t *testing.T) {
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"), kgo.RetryTimeout(200*time.Millisecond), kgo.DialTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	kg := kop.KafkaGroups{Admin: kadm.NewClient(cl), KafkaNamespace: "public/default"}
	g := groupIn("G", 3, 8)
	rd := fakes.NewMemReader(8).Commit(kop.OffsetCommit{Group: g, Topic: topic1, Partition: 0, Offset: 10900})
	fa := fakes.NewAdmin("scus")
	plan, err := (&Planner{Cluster: scus, Admin: fa, Reader: rd, Describers: map[string]GroupDescriber{"scus": kg}, Fetcher: kg}).
		Plan(context.Background(), Request{Groups: []string{g}})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Groups[0].Status != ActivityUnknown || !plan.Bundles[0].Refused {
		t.Fatalf("unreachable KoP must make the group unknown and the bundle refused: %+v", plan.Bundles)
	}
	ex := (&Executor{Cluster: scus, Admin: fa, Fetcher: kg, Reader: rd, Wait: 300 * time.Millisecond, PollInterval: 50 * time.Millisecond, AcceptLoss: true}).
		Execute(context.Background(), plan, plan.Bundles) // as with --allow-active --accept-loss
	if ex.ExitCode != 3 || ex.Bundles[0].Status != BundleUnverified || !ex.Bundles[0].Unloaded || !ex.Bundles[0].Loaded {
		t.Fatalf("want exit 3 unverified: %d %+v", ex.ExitCode, ex.Bundles)
	}
	if gr := ex.Groups[0]; gr.Status != GroupUnverified || gr.After == nil || gr.After.ErrorKind != ErrorKindUnreachable {
		t.Errorf("group: %+v %+v", gr, gr.After)
	}
	if !fa.Owned(b2) {
		t.Error("bundle not owned again after the lookups")
	}
}

// Partial failure: three bundles; the second unload fails. The first is reported unloaded
// and verified, the second unload_failed, the third not attempted.
func TestExecutePartialFailure(t *testing.T) {
	fa := fakes.NewAdmin("scus")
	fa.UnloadErr[b1] = errUnreachable
	rd := fakes.NewMemReader(8)
	plan, err := (&Planner{Cluster: scus, Admin: fa, Reader: rd}).Plan(context.Background(), Request{Partitions: []int32{0, 1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	var slept []time.Duration
	ex := (&Executor{Cluster: scus, Admin: fa, Reader: rd, Pause: time.Minute,
		Sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }}).
		Execute(context.Background(), plan, plan.Executable())
	var st []string
	for _, b := range ex.Bundles {
		st = append(st, b.Range+"="+b.Status)
	}
	want := []string{b0 + "=verified", b1 + "=unload_failed", b3 + "=not_attempted"}
	if !slices.Equal(st, want) {
		t.Fatalf("bundles %v, want %v", st, want)
	}
	if ex.ExitCode != 3 || !slices.Equal(ex.Unloaded, []string{b0}) || !slices.Equal(ex.NotUnloaded, []string{b1, b3}) {
		t.Errorf("exit %d unloaded %v not %v", ex.ExitCode, ex.Unloaded, ex.NotUnloaded)
	}
	if !strings.Contains(ex.Bundles[1].Error, "unreachable") {
		t.Errorf("unload error: %q", ex.Bundles[1].Error)
	}
	if !slices.Equal(slept, []time.Duration{time.Minute}) {
		t.Errorf("--pause between bundles: %v", slept)
	}
	for _, c := range fa.Calls() {
		if strings.Contains(c, b3) {
			t.Errorf("bundle after the failure was touched: %s", c)
		}
	}

	// A lookup that keeps failing: tried again 3 times (after 1, 2, 4 s), then unloaded, not
	// loaded.
	fa = fakes.NewAdmin("scus")
	const p4 = "persistent://public/__kafka/__consumer_offsets-partition-4"
	fa.LookupErr[p4] = errors.New("lookup timed out")
	slept = nil
	ex = (&Executor{Cluster: scus, Admin: fa, Reader: rd,
		Sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }}).
		Execute(context.Background(), plan, plan.Executable()[:1])
	if b := ex.Bundles[0]; b.Status != BundleLoadFailed || !b.Unloaded || b.Loaded || ex.ExitCode != 3 {
		t.Errorf("load failure: %+v exit %d", b, ex.ExitCode)
	}
	if n := slices.Index(fa.Calls(), "lookup "+p4); n < 0 || strings.Count(strings.Join(fa.Calls(), "\n"), "lookup "+p4) != 4 ||
		!slices.Equal(slept, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}) {
		t.Errorf("lookups %v, sleeps %v: want 4 lookups of partition 4, 1, 2 and 4 s apart", fa.Calls(), slept)
	}
}

// A lookup that fails right after the unload (the old owner still holds the bundle's lock)
// and then succeeds: the bundle is loaded and verified.
func TestExecuteLookupTriedAgain(t *testing.T) {
	g, rd, fa, k, pl := stalePlan(t)
	fails := 1
	topic := scus.PartitionTopic(pl.Executable()[0].OffsetsPartitions[0])
	fa.OnUnload = func(string) {
		k.unloaded()
		k.mu.Lock()
		k.cache[g] = []TopicOffset{{Topic: "topic-1", Partition: 0, Offset: 10900}}
		k.mu.Unlock()
		fa.LookupErr[topic] = adminErr(500, "look up")
	}
	var slept []time.Duration
	ex := (&Executor{Cluster: scus, Admin: fa, Fetcher: k, Reader: rd, Wait: 100 * time.Millisecond, PollInterval: 10 * time.Millisecond,
		Sleep: func(_ context.Context, d time.Duration) error {
			slept = append(slept, d)
			if fails--; fails == 0 {
				delete(fa.LookupErr, topic)
			}
			return nil
		}}).Execute(context.Background(), pl, pl.Executable())
	if b := ex.Bundles[0]; ex.ExitCode != 0 || b.Status != BundleVerified || !b.Loaded || len(slept) == 0 || slept[0] != time.Second {
		t.Fatalf("exit %d %+v, slept %v", ex.ExitCode, b, slept)
	}
}

func TestErrorKind(t *testing.T) {
	for err, want := range map[error]string{
		kerr.CoordinatorLoadInProgress:        ErrorKindCoordinator,
		kerr.NotCoordinator:                   ErrorKindCoordinator,
		kerr.CoordinatorNotAvailable:          ErrorKindCoordinator,
		kerr.GroupAuthorizationFailed:         ErrorKindKafka,
		errors.New("unable to dial"):          ErrorKindUnreachable,
		context.DeadlineExceeded:              ErrorKindUnreachable,
		errors.Join(kerr.NotCoordinator, nil): ErrorKindCoordinator,
	} {
		if got := ErrorKind(err); got != want {
			t.Errorf("%v: %s, want %s", err, got, want)
		}
	}
}

func FormatTest(a *CacheAnswer) string {
	if a == nil {
		return "<nil>"
	}
	if a.Error != "" {
		return a.ErrorKind
	}
	var s []string
	for _, o := range a.Offsets {
		s = append(s, o.Topic+"/"+itoa(o.Partition)+"="+itoa64(o.Offset))
	}
	return strings.Join(s, ",")
}

func adm2(calls []string) []string {
	var out []string
	for _, c := range calls {
		if strings.HasPrefix(c, "unload") || strings.HasPrefix(c, "lookup") {
			out = append(out, c)
		}
	}
	return out
}

func itoa(v int32) string   { return itoa64(int64(v)) }
func itoa64(v int64) string { return strconvFormat(v) }

func strconvFormat(v int64) string { return strconv.FormatInt(v, 10) }

// Several brokers: the group's coordinator moves between the plan and the execution (the
// load manager shed its bundle), and again at the unload (the bundle comes back on another
// broker); one offsets partition of the bundle is not served after the first load, so the
// executor unloads and looks the bundle up once more, and it comes back on a third broker.
// The executor must follow each move: KoP is asked on the broker that coordinates the
// group now, and the report names the owner of the last lookup.
func TestExecuteFollowsTheOwner(t *testing.T) {
	k := fakes.NewKoPBrokers(t, 2)
	g := groupIn("G", 3, 8)
	k.Set(g, "topic-1", 0, 500) // the stale cache
	rd := fakes.NewMemReader(8).Commit(kop.OffsetCommit{Group: g, Topic: topic1, Partition: 0, Offset: 10900})
	kg := kafkaGroups(t, k)
	fa := fakes.NewAdmin("scus")
	broker := "broker-a"
	fa.LookupBroker = func(string) string { return broker }
	probe := loader.ProbeGroup(7, 8) // the bundle's other offsets partition
	unloads := 0
	fa.OnUnload = func(string) {
		unloads++
		switch unloads {
		case 1: // the bundle comes back on broker-b, with partition 7 not served
			broker = "broker-b"
			k.MoveCoordinator(g)
			k.SetLoading(g, 2)
			k.Set(g, "topic-1", 0, 10900)
			k.SetUnserved(probe, true)
		case 2: // the second unload and lookup: on broker-c, every partition served
			broker = "broker-c"
			k.SetUnserved(probe, false)
		}
	}
	plan, err := (&Planner{Cluster: scus, Admin: fa, Reader: rd, Describers: map[string]GroupDescriber{"scus": kg}, Fetcher: kg}).
		Plan(context.Background(), Request{Groups: []string{g}})
	if err != nil {
		t.Fatal(err)
	}
	planned := k.ServedBy(g)
	if planned < 0 || len(plan.Executable()) != 1 {
		t.Fatalf("plan: served by %d, %+v", planned, plan.Bundles)
	}
	if moved := k.MoveCoordinator(g); moved == planned { // shed between plan and execute
		t.Fatal("the coordinator did not move")
	}
	var logs []string
	// Wait is what the unserved probe costs before the second unload, and the budget of the
	// verification after it: 1 s ended cache_differs about once in 15 runs on a loaded machine.
	ex := (&Executor{Cluster: scus, Admin: fa, Fetcher: kg, Reader: rd, Wait: 3 * time.Second, PollInterval: 50 * time.Millisecond,
		Log: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }}).Execute(context.Background(), plan, plan.Executable())
	b := ex.Bundles[0]
	if ex.ExitCode != 0 || b.Status != BundleVerified || unloads != 2 {
		t.Fatalf("exit %d, %d unloads: %+v\n%s", ex.ExitCode, unloads, b, strings.Join(logs, "\n"))
	}
	if b.Owner != "pulsar://broker-c:6650" {
		t.Errorf("owner %q, want the broker of the last lookup (pulsar://broker-c:6650)", b.Owner)
	}
	if gr := ex.Groups[0]; gr.Status != GroupFresh || FormatTest(gr.Before) != "topic-1/0=500" || FormatTest(gr.After) != "topic-1/0=10900" {
		t.Errorf("group %s -> %s (%s)", FormatTest(gr.Before), FormatTest(gr.After), gr.Status)
	}
	if now := k.Cluster.CoordinatorFor(g); k.ServedBy(g) != now {
		t.Errorf("verified on broker %d, the coordinator is %d", k.ServedBy(g), now)
	}
	if !slices.ContainsFunc(logs, func(l string) bool {
		return strings.Contains(l, "came back on pulsar://broker-c:6650 (it was on pulsar://broker-b:6650)")
	}) {
		t.Errorf("the move is not logged:\n%s", strings.Join(logs, "\n"))
	}
}
