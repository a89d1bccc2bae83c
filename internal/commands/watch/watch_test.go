package watch

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/wait"
	"github.com/kop-offsets/kop-offsets/internal/watch"
)

func TestFlags(t *testing.T) {
	f, _ := clitest.NewFactory("test", false)
	o := clitest.ParseFlags(t, f, NewCmdWatch, "", "--group", "orders-*", "--topic", "t1", "--interval", "5s",
		"--resync", "1m", "--listen", "0.0.0.0:9999", "--repair", "--dry-run", "--max-bundles", "3", "--cooldown", "2m",
		"--row-series", "not-ok")
	if o.Interval != 5*time.Second || o.Resync != time.Minute || o.Listen != "0.0.0.0:9999" || !o.Repair || !o.DryRun ||
		o.RowSeries != "not-ok" ||
		o.MaxBundles != 3 || o.Cooldown != 2*time.Minute || o.Groups[0] != "orders-*" || o.Topics[0] != "t1" {
		t.Errorf("%+v", o)
	}
	o = clitest.ParseFlags(t, f, NewCmdWatch, "")
	if o.Listen != DefaultListen || o.Interval != watch.DefaultInterval || o.Repair || o.RowSeries != "all" {
		t.Errorf("defaults %+v", o)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--interval", "0s"}, "--interval must be positive"},
		{[]string{"--interval", "1m", "--resync", "30s"}, "--resync"},
		{[]string{"--repair", "--max-bundles", "0"}, "--max-bundles"},
		{[]string{"--dry-run"}, "--dry-run only applies to --repair"},
		{[]string{"--group", "[x"}, `invalid argument "[x" for "--group" flag: not a valid glob`},
		{[]string{"--listen", "nohost"}, "--listen"},
		{[]string{"--row-series", "some"}, "--row-series"},
		{[]string{"extra"}, "unexpected argument"},
		// A flag of a mode that is off does nothing: refused, not accepted silently.
		{[]string{"--cooldown", "1m"}, "--cooldown only applies with --repair"},
		{[]string{"--max-bundles", "2"}, "--max-bundles only applies with --repair"},
		{[]string{"--refuse-live"}, "--refuse-live only applies with --repair"},
		{[]string{"--wait", "10s"}, "--wait only applies with --repair"},
		{[]string{"--repair", "--split-brain-window", "1s"}, "--split-brain-window only applies with --sync"},
		{[]string{"--alignment-max-messages", "5"}, "--alignment-max-messages only applies with --keep-translations or --sync"},
	} {
		clitest.ParseFlags(t, f, NewCmdWatch, tc.want, tc.args...)
	}
}

// idleTailer is a one-partition offsets topic holding one commit.
type idleTailer struct{}

func (idleTailer) Partitions(context.Context) (int32, error) { return 1, nil }
func (idleTailer) Tail(ctx context.Context, p int32, fn func(pulsarx.TailMessage) error, caughtUp func()) error {
	m := kop.Message(p, 0, kop.OffsetCommit{Group: "orders", Topic: "persistent://public/default/t1", Partition: 0, Offset: 42})
	if err := fn(pulsarx.TailMessage{Message: m}); err != nil {
		return err
	}
	caughtUp()
	<-ctx.Done()
	return nil
}

// idleWatch is watch's options as parsed from --interval 50ms, on one cluster scus whose
// offsets topic never changes.
func idleWatch(t *testing.T, f *cmdutil.Factory) *Options {
	t.Helper()
	var got *Options
	cmd := NewCmdWatch(f, func(o *Options) error { got = o; return nil })
	cmd.SetArgs([]string{"--interval", "50ms"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	got.Targets = func() ([]config.Cluster, []config.Cluster, error) {
		cl := []config.Cluster{{Name: "scus", KafkaNamespace: "public/default"}}
		return cl, cl, nil
	}
	got.NamedTenant = func() (string, error) { return "", nil } // no config file: one tenant
	got.Build = func(sel, all []config.Cluster, o *Options) ([]watch.Cluster, func(), error) {
		return []watch.Cluster{{Name: "scus", KafkaNamespace: "public/default", Tailer: idleTailer{}}}, func() {}, nil
	}
	return got
}

func TestWatchRunServesAndStopsOnSignal(t *testing.T) {
	f, s := clitest.NewFactory("test", false)
	addr := make(chan string, 1)
	got := idleWatch(t, f)
	got.Listener = func(string) (net.Listener, error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err == nil {
			addr <- ln.Addr().String()
		}
		return ln, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- watchRun(ctx, got) }()
	base := "http://" + <-addr
	get := func(p string) (int, string) {
		resp, err := http.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, _ := get("/readyz")
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz %d after 5s", code)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, body := get("/metrics"); code != 200 ||
		!strings.Contains(body, `kop_offsets_persisted_offset{cluster="scus",group="orders",partition="0",topic="t1"} 42`) ||
		!strings.Contains(body, "kop_offsets_watch_cycles_total") {
		t.Errorf("/metrics %d:\n%s", code, body)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("/healthz %d", code)
	}
	t0 := time.Now()
	cancel()
	if err := wait.Await(t, done, 5*time.Second, "watchRun did not stop within 5s"); err != nil {
		t.Fatalf("watchRun: %v", err)
	}
	if d := time.Since(t0); d > 3*time.Second {
		t.Errorf("stopped in %v", d)
	}
	var msgs []string
	for _, l := range strings.Split(strings.TrimSpace(s.ErrOut.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("stderr line is not JSON: %q", l)
		}
		msgs = append(msgs, m["msg"].(string))
	}
	joined := strings.Join(msgs, "|")
	for _, want := range []string{"watch started", "signal received: stopping", "stopped"} {
		if !strings.Contains(joined, want) {
			t.Errorf("logs lack %q: %v", want, msgs)
		}
	}
}

// failingListener is a listener whose Accept fails for good, as a closed socket does.
type failingListener struct{ net.Listener }

func (l failingListener) Accept() (net.Conn, error) {
	return nil, errors.New("accept tcp 127.0.0.1:9464: use of closed network connection")
}

// The HTTP server failing stops watch with 3, naming the address.
func TestWatchRunHTTPServerFails(t *testing.T) {
	f, s := clitest.NewFactory("test", false)
	got := idleWatch(t, f)
	got.Listener = func(string) (net.Listener, error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		return failingListener{ln}, err
	}
	done := make(chan error, 1)
	go func() { done <- watchRun(context.Background(), got) }()
	err := wait.Await(t, done, 5*time.Second, "watchRun did not stop within 5s of its server failing")
	if cmdutil.ExitCode(err) != 3 || !strings.Contains(err.Error(), "HTTP server on 127.0.0.1:9464") {
		t.Errorf("err %v (exit %d), want 3 naming the server's address", err, cmdutil.ExitCode(err))
	}
	if !strings.Contains(s.ErrOut.String(), "HTTP server failed: stopping") {
		t.Errorf("stderr %q", s.ErrOut)
	}
}
