//go:build e2e

package reload_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/commands"
	reloadcmd "github.com/kop-offsets/kop-offsets/internal/commands/reload"
	"github.com/kop-offsets/kop-offsets/internal/commands/root"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
)

// The lab: two real Pulsar clusters, public/__kafka with 4 bundles, an offsets topic of 8
// partitions, with or without KoP (KOP_NAR, docs/lab.md). These tests assert what the brokers
// really answer about the bundle unload and the load trigger and, per mode, what reload says
// about the cache: without KoP nothing answers on the Kafka ports, so group activity is
// unknown and reload says exactly that it could not verify the cache; with KoP the group
// (committed through KoP, no members) is idle and the reload is verified.
//
// They work on bundle 0x40000000_0x80000000 (offsets partitions 1 and 5), which holds none of
// the user's scenario group G (partition 7), with a group of their own.

const (
	ns       = "public/__kafka"
	bundle   = "0x40000000_0x80000000"
	e2eTopic = "persistent://public/default/topic-1"
)

var bundleParts = []int32{1, 5}

func TestMain(m *testing.M) { labtest.Main(m) }

type env struct {
	lab   *lab.Lab
	admin *pulsarx.Admin
	group string
}

func setup(t *testing.T) *env {
	t.Helper()
	l := labtest.Lab(t)
	adm := labtest.PulsarxAdmin(t, l.Cluster("scus"))
	// A group of this run in offsets partition 1, with one commit written as KoP writes it.
	group := lab.GroupInPartition(labtest.Name("reload-e2e"), 1)
	// Through KoP when it runs, else written as KoP writes it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := l.Commit(ctx, "scus", kop.OffsetCommit{Group: group, Topic: e2eTopic, Partition: 0, Offset: 4242}); err != nil {
		t.Fatal(err)
	}
	return &env{lab: l, admin: adm, group: group}
}

// run runs kop-offsets in-process against the lab's config.
func (e *env) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	f, streams := labtest.Factory(e.lab)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	code := commands.Run(ctx, f, root.NewCmdRoot(f), args)
	t.Logf("kop-offsets %s -> exit %d in %s\nstderr: %s", strings.Join(args, " "), code, time.Since(start).Round(time.Millisecond), streams.ErrOut)
	return code, streams.Out.String(), streams.ErrOut.String()
}

// brokerView is what the broker answers about the bundle and its offsets partitions.
type brokerView struct {
	Owned  map[string]string // bundle -> owning broker, for the 4 bundles of public/__kafka
	Topics map[int32]topicView
}

type topicView struct {
	Owner          string
	MsgInCounter   int64
	BytesInCounter int64
	Ledgers        []int64
	LastLedgerAt   string
}

// observe reads ownership first (read-only: the brokers' ownership lists), then, only for
// partitions whose bundle is owned, their stats (a stats call would load an unowned bundle).
func (e *env) observe(t *testing.T) brokerView {
	t.Helper()
	ctx := context.Background()
	owners := pulsarx.NewOwners(e.admin, "scus")
	v := brokerView{Owned: map[string]string{}, Topics: map[int32]topicView{}}
	bundles, err := e.admin.Bundles(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bundles {
		o, ok, err := owners.Owner(ctx, ns, b.Range)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			v.Owned[b.Range] = o.Broker
		}
	}
	if _, ok := v.Owned[bundle]; !ok {
		return v
	}
	base := e.lab.Cluster("scus").AdminURL + "/admin/v2/persistent/public/__kafka/__consumer_offsets-partition-"
	for _, p := range bundleParts {
		var st struct {
			OwnerBroker    string `json:"ownerBroker"`
			MsgInCounter   int64  `json:"msgInCounter"`
			BytesInCounter int64  `json:"bytesInCounter"`
		}
		var ist struct {
			LastLedgerCreatedTimestamp string `json:"lastLedgerCreatedTimestamp"`
			Ledgers                    []struct {
				LedgerID int64 `json:"ledgerId"`
			} `json:"ledgers"`
		}
		labtest.GetJSON(t, fmt.Sprintf("%s%d/stats", base, p), &st)
		labtest.GetJSON(t, fmt.Sprintf("%s%d/internalStats", base, p), &ist)
		tv := topicView{Owner: st.OwnerBroker, MsgInCounter: st.MsgInCounter, BytesInCounter: st.BytesInCounter, LastLedgerAt: ist.LastLedgerCreatedTimestamp}
		for _, l := range ist.Ledgers {
			tv.Ledgers = append(tv.Ledgers, l.LedgerID)
		}
		v.Topics[p] = tv
	}
	return v
}

