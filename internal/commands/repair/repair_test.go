package repair

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/planrun"
	"github.com/kop-offsets/kop-offsets/internal/commands/session"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/reload"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest/describe"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// staleKoP is a cache that is stale until the bundle of its group is unloaded.
type staleKoP struct {
	mu    sync.Mutex
	stale bool
}

func (k *staleKoP) FetchOffsets(context.Context, string) ([]reload.TopicOffset, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stale {
		return []reload.TopicOffset{{Topic: "topic-1", Partition: 0, Offset: 500}}, nil
	}
	return []reload.TopicOffset{{Topic: "topic-1", Partition: 0, Offset: 10900}}, nil
}

func i64(v int64) *int64 { return &v }

type harness struct {
	opts   *Options
	admin  *fakes.Admin
	kop    *staleKoP
	checks int
	scopes []Scope
	out    *bytes.Buffer
	errb   *bytes.Buffer
}

func newHarness(t *testing.T) *harness {
	ios, _, out, errb := iostreams.Test()
	h := &harness{admin: fakes.NewAdmin("wus"), kop: &staleKoP{stale: true}, out: out, errb: errb}
	h.admin.OnUnload = func(string) { // KoP loads the group afresh
		h.kop.mu.Lock()
		h.kop.stale = false
		h.kop.mu.Unlock()
	}
	rd := fakes.NewMemReader(8).Commit(kop.OffsetCommit{Group: "G", Topic: "persistent://public/default/topic-1", Partition: 0, Offset: 10900})
	scus := config.Cluster{Name: "scus", Tenant: "public", MetadataNamespace: "__kafka", KafkaNamespace: "public/default"}
	wus := scus
	wus.Name = "wus"
	h.opts = &Options{
		IO: ios, Format: output.Table, LockFile: filepath.Join(t.TempDir(), "repair.lock"),
		Flags: planrun.Flags{Yes: true, MaxBundles: 1, Wait: time.Second},
		Targets: func() ([]config.Cluster, []config.Cluster, error) {
			return []config.Cluster{wus}, []config.Cluster{scus, wus}, nil
		},
		Check: func(_ context.Context, _ []config.Cluster, scope Scope, _ map[string]error) (*survey.Report, error) {
			h.scopes = append(h.scopes, scope)
			h.checks++
			h.kop.mu.Lock()
			st, cached := "stale_cache", int64(500)
			if !h.kop.stale {
				st, cached = "ok", 10900
			}
			h.kop.mu.Unlock()
			return &survey.Report{SchemaVersion: 1, Rows: []verdict.Row{
				{Group: "G", Topic: "topic-1", Status: verdict.Status(st), Cells: []verdict.Cell{
					{Cluster: "wus", Cached: &cached, Persisted: i64(10900), Status: verdict.Status(st)}, {Cluster: "scus", Status: "ok"}}},
				{Group: "L", Topic: "topic-1", Status: "replication_lag", Cells: []verdict.Cell{
					{Cluster: "wus", Status: "replication_lag"}, {Cluster: "scus", Status: "ok"}}},
				{Group: "D", Topic: "topic-1", Status: "diverged", Cells: []verdict.Cell{
					{Cluster: "wus", Status: "diverged"}, {Cluster: "scus", Status: "stale_cache"}}}, // scus is not written to
			}}, nil
		},
		NewSession: func(target config.Cluster, all []config.Cluster) (*session.Session, error) {
			ref := session.Ref(target)
			admin := h.admin
			return &session.Session{
				Planner: &reload.Planner{Cluster: ref, Admin: admin, Reader: rd, Describers: map[string]reload.GroupDescriber{"scus": describe.Idle{}, "wus": describe.Idle{}}, Fetcher: h.kop},
				Executor: &reload.Executor{Cluster: ref, Admin: admin, Reader: rd, Fetcher: h.kop,
					PollInterval: time.Millisecond},
				Close: func() {},
			}, nil
		},
	}
	return h
}

