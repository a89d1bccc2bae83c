package reload

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/planrun"
	"github.com/kop-offsets/kop-offsets/internal/commands/render"
	"github.com/kop-offsets/kop-offsets/internal/commands/session"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/reload"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest/describe"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

// fresh serves whatever the reader holds (a KoP that loaded the topic).
type fresh struct{ rd *fakes.MemReader }

func (f fresh) FetchOffsets(ctx context.Context, g string) ([]reload.TopicOffset, error) {
	po, err := loader.ReplayPartition(ctx, f.rd, loader.PartitionFor(g, 8), loader.OrderingKoP)
	if err != nil {
		return nil, err
	}
	var out []reload.TopicOffset
	for _, c := range po.GroupOffsets(g) {
		out = append(out, reload.TopicOffset{Topic: loader.ShortName(c.Topic, "public/default"), Partition: c.Partition, Offset: c.Offset})
	}
	return out, nil
}

type harness struct {
	opts     *Options
	admin    *fakes.Admin
	sessions int
	out, err *bytes.Buffer
	in       *bytes.Buffer
	ios      *iostreams.IOStreams
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	ios, in, out, errb := iostreams.Test()
	h := &harness{admin: fakes.NewAdmin("scus"), out: out, err: errb, in: in, ios: ios}
	rd := fakes.NewMemReader(8).Commit(kop.OffsetCommit{Group: "G", Topic: "persistent://public/default/topic-1", Partition: 0, Offset: 10900})
	scus := config.Cluster{Name: "scus", Tenant: "public", MetadataNamespace: "__kafka", KafkaNamespace: "public/default"}
	h.opts = &Options{
		IO: ios, Format: output.Table,
		Target: func() (config.Cluster, []config.Cluster, error) { return scus, []config.Cluster{scus}, nil },
		NewSession: func(target config.Cluster, all []config.Cluster) (*session.Session, error) {
			h.sessions++
			ref := session.Ref(target)
			return &session.Session{
				Planner:  &reload.Planner{Cluster: ref, Admin: h.admin, Reader: rd, Describers: map[string]reload.GroupDescriber{"scus": describe.Idle{}}, Fetcher: fresh{rd}},
				Executor: &reload.Executor{Cluster: ref, Admin: h.admin, Reader: rd, Fetcher: fresh{rd}, PollInterval: time.Millisecond},
				Close:    func() {},
			}, nil
		},
		Groups: []string{"G"}, Flags: planrun.Flags{MaxBundles: 1, Wait: time.Second},
	}
	return h
}

func TestConfirmationRules(t *testing.T) {
	ctx := context.Background()
	t.Run("no tty, no --yes: exit 2 before contacting anything", func(t *testing.T) {
		h := newHarness(t)
		err := reloadRun(ctx, h.opts)
		if cmdutil.ExitCode(err) != 2 || !strings.Contains(err.Error(), "--yes") {
			t.Fatalf("err %v (exit %d)", err, cmdutil.ExitCode(err))
		}
		if h.sessions != 0 || len(h.admin.Writes()) != 0 {
			t.Errorf("contacted: sessions %d writes %v", h.sessions, h.admin.Writes())
		}
	})
	t.Run("--yes: no prompt, executes", func(t *testing.T) {
		h := newHarness(t)
		h.opts.Yes = true
		h.opts.Confirm = func(string) (bool, error) { t.Fatal("asked despite --yes"); return false, nil }
		if err := reloadRun(ctx, h.opts); err != nil {
			t.Fatalf("err %v\n%s", err, h.err)
		}
		if len(h.admin.Writes()) != 3 || !strings.Contains(h.out.String(), "verified") {
			t.Errorf("writes %v\n%s", h.admin.Writes(), h.out)
		}
	})
	t.Run("tty, answer yes", func(t *testing.T) {
		h := newHarness(t)
		h.ios.SetStdinTTY(true)
		h.ios.SetStdoutTTY(true)
		h.in.WriteString("y\n")
		if err := reloadRun(ctx, h.opts); err != nil {
			t.Fatalf("err %v", err)
		}
		if !strings.Contains(h.err.String(), "Unload 1 bundle(s) of public/__kafka on scus (0x80000000_0xc0000000)? 1 group(s) reload") {
			t.Errorf("prompt: %q", h.err.String())
		}
		if len(h.admin.Writes()) == 0 {
			t.Error("not executed")
		}
	})
	t.Run("tty, answer no: exit 2, nothing written", func(t *testing.T) {
		h := newHarness(t)
		h.ios.SetStdinTTY(true)
		h.ios.SetStdoutTTY(true)
		h.in.WriteString("n\n")
		err := reloadRun(ctx, h.opts)
		if cmdutil.ExitCode(err) != 2 || len(h.admin.Writes()) != 0 {
			t.Fatalf("err %v writes %v", err, h.admin.Writes())
		}
	})
	t.Run("--dry-run: plan only, exit 0, no tty needed", func(t *testing.T) {
		h := newHarness(t)
		h.opts.DryRun = true
		h.opts.Format = output.JSON
		if err := reloadRun(ctx, h.opts); err != nil {
			t.Fatal(err)
		}
		var doc Document
		if err := json.Unmarshal(h.out.Bytes(), &doc); err != nil {
			t.Fatalf("%v\n%s", err, h.out)
		}
		if doc.SchemaVersion != 1 || !doc.DryRun || doc.Execution != nil || len(doc.Plan.Bundles) != 1 || len(h.admin.Writes()) != 0 {
			t.Errorf("doc %+v writes %v", doc, h.admin.Writes())
		}
	})
}