type doc struct {
	SchemaVersion int `json:"schemaVersion"`
	DryRun        bool
	Refusal       string
	ExitCode      int
	Plan          struct {
		Cluster               string
		OffsetsPartitionCount int32
		Bundles               []struct {
			Range             string
			OffsetsPartitions []int32
			Groups            []string
			Refused           bool
			Reason            string
		}
		Groups []struct {
			Group     string
			Requested bool
			Persisted []struct {
				Topic     string
				Partition int32
				Offset    int64
			}
			Activity map[string]struct{ Status, Error string }
			Status   string
		}
	}
	Execution *struct {
		Bundles []struct {
			Range            string
			Status           string
			Unloaded, Loaded bool
			Owner            string
			Error            string
		}
		Groups []struct {
			Group         string
			Status        string
			Before, After *struct{ Error, ErrorKind string }
			Persisted     []struct{ Offset int64 }
		}
		Unloaded, NotUnloaded []string
		ExitCode              int
	}
}

func parse(t *testing.T, out string) doc {
	t.Helper()
	var d doc
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("stdout is not a reload document: %v\n%s", err, out)
	}
	return d
}

func TestE2EDryRunChangesNothing(t *testing.T) {
	e := setup(t)
	before := e.observe(t)
	if _, ok := before.Owned[bundle]; !ok {
		t.Fatalf("bundle %s should be owned after the seed commit: %v", bundle, before.Owned)
	}
	code, out, _ := e.run(t, "--cluster", "scus", "--timeout", "3s", "reload", "--group", e.group, "--dry-run", "-o", "json")
	// Without KoP the group's activity is unknown, so the real run would be refused and
	// the dry run says so with its code (4, issue 32); with KoP the plan is clean (0).
	kop := e.lab.Cluster("scus").KoP
	if want := map[bool]int{true: 0, false: 4}[kop]; code != want {
		t.Fatalf("exit %d, want %d (KoP %v)", code, want, kop)
	}
	after := e.observe(t)
	d := parse(t, out)
	t.Logf("plan: %s", out)

	// The real plan: the group's partition 1 is in bundle 0x40000000_0x80000000 with
	// partition 5; the group's persisted offset is the one written; KoP answers nowhere.
	if d.SchemaVersion != 1 || !d.DryRun || d.Execution != nil || d.Plan.OffsetsPartitionCount != 8 {
		t.Fatalf("doc %+v", d)
	}
	if len(d.Plan.Bundles) != 1 || d.Plan.Bundles[0].Range != bundle || !slices.Equal(d.Plan.Bundles[0].OffsetsPartitions, bundleParts) {
		t.Fatalf("bundles %+v", d.Plan.Bundles)
	}
	if b := d.Plan.Bundles[0]; !slices.Contains(b.Groups, e.group) ||
		!kop && (!b.Refused || !strings.Contains(b.Reason, "not proven idle")) || kop && b.Refused {
		t.Errorf("bundle %+v (KoP %v)", b, kop)
	}
	var found bool
	for _, g := range d.Plan.Groups {
		if g.Group != e.group {
			continue
		}
		found = true
		if !g.Requested || len(g.Persisted) != 1 || g.Persisted[0].Topic != "topic-1" || g.Persisted[0].Offset != 4242 {
			t.Errorf("group %+v", g)
		}
		for _, c := range []string{"scus", "wus"} {
			a := g.Activity[c]
			if kop && (a.Status != "idle" || a.Error != "") {
				t.Errorf("activity on %s: %+v (KoP answers: a group without members is idle)", c, a)
			}
			if !kop && (a.Status != "unknown" || !strings.Contains(a.Error, "connection refused")) {
				t.Errorf("activity on %s: %+v (KoP does not listen)", c, a)
			}
		}
	}
	if !found {
		t.Fatalf("group %s not in the plan", e.group)
	}

	// Nothing changed on the broker: same bundles owned by the same broker, same owner,
	// publish counters and ledgers of the offsets partitions (a reload would open a new
	// ledger and reset the counters).
	if fmt.Sprint(before.Owned) != fmt.Sprint(after.Owned) {
		t.Errorf("bundle ownership changed: %v -> %v", before.Owned, after.Owned)
	}
	for _, p := range bundleParts {
		b, a := before.Topics[p], after.Topics[p]
		if b.Owner == "" || fmt.Sprintf("%+v", b) != fmt.Sprintf("%+v", a) {
			t.Errorf("partition %d changed: %+v -> %+v", p, b, a)
		}
	}
}