// unloads are the bundle unloads asked of the admin.
func (h *harness) unloads() []string {
	return slices.DeleteFunc(h.admin.Writes(), func(c string) bool { return !strings.HasPrefix(c, "unload ") })
}

func TestRepairFixesOnlyStaleAndIsIdempotent(t *testing.T) {
	h := newHarness(t)
	h.opts.Format = output.JSON
	if err := repairRun(context.Background(), h.opts); err != nil {
		t.Fatalf("first run: %v\n%s", err, h.errb)
	}
	var doc Document
	if err := json.Unmarshal(h.out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SchemaVersion != 1 || len(doc.Stale) != 1 || doc.Stale[0].Group != "G" || doc.Stale[0].Cluster != "wus" {
		t.Fatalf("stale %+v", doc.Stale)
	}
	if len(doc.Left) != 2 || doc.Left[0].Reason == "" || doc.Left[1].Reason == "" {
		t.Errorf("left %+v", doc.Left)
	}
	if u := h.unloads(); len(u) != 1 || u[0] != "unload public/__kafka/0x80000000_0xc0000000" {
		t.Errorf("writes %v (G lives in offsets partition %d)", h.admin.Writes(), loader.PartitionFor("G", 8))
	}
	if h.checks != 2 || doc.After == nil || len(doc.After.Stale) != 0 || doc.ExitCode != 0 {
		t.Errorf("checks %d after %+v exit %d", h.checks, doc.After, doc.ExitCode)
	}

	// Second run: nothing stale, nothing written, one check.
	h.out.Reset()
	h.checks = 0
	if err := repairRun(context.Background(), h.opts); err != nil {
		t.Fatal(err)
	}
	if len(h.unloads()) != 1 || h.checks != 1 || !strings.Contains(h.errb.String(), "nothing stale") {
		t.Errorf("second run wrote %v, checks %d", h.admin.Writes(), h.checks)
	}
}

func TestRepairRefusedExit4(t *testing.T) {
	h := newHarness(t)
	h.opts.Yes, h.opts.DryRun = false, false
	h.opts.Confirm = nil
	// No TTY and no --yes: exit 2, nothing checked.
	if err := repairRun(context.Background(), h.opts); cmdutil.ExitCode(err) != 2 || h.checks != 0 {
		t.Fatalf("err %v checks %d", err, h.checks)
	}
	// A refused bundle (groups of unknown activity) leaves the row stale: exit 4, as reload
	// and failover exit on a refusal (issue 32; it was 1), and under --dry-run too: the
	// real run would be refused.
	for _, dry := range []bool{false, true} {
		h = newHarness(t)
		h.opts.DryRun = dry
		base := h.opts.NewSession
		h.opts.NewSession = func(target config.Cluster, all []config.Cluster) (*session.Session, error) {
			s, err := base(target, all)
			s.Planner.Describers = map[string]reload.GroupDescriber{"wus": nil} // KoP unknown
			return s, err
		}
		err := repairRun(context.Background(), h.opts)
		if cmdutil.ExitCode(err) != 4 || len(h.admin.Writes()) != 0 {
			t.Fatalf("dry run %v: err %v (exit %d) writes %v", dry, err, cmdutil.ExitCode(err), h.admin.Writes())
		}
		if want := "1 still stale"; !dry && !strings.Contains(h.out.String(), want) {
			t.Errorf("out %s", h.out)
		}
		if want := "would be refused"; dry && !strings.Contains(h.errb.String(), want) {
			t.Errorf("dry run: stderr %q lacks %q", h.errb, want)
		}
	}
}

// A configuration error of the first check (the cluster-name refusal is a config.Error) is
// 2, as check exits on it; an unreachable cluster is 3 (issue 32: both were 3).
func TestRepairFirstCheckErrors(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{&config.Error{Cluster: "wus", Field: "name", Msg: `the broker calls itself "west"`}, 2},
		{errors.New("dial tcp 127.0.0.1:1: connection refused"), 3},
	} {
		h := newHarness(t)
		h.opts.Check = func(context.Context, []config.Cluster, Scope, map[string]error) (*survey.Report, error) {
			return nil, tc.err
		}
		if err := repairRun(context.Background(), h.opts); cmdutil.ExitCode(err) != tc.want || len(h.admin.Writes()) != 0 {
			t.Errorf("%v: err %v (exit %d), want %d", tc.err, err, cmdutil.ExitCode(err), tc.want)
		}
	}
}

