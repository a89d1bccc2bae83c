//go:build e2e

package watch

// End-to-end test of `kop-offsets watch` on the real lab (two Apache Pulsar 4.0.8 clusters,
// scus and wus, geo-replicated), run as the built binary. KoP is not available on this
// machine (docs/lab.md): nothing listens on the Kafka ports, so the cached side fails
// truthfully and what is asserted is the persisted side, the replication metrics and the
// process's survival. Offset commits are written with internal/kopcommit, which writes what
// KoP's writer would write. The test stops wus by pid, so it must stay the only e2e test of
// this package (this process's lab is then dead); a later package's labrun.Ensure finds wus not
// running and starts the lab over.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest/labrun"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/wait"
)

func TestMain(m *testing.M) { labrun.Main(m) }

// syncBuf is a bytes.Buffer safe for the process's writer and the test's reader.
type syncBuf struct {
	mu chan struct{}
	b  bytes.Buffer
}

func newSyncBuf() *syncBuf { return &syncBuf{mu: make(chan struct{}, 1)} }
func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu <- struct{}{}
	defer func() { <-s.mu }()
	return s.b.Write(p)
}
func (s *syncBuf) String() string {
	s.mu <- struct{}{}
	defer func() { <-s.mu }()
	return s.b.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kop-offsets")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/kop-offsets/kop-offsets/cmd/kop-offsets").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// watchProcess is the built binary running `watch`: the command, its exit and its stderr.
type watchProcess struct {
	cmd    *exec.Cmd
	exited chan error
	stderr *syncBuf
}

// startWatch starts bin with args, stdout discarded and stderr kept, and kills it when the
// test ends if it still runs.
func startWatch(t *testing.T, bin string, args ...string) *watchProcess {
	t.Helper()
	w := &watchProcess{cmd: exec.Command(bin, args...), exited: make(chan error, 1), stderr: newSyncBuf()}
	w.cmd.Stdout, w.cmd.Stderr = io.Discard, w.stderr
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { w.exited <- w.cmd.Wait() }()
	t.Cleanup(func() {
		if w.cmd.ProcessState == nil {
			_ = w.cmd.Process.Kill()
			if err := <-w.exited; err != nil {
				t.Logf("watch killed: %v", err)
			}
		}
	})
	return w
}

// terminate sends SIGTERM and returns the exit's error; the test fails at once when watch
// still runs 10s later.
func (w *watchProcess) terminate(t *testing.T) error {
	t.Helper()
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	return wait.Await(t, w.exited, 10*time.Second, "watch still running 10s after SIGTERM")
}

// waitReady waits (2m at most) until watch at base answers /readyz: both clusters replayed
// the offsets topic.
func waitReady(t *testing.T, base string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz not ready after 2m: %v", err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// scrape returns the value of the series whose name and labels start with prefix
// (e.g. `kop_offsets_watch_cluster_up{cluster="wus"}`), ok false when absent.
func scrape(t *testing.T, base, series string) (float64, bool, error) {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return 0, false, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return 0, false, fmt.Errorf("/metrics: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, series+" ") {
			v, err := strconv.ParseFloat(strings.TrimPrefix(l, series+" "), 64)
			return v, err == nil, err
		}
	}
	return 0, false, sc.Err()
}

