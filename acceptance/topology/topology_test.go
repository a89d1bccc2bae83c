//go:build topology

// The several-brokers suite. It needs a lab with at least two brokers per cluster and KoP on
// each (kop-lab up --brokers 2, with KOP_NAR), and fails, never skips, on any other lab:
//
//	KOP_NAR=/path/to/kop.nar KOP_LAB_KEEP=1 bin/kop-lab up --brokers 2
//	go test -count=1 -tags topology -p 1 -timeout 30m ./acceptance/topology/
//
// (or make e2e-topology, which also runs internal/lab's topology tests). KOP_LAB_BROKERS
// defaults to 2 here, so that the test binary reuses that lab instead of replacing it.
package topology_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kop-offsets/kop-offsets/internal/commands/locate"
	"github.com/kop-offsets/kop-offsets/internal/commands/root"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/reload"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
)

// TestMain asks for two brokers per cluster unless KOP_LAB_BROKERS says otherwise: without
// it the lab's default shape (one standalone per cluster) would make labrun.Ensure stop a running
// 2x2 lab and start standalones in its place (seen on the lab, 2026-12-02), and every test
// here would then fail on the one-broker lab it caused.
func TestMain(m *testing.M) {
	if os.Getenv("KOP_LAB_BROKERS") == "" {
		_ = os.Setenv("KOP_LAB_BROKERS", "2")
	}
	labtest.Main(m)
}

// severalBrokers returns the lab and each cluster's active brokers, and fails when a cluster
// has fewer than two or KoP is off: this suite says nothing on a one-broker lab.
func severalBrokers(t *testing.T) (*lab.Lab, map[string][]string) {
	t.Helper()
	l := labtest.Lab(t)
	if !l.KoP.Enabled {
		t.Fatal("the topology suite needs KoP on every broker: start the lab with KOP_NAR=... kop-lab up --brokers 2")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := map[string][]string{}
	for _, c := range l.Clusters {
		bs, err := labtest.PulsarxAdmin(t, c).ActiveBrokers(ctx, c.Name)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if len(bs) < 2 {
			t.Fatalf("%s has %d active broker(s) %v: the topology suite needs a lab with several brokers per cluster (kop-lab up --brokers 2)", c.Name, len(bs), bs)
		}
		out[c.Name] = bs
	}
	return l, out
}

// scusOfSeveralBrokers is the start of a reload test on the multi-broker lab (severalBrokers):
// 5 minutes to run, the lab, its cluster scus and each cluster's active brokers.
func scusOfSeveralBrokers(t *testing.T) (context.Context, *lab.Lab, lab.Cluster, map[string][]string) {
	t.Helper()
	l, brokers := severalBrokers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx, l, l.Cluster("scus"), brokers
}

// doctor reads every broker at its own address: each is reported reachable with KoP, KoP
// advertises as many listeners as Pulsar has brokers, and no broker-level error is found.
func TestTopologyDoctorEveryBroker(t *testing.T) {
	l, brokers := severalBrokers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f, s := clitest.NewFactory("topology", false)
	err := clitest.Execute(ctx, root.NewCmdRoot(f), "--config", l.ConfigPath, "doctor", "-o", "json")
	t.Logf("doctor (%v):\n%s%s", err, s.Out, s.ErrOut)
	res := labtest.ParseDoctor(t, s.Out.Bytes())
	for _, c := range res.Clusters {
		want := brokers[c.Name]
		var ids []string
		for _, b := range c.Brokers {
			ids = append(ids, b.ID)
		}
		// Pulsar lists its active brokers as a set: each call may order them differently.
		if !slices.Equal(slices.Sorted(slices.Values(ids)), slices.Sorted(slices.Values(want))) {
			t.Errorf("%s: doctor read brokers %v, Pulsar lists %v", c.Name, ids, want)
		}
		if len(c.KafkaListeners) != len(want) {
			t.Errorf("%s: %d KoP listeners %+v for %d brokers", c.Name, len(c.KafkaListeners), c.KafkaListeners, len(want))
		}
	}
	labtest.BrokersHealthy(t, res, "a healthy several-broker lab")
}

// locate answers every offsets partition's group with an owner among the active brokers.
func TestTopologyLocateOwners(t *testing.T) {
	l, brokers := severalBrokers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var groups []string
	for p := range int32(lab.OffsetsTopicPartitions) {
		groups = append(groups, loader.ProbeGroup(p, int32(lab.OffsetsTopicPartitions)))
		// Make a broker take each bundle, so that every row has an owner.
		for _, c := range l.Clusters {
			if _, err := labtest.PulsarxAdmin(t, c).LookupOwner(ctx, pulsarx.PartitionTopic(lab.OffsetsTopic, p)); err != nil {
				t.Fatal(err)
			}
		}
	}
	f, s := clitest.NewFactory("topology", false)
	err := clitest.Execute(ctx, root.NewCmdRoot(f), append([]string{"--config", l.ConfigPath, "locate", "-o", "json"}, groups...)...)
	t.Logf("locate (%v):\n%s%s", err, s.Out, s.ErrOut)
	if err != nil {
		t.Fatal(err)
	}
	var rows []locate.Location
	if err := json.Unmarshal(s.Out.Bytes(), &rows); err != nil {
		t.Fatal(err)
	}
	owners := map[string]bool{}
	for _, r := range rows {
		if r.Error != "" || r.Owner == nil || !slices.Contains(brokers[r.Cluster], *r.Owner) {
			t.Errorf("row %+v: owner not among %v", r, brokers[r.Cluster])
			continue
		}
		owners[*r.Owner] = true
	}
	t.Logf("owners seen: %v", owners)
}

// moveBundle unloads bundle of ns on c to the broker dest (Pulsar's destinationBroker).
func moveBundle(t *testing.T, c lab.Cluster, ns, bundle, dest string) {
	t.Helper()
	put(t, fmt.Sprintf("%s/admin/v2/namespaces/%s/%s/unload?destinationBroker=%s", c.AdminURL, ns, bundle, dest))
}

// put sends an admin REST PUT with no body and fails the test unless it answers 2xx.
func put(t *testing.T, url string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("PUT %s: %s", url, resp.Status)
	}
}