func TestRepairLock(t *testing.T) {
	h := newHarness(t)
	unlock, err := lock(h.opts.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	h.opts.DryRun = false
	err = repairRun(context.Background(), h.opts)
	if cmdutil.ExitCode(err) != 3 || !strings.Contains(err.Error(), "another repair is running") || h.checks != 0 {
		t.Fatalf("err %v checks %d", err, h.checks)
	}
	// A dry run writes nothing: it runs beside a repair that holds the lock.
	h = newHarness(t)
	h.opts.LockFile = h.opts.LockFile + ".held"
	unlock2, err := lock(h.opts.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock2()
	h.opts.DryRun = true
	if err := repairRun(context.Background(), h.opts); cmdutil.ExitCode(err) != 0 || h.checks != 1 {
		t.Fatalf("dry run beside a held lock: err %v (exit %d), checks %d", err, cmdutil.ExitCode(err), h.checks)
	}
}

// --group and --topic reach both checks; an unknown flag no longer (issue 13).
func TestRepairScope(t *testing.T) {
	f, _ := clitest.NewFactory("test", false)
	o, err := clitest.ParseOptions(f, NewCmdRepair, "--group", "orders-*", "--group", "billing", "--topic", "topic-1", "--yes")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.Groups, []string{"orders-*", "billing"}) || !slices.Equal(o.Topics, []string{"topic-1"}) {
		t.Fatalf("scope %+v", o.Scope)
	}
	h := newHarness(t)
	h.opts.Yes = true
	h.opts.Scope = Scope{Groups: []string{"G"}}
	_ = repairRun(context.Background(), h.opts)
	if len(h.scopes) != 2 || !slices.Equal(h.scopes[0].Groups, []string{"G"}) || !slices.Equal(h.scopes[1].Groups, []string{"G"}) {
		t.Errorf("scopes passed to the checks: %+v", h.scopes)
	}
}

// KoP does not serve offsets partition 1 on wus (check's unserved): repair reloads its
// bundle too, although no row of it is stale, and exits 0 only when the second check finds
// it served.
func TestRepairBringsBackUnservedPartitions(t *testing.T) {
	for _, fixed := range []bool{true, false} {
		h := newHarness(t)
		h.opts.Format = output.JSON
		h.opts.MaxBundles = 8
		inner := h.opts.Check
		h.opts.Check = func(ctx context.Context, all []config.Cluster, scope Scope, down map[string]error) (*survey.Report, error) {
			d, err := inner(ctx, all, scope, down)
			if h.checks == 1 || !fixed {
				d.Unserved = []survey.UnservedPartition{{Cluster: "wus", OffsetsPartition: 1, Answer: "NOT_COORDINATOR"}}
			}
			return d, err
		}
		_ = repairRun(context.Background(), h.opts)
		var doc Document
		if err := json.Unmarshal(h.out.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		b, _ := pulsarx.FindBundle(h.admin.BundleList, pulsarx.PartitionTopic(pulsarx.OffsetsTopic("public", "__kafka"), 1))
		if len(doc.Unserved) != 1 || !slices.Contains(h.unloads(), "unload public/__kafka/"+b.Range) {
			t.Fatalf("fixed=%v: unserved %+v, writes %v (partition 1 is in %s)", fixed, doc.Unserved, h.admin.Writes(), b.Range)
		}
		want := 0 // exit code, and unserved partitions after
		if !fixed {
			want = 1
		}
		if doc.ExitCode.ExitCode() != want || len(doc.After.Unserved) != want {
			t.Fatalf("fixed=%v: exit %d, after %+v", fixed, doc.ExitCode, doc.After)
		}
	}
}