func TestE2EFailingAdminCallExit3(t *testing.T) {
	e := setup(t)
	sc := e.lab.Cluster("scus")
	before := e.observe(t)

	// Unreachable admin URL (the ad-hoc cluster 127.0.0.1:1).
	code, out, errOut := e.run(t, "--admin-url", "http://127.0.0.1:1", "--service-url", sc.ServiceURL, "--bootstrap", sc.KafkaBootstrap,
		"--timeout", "3s", "reload", "--group", e.group, "--yes", "--allow-active")
	if code != 3 || out != "" || !strings.Contains(errOut, "unreachable") || !strings.Contains(errOut, "nothing was unloaded") {
		t.Errorf("unreachable admin: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// Unknown namespace: a config whose metadataNamespace does not exist.
	cfg := filepath.Join(t.TempDir(), "nope.yaml")
	y := fmt.Sprintf("clusters:\n  - name: scus\n    adminURL: %s\n    serviceURL: %s\n    kafkaBootstrap: [%s]\n    metadataNamespace: nope\n",
		sc.AdminURL, sc.ServiceURL, sc.KafkaBootstrap)
	if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = e.run(t, "--config", cfg, "--cluster", "scus", "--timeout", "3s", "reload", "--group", e.group, "--yes", "--allow-active")
	if code != 3 || out != "" || !strings.Contains(errOut, "public/nope") || !strings.Contains(errOut, "http 404") {
		t.Errorf("unknown namespace: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	after := e.observe(t)
	if fmt.Sprintf("%+v", before) != fmt.Sprintf("%+v", after) {
		t.Errorf("a failed reload changed the broker: %+v -> %+v", before, after)
	}
}

func TestE2EUnloadAndLoad(t *testing.T) {
	e := setup(t)
	before := e.observe(t)

	kop := e.lab.Cluster("scus").KoP
	start := time.Now().UTC()
	var code int
	var out, errOut string
	if kop {
		// KoP answers and the group has no members: idle, so no --allow-active is needed.
		code, out, errOut = e.run(t, "--cluster", "scus", "--timeout", "10s", "reload", "--group", e.group, "--yes", "--wait", "30s", "-o", "json")
	} else {
		// Without --allow-active: refused (KoP does not answer, so no group is proven idle).
		code, out, errOut = e.run(t, "--cluster", "scus", "--timeout", "3s", "reload", "--group", e.group, "--yes", "-o", "json")
		if d := parse(t, out); code != 4 || d.Execution != nil || !strings.Contains(d.Refusal, "nothing was unloaded") {
			t.Fatalf("refusal: exit %d %+v stderr %s", code, d, errOut)
		}
		if mid := e.observe(t); fmt.Sprintf("%+v", mid) != fmt.Sprintf("%+v", before) {
			t.Fatalf("a refused reload changed the broker: %+v -> %+v", before, mid)
		}
		// --allow-active alone is still refused: what KoP serves cannot be asked, so nothing
		// proves the reload loses no offset.
		code, out, errOut = e.run(t, "--cluster", "scus", "--timeout", "3s", "reload", "--group", e.group, "--yes", "--allow-active", "-o", "json")
		if d := parse(t, out); code != 4 || d.Execution != nil || !strings.Contains(errOut+out, "KoP could not be asked what it serves") {
			t.Fatalf("refusal without --accept-loss: exit %d %+v stderr %s", code, d, errOut)
		}
		start = time.Now().UTC()
		code, out, errOut = e.run(t, "--cluster", "scus", "--timeout", "3s", "reload", "--group", e.group, "--yes", "--allow-active", "--accept-loss", "--wait", "3s", "-o", "json")
	}
	after := e.observe(t)
	d := parse(t, out)
	t.Logf("result: %s", out)
	wantCode, bundleStatus, groupStatus := 3, "unverified", "unverified"
	if kop {
		wantCode, bundleStatus, groupStatus = 0, "verified", "fresh"
	}
	if code != wantCode || d.ExitCode != wantCode || d.Execution == nil {
		t.Fatalf("want exit %d (KoP %v), got %d: %+v", wantCode, kop, code, d)
	}
	ex := d.Execution
	if len(ex.Bundles) != 1 {
		t.Fatalf("bundles %+v", ex.Bundles)
	}
	b := ex.Bundles[0]
	if b.Range != bundle || b.Status != bundleStatus || !b.Unloaded || !b.Loaded || b.Owner != e.lab.Cluster("scus").ServiceURL ||
		!kop && !strings.Contains(b.Error, "could not be asked") || kop && b.Error != "" {
		t.Errorf("bundle result %+v", b)
	}
	if !slices.Equal(ex.Unloaded, []string{bundle}) || len(ex.NotUnloaded) != 0 {
		t.Errorf("unloaded %v not unloaded %v", ex.Unloaded, ex.NotUnloaded)
	}
	seen := false
	for _, g := range ex.Groups {
		if g.Group == e.group {
			seen = true
			if len(g.Persisted) != 1 || g.Persisted[0].Offset != 4242 {
				t.Errorf("persisted after the load: %+v", g.Persisted)
			}
		}
		if g.Status != groupStatus || g.After == nil || !kop && g.After.ErrorKind != "unreachable" || kop && g.After.ErrorKind != "" {
			t.Errorf("group %+v after %+v", g, g.After)
		}
	}
	if !seen {
		t.Errorf("group %s not in the result", e.group)
	}
	if !strings.Contains(errOut, "unloaded bundles: "+bundle) {
		t.Errorf("stderr summary: %s", errOut)
	}

	// The broker's answers: the bundle is owned again (by the lab's only broker), and each
	// offsets partition of it was closed and opened again: a new ledger created after the
	// run started, and the publish counters of the new topic instance start again.
	if after.Owned[bundle] == "" || after.Owned[bundle] != before.Owned[bundle] {
		t.Errorf("bundle owner before %q after %q", before.Owned[bundle], after.Owned[bundle])
	}
	for _, p := range bundleParts {
		bt, at := before.Topics[p], after.Topics[p]
		last := func(v topicView) int64 { return v.Ledgers[len(v.Ledgers)-1] }
		created, err := time.Parse("2006-01-02T15:04:05.999Z", at.LastLedgerAt)
		if err != nil || len(at.Ledgers) == 0 || len(bt.Ledgers) == 0 || last(at) <= last(bt) || created.Before(start.Add(-time.Second)) {
			t.Errorf("partition %d was not reopened: before %+v after %+v (%v)", p, bt, at, err)
		}
		if at.MsgInCounter > bt.MsgInCounter || at.Owner == "" {
			t.Errorf("partition %d counters: before %+v after %+v", p, bt, at)
		}
	}
	_ = reloadcmd.DefaultMaxBundles
}