// waitSeries polls /metrics until cond holds on the series, and returns how long it took.
func waitSeries(t *testing.T, base, series string, timeout time.Duration, cond func(float64) bool) time.Duration {
	t.Helper()
	t0 := time.Now()
	var last string
	for time.Since(t0) < timeout {
		v, ok, err := scrape(t, base, series)
		if err == nil && ok && cond(v) {
			return time.Since(t0)
		}
		last = fmt.Sprintf("value %v present %v err %v", v, ok, err)
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: condition not met after %s (%s)", series, timeout, last)
	return 0
}

func eq(want float64) func(float64) bool { return func(v float64) bool { return v == want } }

// labWriter ensures the lab, builds the binary and opens a writer on scus's offsets
// topic; all of it is released when the test ends.
func labWriter(t *testing.T) (*lab.Lab, string, *kop.Writer) {
	t.Helper()
	lctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	t.Cleanup(cancel)
	l, err := labrun.Ensure(lctx)
	if err != nil {
		t.Fatalf("lab: %v", err)
	}
	bin := buildBinary(t)
	pc, err := pulsar.NewClient(pulsar.ClientOptions{URL: l.Cluster("scus").ServiceURL, OperationTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pc.Close)
	wr := kop.NewWriter(pc, lab.OffsetsTopic, lab.OffsetsTopicPartitions)
	t.Cleanup(wr.Close)
	return l, bin, wr
}

func TestE2EWatch(t *testing.T) {
	ctx := context.Background()
	l, bin, wr := labWriter(t)
	group := fmt.Sprintf("e2e-watch-%d", time.Now().UnixNano())
	commitScus := func(off int64) {
		t.Helper()
		if _, _, err := wr.Commit(ctx, kop.OffsetCommit{Group: group, Topic: lab.Topic1, Partition: 0, Offset: off}); err != nil {
			t.Fatal(err)
		}
	}
	commitScus(500) // before the start: found by the initial replay

	addr := freeAddr(t)
	base := "http://" + addr
	const interval = 2 * time.Second
	w := startWatch(t, bin, "--config", l.ConfigPath, "--timeout", "5s", "watch",
		"--interval", interval.String(), "--listen", addr, "--group", group, "--coordinator-wait", "1s")
	stderr := w.stderr
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("watch stderr:\n%s", stderr.String())
		}
	})

	waitReady(t, base)
	labels := func(cluster string) string {
		return fmt.Sprintf(`{cluster=%q,group=%q,partition="0",topic="topic-1"}`, cluster, group)
	}
	waitSeries(t, base, "kop_offsets_persisted_offset"+labels("scus"), 3*interval, eq(500))
	waitSeries(t, base, "kop_offsets_persisted_offset"+labels("wus"), 3*interval, eq(500))

	// A commit on scus: both clusters' persisted side follow within a cycle (plus the
	// replication to wus), and wus counts a replicated commit from scus.
	replBefore, _, _ := scrape(t, base, `kop_offsets_replicated_commits_total{cluster="wus",from="scus"}`)
	commitScus(10900)
	budget := interval + 3*time.Second
	if d := waitSeries(t, base, "kop_offsets_persisted_offset"+labels("scus"), 2*budget, eq(10900)); d > budget {
		t.Errorf("scus persisted followed in %s, want within a cycle (%s)", d, budget)
	}
	if d := waitSeries(t, base, "kop_offsets_persisted_offset"+labels("wus"), 2*budget, eq(10900)); d > budget {
		t.Errorf("wus persisted followed in %s, want within a cycle (%s)", d, budget)
	}
	waitSeries(t, base, `kop_offsets_replicated_commits_total{cluster="wus",from="scus"}`, budget, func(v float64) bool { return v >= replBefore+1 })
	waitSeries(t, base, `kop_offsets_replication_delay_seconds_count{cluster="wus",from="scus"}`, budget, func(v float64) bool { return v >= 1 })
	if l.KoP.Enabled {
		// KoP answers: what it serves depends on when it loaded the partition; only its
		// being asked is asserted here (the KoP suite asserts the rest).
		waitSeries(t, base, `kop_offsets_watch_kop_up{cluster="wus"}`, budget, eq(1))
	} else {
		// KoP is absent: nothing serves the replicated commit, the staleness grows.
		waitSeries(t, base, `kop_offsets_staleness_seconds{cluster="wus"}`, 2*budget, func(v float64) bool { return v > 0 })
		waitSeries(t, base, `kop_offsets_watch_kop_up{cluster="wus"}`, budget, eq(0))
	}
	waitSeries(t, base, `kop_offsets_watch_cluster_up{cluster="wus"}`, budget, eq(1))

	// Stop wus by pid: it is marked down, /metrics keeps serving, scus is still followed.
	var wusPID int
	for _, c := range l.State.Clusters {
		if c.Name == "wus" {
			wusPID = c.PID
		}
	}
	if wusPID == 0 || !lab.IsLabJVM(wusPID, "wus") {
		t.Fatalf("no running wus JVM in the lab state (pid %d)", wusPID)
	}
	if err := syscall.Kill(wusPID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for i := 0; lab.IsLabJVM(wusPID, "wus"); i++ {
		if i == 600 {
			_ = syscall.Kill(wusPID, syscall.SIGKILL)
		}
		if i > 900 {
			t.Fatalf("wus (pid %d) still running", wusPID)
		}
		time.Sleep(100 * time.Millisecond)
	}
	d := waitSeries(t, base, `kop_offsets_watch_cluster_up{cluster="wus"}`, 45*time.Second, eq(0))
	t.Logf("wus marked down %s after its JVM exited", d.Round(100*time.Millisecond))
	commitScus(11000)
	waitSeries(t, base, "kop_offsets_persisted_offset"+labels("scus"), 3*budget, eq(11000))
	waitSeries(t, base, `kop_offsets_watch_cluster_up{cluster="scus"}`, budget, eq(1))
	waitSeries(t, base, `kop_offsets_status{cluster="wus",group="`+group+`",partition="0",status="error",topic="topic-1"}`, 3*budget, eq(1))
	if resp, err := http.Get(base + "/healthz"); err != nil {
		t.Errorf("/healthz with wus down: %v", err)
	} else {
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("/healthz with wus down: %s", resp.Status)
		}
	}

	// SIGTERM: a clean end within a few seconds.
	t0 := time.Now()
	if err := w.terminate(t); err != nil {
		t.Errorf("watch exited with %v after SIGTERM", err)
	}
	if d := time.Since(t0); d > 6*time.Second {
		t.Errorf("watch took %s to stop after SIGTERM", d)
	}
	t.Logf("stopped %s after SIGTERM", time.Since(t0).Round(10*time.Millisecond))

	// Every stderr line is one JSON object; the decisions are there.
	var msgs []string
	for _, ln := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(ln), &m); err != nil {
			t.Errorf("stderr line is not JSON: %q", ln)
			continue
		}
		msgs = append(msgs, fmt.Sprint(m["msg"]))
	}
	all := strings.Join(msgs, "\n")
	wants := []string{"watch started", "offsets partition replayed; following", "cluster down", "signal received: stopping", "stopped"}
	if !l.KoP.Enabled {
		wants = append(wants, "KoP does not answer OffsetFetch")
	}
	for _, want := range wants {
		if !regexp.MustCompile("(?m)^" + regexp.QuoteMeta(want)).MatchString(all) {
			t.Errorf("no %q log line", want)
		}
	}
	if os.Getenv("KOP_E2E_VERBOSE") != "" {
		t.Logf("stderr:\n%s", stderr.String())
	}
}
