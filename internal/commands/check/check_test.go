package check

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/shared"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// memFetcher is an in-memory OffsetFetcher (KoP's cache).
type memFetcher struct {
	cache map[string]map[string]map[int32]int64
	leo   map[string]map[int32]int64
}

func (m memFetcher) ListGroups(context.Context) ([]survey.ListedGroup, error) { return nil, nil }
func (m memFetcher) EachOffsets(_ context.Context, groups []string, fn func(string, verdict.GroupFetch)) {
	for _, g := range groups {
		fn(g, verdict.GroupFetch{Offsets: m.cache[g]})
	}
}
func (m memFetcher) EndOffsets(context.Context, []string) (map[string]map[int32]int64, error) {
	return m.leo, nil
}

func c(group string, off int64) kop.OffsetCommit {
	return kop.OffsetCommit{Group: group, Topic: "persistent://public/default/topic-1", Offset: off,
		CommitTime: time.UnixMilli(1700000000000 + off)}
}

// scenario: the user's case (wus cache 500, persisted 10900) plus a lagging group.
func scenario(deadWus bool) (func() ([]config.Cluster, error), shared.ConnectFunc) {
	clusters := func() ([]config.Cluster, error) {
		return []config.Cluster{{Name: "scus", KafkaNamespace: "public/default"}, {Name: "wus", KafkaNamespace: "public/default"}}, nil
	}
	scus := fakes.NewMemReader(8).Commit(c("orders", 500), c("orders", 10900), c("billing", 42))
	wus := fakes.NewMemReader(8).Commit(c("orders", 500), c("orders", 10900), c("billing", 40))
	if deadWus {
		// What pulsarx.Admin returns for a refused adminURL: an admin call, labelled admin.
		wus.Err = &pulsarx.AdminError{Cluster: "wus", Op: "get partitioned metadata of", Target: "persistent://public/__kafka/__consumer_offsets",
			Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	}
	leo := map[string]map[int32]int64{"topic-1": {0: 11000}}
	connect := func(cl config.Cluster, so shared.SourceOptions) (survey.Cluster, func(), error) {
		out := survey.Cluster{Name: cl.Name, KafkaNamespace: cl.KafkaNamespace}
		switch cl.Name {
		case "scus":
			out.Reader = scus
			out.Replication = survey.StaticReplication{loader.PartitionFor("billing", 8): {"wus": {Backlog: 2, Connected: true}}}
			out.Fetcher = memFetcher{cache: map[string]map[string]map[int32]int64{
				"orders": {"topic-1": {0: 10900}}, "billing": {"topic-1": {0: 42}}}, leo: leo}
		case "wus":
			out.Reader = wus
			out.Replication = survey.StaticReplication{}
			out.Fetcher = memFetcher{cache: map[string]map[string]map[int32]int64{
				"orders": {"topic-1": {0: 500}}, "billing": {"topic-1": {0: 40}}}, leo: leo}
		}
		if !so.Cached {
			out.Fetcher = nil
		}
		return out, nil, nil
	}
	return clusters, connect
}

func run(t *testing.T, format output.Format, mutate func(*Options), deadWus bool) (string, string, int) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	clusters, connect := scenario(deadWus)
	opts := &Options{IO: ios, Format: format, Clusters: clusters, Connect: connect, CoordinatorWait: time.Second, Concurrency: 2,
		Now: func() time.Time { return time.UnixMilli(1700000000000).Add(time.Hour) }}
	if mutate != nil {
		mutate(opts)
	}
	err := checkRun(context.Background(), opts)
	return out.String(), errOut.String(), cmdutil.ExitCode(err)
}

func TestCheckJSONGolden(t *testing.T) {
	out, _, code := run(t, output.JSON, nil, false)
	if code != 1 || !strings.Contains(out, `"exitCode": 1`) {
		t.Errorf("exit %d", code)
	}
	clitest.Golden(t, "testdata/check.json", []byte(out))
}

func TestCheckTableAndHint(t *testing.T) {
	out, errOut, code := run(t, output.Table, func(o *Options) { o.Source = "scus" }, false)
	if code != 1 {
		t.Errorf("exit %d", code)
	}
	for _, want := range []string{"orders\ttopic-1\t0\t5\t10900/10900\t500/10900 STALE_CACHE\tscus:100 wus:10500\tSTALE_CACHE",
		"billing\ttopic-1\t0\t3\t42/42\t40/40 REPLICATION_LAG\tscus:10958 wus:10960\tREPLICATION_LAG"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	for _, want := range []string{"2 rows: 1 STALE_CACHE, 1 REPLICATION_LAG (exit 1)", "hint: kop-offsets reload --cluster wus --group orders"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("footer lacks %q:\n%s", want, errOut)
		}
	}
}