// ownerOf is the broker owning bundle now, from the brokers' ownership lists.
func ownerOf(ctx context.Context, t *testing.T, c lab.Cluster, ns, bundle string) string {
	t.Helper()
	o, ok, err := pulsarx.NewOwners(labtest.PulsarxAdmin(t, c), c.Name).Owner(ctx, ns, bundle)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return ""
	}
	return o.Broker
}

// staleBehindKoP commits 42 for a new group (named from prefix) to c's offsets topic behind
// KoP's back, so that KoP does not serve it until its bundle is reloaded, and plans the
// reload of that group on c. It returns the group, the plan of one executable bundle, and an
// executor for it whose progress lines go to logs.
func staleBehindKoP(ctx context.Context, t *testing.T, l *lab.Lab, c lab.Cluster, prefix string) (string, *reload.Plan, *reload.Executor, *[]string) {
	t.Helper()
	adm := labtest.PulsarxAdmin(t, c)
	g := labtest.Name(prefix)
	topic := "persistent://public/default/" + labtest.Name(prefix)
	// The commit replicates to the other cluster, whose KoP would keep serving nothing for
	// it: a stale row that a later repair refuses (the topic exists nowhere, so the offset's
	// alignment is unknown; seen on the lab). Every cluster loads it again when the test ends.
	labtest.Settle(t, l, g)
	if _, _, err := labtest.Writer(t, c).Commit(ctx, kop.OffsetCommit{Group: g, Topic: topic, Offset: 42}); err != nil {
		t.Fatal(err)
	}
	kg := kop.KafkaGroups{Admin: kadm.NewClient(labtest.Kafka(t, c)), KafkaNamespace: "public/default"}
	rd := pulsarx.NewReader(c.Name, labtest.Pulsar(t, c), adm, "public", "__kafka", pulsarx.LoaderView)
	ref := reload.ClusterRef{Name: c.Name, Tenant: "public", MetadataNamespace: "__kafka", KafkaNamespace: "public/default"}
	// No Aligner here: a bundle that also holds a group replicated from the other cluster
	// (the suite's other tests commit on wus) would be refused as "alignment unknown" (seen
	// on the lab), which is not what these tests are about. AcceptLoss lets the plan take the
	// bundle anyway; the test's own group is c's and its check is the verification.
	plan, err := (&reload.Planner{Cluster: ref, Admin: adm, Reader: rd, Fetcher: kg, AcceptLoss: true,
		Describers: map[string]reload.GroupDescriber{c.Name: kg}}).Plan(ctx, reload.Request{Groups: []string{g}})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Executable()) != 1 {
		t.Fatalf("plan: %+v", plan.Bundles)
	}
	logs := &[]string{}
	ex := &reload.Executor{Cluster: ref, Admin: adm, Fetcher: kg, Reader: rd, Wait: time.Minute,
		Log: func(f string, a ...any) { *logs = append(*logs, fmt.Sprintf(f, a...)) }}
	return g, plan, ex, logs
}