func TestExitCodes(t *testing.T) {
	ctx := context.Background()
	t.Run("admin unreachable: 3, nothing claimed on stdout", func(t *testing.T) {
		h := newHarness(t)
		h.opts.Yes = true
		down := &pulsarx.AdminError{Cluster: "scus", Op: "get partitioned metadata of", Status: 0, Err: os.ErrDeadlineExceeded}
		h.admin.PartitionsErr, h.admin.BundlesErr = down, down
		err := reloadRun(ctx, h.opts)
		if cmdutil.ExitCode(err) != 3 || h.out.Len() != 0 || !strings.Contains(err.Error(), "nothing was unloaded") {
			t.Fatalf("err %v out %q", err, h.out)
		}
	})
	t.Run("more bundles than --max-plan-bundles: 4, nothing unloaded", func(t *testing.T) {
		h := newHarness(t)
		h.opts.Yes = true
		h.opts.Groups = nil
		h.opts.Partitions = []int32{0, 1}
		err := reloadRun(ctx, h.opts)
		if cmdutil.ExitCode(err) != 4 || len(h.admin.Writes()) != 0 || !strings.Contains(h.err.String(), "more than --max-plan-bundles 1") {
			t.Fatalf("err %v writes %v stderr %s", err, h.admin.Writes(), h.err)
		}
	})
	t.Run("--dry-run of a run that would be refused: 4, says so", func(t *testing.T) {
		h := newHarness(t)
		h.opts.DryRun = true
		h.opts.Groups = nil
		h.opts.Partitions = []int32{0, 1}
		h.opts.Format = output.JSON
		err := reloadRun(ctx, h.opts)
		var doc Document
		_ = json.Unmarshal(h.out.Bytes(), &doc)
		if cmdutil.ExitCode(err) != 4 || len(h.admin.Writes()) != 0 || doc.ExitCode != 4 || !strings.HasPrefix(doc.Refusal, "dry run: would be refused") {
			t.Fatalf("err %v (exit %d) writes %v doc %+v", err, cmdutil.ExitCode(err), h.admin.Writes(), doc)
		}
	})
	t.Run("unknown partition: 2", func(t *testing.T) {
		h := newHarness(t)
		h.opts.Yes = true
		h.opts.Partitions = []int32{99}
		if err := reloadRun(ctx, h.opts); cmdutil.ExitCode(err) != 2 {
			t.Fatalf("err %v", err)
		}
	})
}

func TestFromCheck(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "check.json")
	doc := `{"schemaVersion":1,"clusters":["scus","wus"],"rows":[
	 {"group":"G","topic":"topic-1","partition":0,"offsetsPartition":7,"status":"stale_cache","clusters":{"scus":{"cached":500,"persisted":10900,"status":"stale_cache"},"wus":{"cached":10900,"persisted":10900,"status":"ok"}}},
	 {"group":"H","topic":"topic-1","partition":0,"offsetsPartition":1,"status":"diverged","clusters":{"scus":{"cached":1,"persisted":1,"status":"diverged"}}}]}`
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	h.opts.Groups, h.opts.FromCheck, h.opts.DryRun, h.opts.Format = nil, p, true, output.JSON
	if err := reloadRun(context.Background(), h.opts); err != nil {
		t.Fatal(err)
	}
	var d Document
	_ = json.Unmarshal(h.out.Bytes(), &d)
	if d.Plan == nil || len(d.Plan.RequestedGroups) != 1 || d.Plan.RequestedGroups[0] != "G" {
		t.Fatalf("plan %+v", d.Plan)
	}
	h.opts.FromCheck = filepath.Join(dir, "missing.json")
	if err := reloadRun(context.Background(), h.opts); cmdutil.ExitCode(err) != 2 {
		t.Fatalf("missing file: %v", err)
	}
}