func TestCheckExitCodes(t *testing.T) {
	tests := []struct {
		name   string
		mut    func(*Options)
		dead   bool
		want   int
		stderr string
	}{
		{"drift", nil, false, 1, ""},
		{"fail-on names nothing found", func(o *Options) { o.FailOn = []string{"diverged,missing"} }, false, 0, ""},
		{"fail-on stale_cache", func(o *Options) { o.FailOn = []string{"STALE_CACHE"} }, false, 1, ""},
		{"cluster down wins", nil, true, 3, "error: cluster wus: admin: connection refused (get partitioned metadata of persistent://public/__kafka/__consumer_offsets)\n"},
		{"unknown source", func(o *Options) { o.Source = "eus" }, false, 2, ""},
		{"bad fail-on", func(o *Options) { o.FailOn = []string{"bogus"} }, false, 2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := run(t, output.JSON, tt.mut, tt.dead)
			if code != tt.want || !strings.Contains(errOut, tt.stderr) {
				t.Errorf("exit %d, want %d; stderr %q", code, tt.want, errOut)
			}
		})
	}
}

func TestCheckClusterDownOthersCorrect(t *testing.T) {
	out, _, code := run(t, output.JSON, nil, true)
	if code != 3 {
		t.Fatalf("exit %d", code)
	}
	clitest.Golden(t, "testdata/check-wus-down.json", []byte(out))
}

func TestPrometheusTextfileGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kop.prom")
	_, _, code := run(t, output.JSON, func(o *Options) { o.PrometheusFile = path; o.Source = "scus" }, false)
	if code != 1 {
		t.Errorf("exit %d", code)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	clitest.Golden(t, "testdata/check.prom", b)
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}

func TestPersistedOnly(t *testing.T) {
	out, _, code := run(t, output.JSON, func(o *Options) { o.PersistedOnly = true; o.Source = "scus" }, false)
	if code != 1 || !strings.Contains(out, `"replication_lag": 1`) || !strings.Contains(out, `"ok": 1`) || !strings.Contains(out, `"cached": null`) {
		t.Errorf("exit %d\n%s", code, out)
	}
}

func TestNewCmdCheckFlags(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	f := &cmdutil.Factory{IOStreams: ios, Flags: &cmdutil.GlobalFlags{}}
	got, err := clitest.ParseOptions(f, NewCmdCheck, "--group", "a*", "--group", "b", "--topic", "topic-1", "--source", "scus",
		"--fail-on", "stale_cache,diverged", "--alignment-max-messages", "5000", "--prometheus-file", "/tmp/x.prom", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Groups, ",") != "a*,b" || got.Source != "scus" || !got.Alignment || got.AlignmentMax != 5000 || got.Format != output.JSON ||
		strings.Join(got.FailOn, ",") != "stale_cache,diverged" || got.PrometheusFile != "/tmp/x.prom" || got.CoordinatorWait != kop.DefaultCoordinatorWait {
		t.Errorf("%+v", got)
	}
	for _, args := range [][]string{{"--fail-on", "nope"}, {"--alignment", "--persisted-only"}, {"--alignment-max-messages", "-1"}, {"extra"}} {
		if _, err := clitest.ParseOptions(f, NewCmdCheck, args...); cmdutil.ExitCode(err) != 2 {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// --prometheus-file in a directory that does not exist: 2 before anything is contacted; a
// textfile that cannot be written after the survey keeps the survey's worse code (a 3 is not
// hidden by the 2) and the report on stdout is complete (issue 32).
func TestPrometheusTextfileUnwritable(t *testing.T) {
	connected := 0
	out, _, code := run(t, output.JSON, func(o *Options) {
		o.PrometheusFile = filepath.Join(t.TempDir(), "missing", "kop.prom")
		connect := o.Connect
		o.Connect = func(cl config.Cluster, so shared.SourceOptions) (survey.Cluster, func(), error) {
			connected++
			return connect(cl, so)
		}
	}, true)
	if code != 2 || connected != 0 || out != "" {
		t.Errorf("missing directory: exit %d, %d connects, stdout %q", code, connected, out)
	}

	dir := filepath.Join(t.TempDir(), "textfiles")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, _, code = run(t, output.JSON, func(o *Options) {
		o.PrometheusFile = filepath.Join(dir, "kop.prom")
		connect := o.Connect
		o.Connect = func(cl config.Cluster, so shared.SourceOptions) (survey.Cluster, func(), error) {
			_ = os.RemoveAll(dir) // gone between the check of the path and the write
			return connect(cl, so)
		}
	}, true)
	var doc struct {
		ExitCode int `json:"exitCode"`
	}
	if code != 3 || json.Unmarshal([]byte(out), &doc) != nil || doc.ExitCode != 3 {
		t.Errorf("write failed after a survey with wus down: exit %d (want 3), stdout %q", code, out)
	}
}