// executeOwned executes plan (executeVerified) and checks that bundle of public/__kafka has an
// owner afterwards, both on the cluster and in the execution's report.
func executeOwned(ctx context.Context, t *testing.T, c lab.Cluster, bundle string, plan *reload.Plan, executor *reload.Executor, logs *[]string) {
	t.Helper()
	b := executeVerified(ctx, t, plan, executor, logs).Bundles[0]
	if now := ownerOf(ctx, t, c, "public/__kafka", bundle); now == "" || b.Owner == "" {
		t.Errorf("owner after the reload: %q, reported %q", now, b.Owner)
	}
}

// executeVerified carries out plan's one executable bundle, logs what it did, and fails the
// test unless it ended verified with the group fresh, exit 0.
func executeVerified(ctx context.Context, t *testing.T, plan *reload.Plan, executor *reload.Executor, logs *[]string) *reload.Execution {
	t.Helper()
	ex := executor.Execute(ctx, plan, plan.Executable())
	b := ex.Bundles[0]
	t.Logf("execution: %+v unloaded %v\n%s", b, ex.Unloaded, strings.Join(*logs, "\n"))
	if ex.ExitCode != 0 || b.Status != reload.BundleVerified || ex.Groups[0].Status != reload.GroupFresh {
		t.Fatalf("exit %d: %+v %+v", ex.ExitCode, b, ex.Groups)
	}
	return ex
}

// A stale group's bundle moves to the other broker between the plan and the execution (as
// the load manager's shedding would move it). The executor unloads by bundle, looks it up
// and verifies on whichever broker takes it: the group ends fresh and the report names the
// owner of the last lookup.
func TestTopologyReloadAfterTheBundleMoved(t *testing.T) {
	ctx, l, c, brokers := scusOfSeveralBrokers(t)
	adm := labtest.PulsarxAdmin(t, c)
	_, plan, executor, logs := staleBehindKoP(ctx, t, l, c, "topology-moved")
	bundle := plan.Executable()[0].Range
	was := ownerOf(ctx, t, c, "public/__kafka", bundle)
	dest := brokers[c.Name][0]
	if dest == was {
		dest = brokers[c.Name][1]
	}
	moveBundle(t, c, "public/__kafka", bundle, dest)
	deadline := time.Now().Add(time.Minute)
	for ownerOf(ctx, t, c, "public/__kafka", bundle) != dest && time.Now().Before(deadline) {
		if _, err := adm.LookupOwner(ctx, pulsarx.PartitionTopic(lab.OffsetsTopic, plan.Executable()[0].OffsetsPartitions[0])); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
	}
	t.Logf("bundle %s: planned on %s, moved to %s (now %s)", bundle, was, dest, ownerOf(ctx, t, c, "public/__kafka", bundle))

	executeOwned(ctx, t, c, bundle, plan, executor, logs)
}