// A check that could not read every endpoint (exitCode 3) and found nothing stale on the
// target is not "nothing to reload": exit 3, nothing contacted (issue 32). Its unserved
// offsets partitions are reloaded like its stale groups.
func TestFromCheckIncompleteAndUnserved(t *testing.T) {
	dir := t.TempDir()
	write := func(doc string) string {
		p := filepath.Join(dir, fmt.Sprintf("check-%d.json", len(doc)))
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	h := newHarness(t)
	h.opts.Groups, h.opts.DryRun, h.opts.Format = nil, true, output.JSON
	h.opts.FromCheck = write(`{"schemaVersion":1,"clusters":["scus","wus"],"rows":[],"exitCode":3}`)
	err := reloadRun(context.Background(), h.opts)
	if cmdutil.ExitCode(err) != 3 || !strings.Contains(h.err.String(), "could not reach every endpoint (its exitCode is 3)") || len(h.admin.Calls()) != 0 || h.sessions != 0 {
		t.Fatalf("incomplete check: err %v (exit %d), stderr %q, admin calls %v", err, cmdutil.ExitCode(err), h.err, h.admin.Calls())
	}
	var d Document
	if jerr := json.Unmarshal(h.out.Bytes(), &d); jerr != nil || d.ExitCode != 3 || d.Refusal != "check incomplete" {
		t.Errorf("document %+v (%v)", d, jerr)
	}

	h = newHarness(t)
	h.opts.Groups, h.opts.DryRun, h.opts.Format = nil, true, output.JSON
	h.opts.FromCheck = write(`{"schemaVersion":1,"clusters":["scus"],"rows":[],"unserved":[{"cluster":"scus","offsetsPartition":0,"answer":"COORDINATOR_LOAD_IN_PROGRESS"}],"exitCode":1}`)
	if err := reloadRun(context.Background(), h.opts); err != nil {
		t.Fatalf("unserved: %v\n%s", err, h.err)
	}
	d = Document{}
	_ = json.Unmarshal(h.out.Bytes(), &d)
	if d.Plan == nil || !slices.Equal(d.Plan.RequestedPartitions, []int32{0}) {
		t.Fatalf("plan %+v", d.Plan)
	}
}

func TestFlags(t *testing.T) {
	defaults := Options{Flags: planrun.Flags{MaxBundles: DefaultMaxBundles, Wait: reload.DefaultWait}}
	tests := []clitest.FlagCase[Options]{
		{Args: []string{"--group", "G"}, Want: defaults},
		{Args: []string{"--partition", "3,7", "--group", "G"}, Want: defaults},
		{Args: []string{"--from-check", "x.json"}, Want: defaults},
		{Args: nil, Err: "give --group and/or --partition, or --from-check"},
		{Args: []string{"--group", "G", "--from-check", "x.json"}, Err: "give --group and/or --partition, or --from-check"},
		{Args: []string{"--group", "G", "--max-plan-bundles", "0"}, Err: "--max-plan-bundles must be at least 1"},
		// --max-bundles, the old spelling of --max-plan-bundles, still works.
		{Args: []string{"--group", "G", "--max-bundles", "3"}, Want: Options{Flags: planrun.Flags{MaxBundles: 3, Wait: reload.DefaultWait}}},
		{Args: []string{"--group", "G", "--wait", "0s"}, Err: "--wait must be positive"},
	}
	clitest.CheckFlags(t, NewCmdReload, tests, func(got, want *Options) bool {
		return got.MaxBundles == want.MaxBundles && got.Wait == want.Wait
	})
}

// A planned bundle split since the plan: the table and the summary name the parts unloaded in
// its place.
func TestWriteExecutionNamesTheSplit(t *testing.T) {
	const planned, part = "0x80000000_0xc0000000", "0x80000000_0xa0000000"
	ex := &reload.Execution{Bundles: []reload.BundleResult{{Range: planned, Status: reload.BundleVerified, Unloaded: true, Loaded: true,
		SplitInto: []string{part}}}, Unloaded: []string{part}}
	var b bytes.Buffer
	if err := render.WriteExecution(&b, output.Layout{}, nil, ex); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "split since the plan: unloaded "+part+" in its place") {
		t.Errorf("table:\n%s", b.String())
	}
	if s := render.Summary("scus", ex); !strings.Contains(s, "unloaded bundles: "+part+";") {
		t.Errorf("summary: %s", s)
	}
}