// A stale group's bundle is unloaded by someone else between the plan and the execution
// (the load manager's shedding, which unloads a bundle and lets the next lookup place it)
// and nobody has looked it up since: no broker owns it when the execution starts. The
// executor's recheck, unload and lookup must still end with the bundle owned and the group
// verified fresh (exit 0), whoever took it.
func TestTopologyReloadAfterTheBundleWasShed(t *testing.T) {
	ctx, l, c, _ := scusOfSeveralBrokers(t)
	_, plan, executor, logs := staleBehindKoP(ctx, t, l, c, "topology-shed")
	bundle := plan.Executable()[0].Range
	was := ownerOf(ctx, t, c, "public/__kafka", bundle)
	if err := labtest.PulsarxAdmin(t, c).UnloadBundle(ctx, "public/__kafka", bundle); err != nil {
		t.Fatal(err)
	}
	t.Logf("bundle %s: planned on %s, unloaded by the test; owner now %q", bundle, was, ownerOf(ctx, t, c, "public/__kafka", bundle))

	executeOwned(ctx, t, c, bundle, plan, executor, logs)
}

// A stale group's bundle of public/__kafka is split between the plan and the execution
// (PUT .../namespaces/public/__kafka/{bundle}/split, as pulsar-admin namespaces split-bundle
// does): the planned range is no bundle any more. The executor reads the bundles again,
// unloads the parts of the planned bundle that hold its offsets partitions (never anything
// outside it), says so (SplitInto, the log), and verifies: the group ends fresh, exit 0.
func TestTopologyReloadAfterTheBundleSplit(t *testing.T) {
	ctx, l, c, _ := scusOfSeveralBrokers(t)
	adm := labtest.PulsarxAdmin(t, c)
	g, plan, executor, logs := staleBehindKoP(ctx, t, l, c, "topology-split")
	pb := plan.Executable()[0]
	planned, err := pulsarx.ParseBundleRange(pb.Range)
	if err != nil {
		t.Fatal(err)
	}
	splitBundle(t, c, "public/__kafka", pb.Range)
	after, err := adm.Bundles(ctx, "public/__kafka")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bundle %s (offsets partitions %v) split; the namespace's bundles now: %v", pb.Range, pb.OffsetsPartitions, after)
	if slices.ContainsFunc(after, func(b pulsarx.Bundle) bool { return b.Range == pb.Range }) {
		t.Fatalf("the planned bundle %s is still a bundle after the split", pb.Range)
	}
	kc := labtest.Kafka(t, c)
	if o, err := kadm.NewClient(kc).FetchOffsets(ctx, g); err == nil {
		t.Logf("KoP on %s serves %d offsets for %s after the split, before the execution (%v)", c.Name, len(o.Sorted()), g, o.Sorted())
	}

	ex := executeVerified(ctx, t, plan, executor, logs)
	b := ex.Bundles[0]
	if len(b.SplitInto) == 0 || slices.Contains(b.SplitInto, pb.Range) || !slices.Equal(ex.Unloaded, b.SplitInto) {
		t.Fatalf("the split is not reported: split into %v, unloaded %v", b.SplitInto, ex.Unloaded)
	}
	for _, r := range b.SplitInto {
		part, err := pulsarx.ParseBundleRange(r)
		if err != nil || part.Lo < planned.Lo || part.Hi > planned.Hi {
			t.Errorf("unloaded %s, outside the planned %s (%v)", r, pb.Range, err)
		}
	}
	// What Pulsar answers for an unload of the planned range now (documented in docs/reload.md).
	t.Logf("an unload of the old range %s now: %v", pb.Range, adm.UnloadBundle(ctx, "public/__kafka", pb.Range))
}

// splitBundle splits bundle of ns on c in two (range_equally_divide), without unloading the
// halves: PUT /admin/v2/namespaces/{ns}/{bundle}/split.
func splitBundle(t *testing.T, c lab.Cluster, ns, bundle string) {
	t.Helper()
	put(t, fmt.Sprintf("%s/admin/v2/namespaces/%s/%s/split?unload=false", c.AdminURL, ns, bundle))
}
