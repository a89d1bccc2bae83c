//go:build e2e

package lease_test

// The writer lease on the real lab (two Apache Pulsar clusters; KoP or not), with two
// kop-offsets processes started from the built binary on two config files naming the same
// clusters. Process A reloads two bundles of scus with a long --pause between them: it holds
// scus's lease through the pause. Process B is refused, naming A; then B waits
// (--lease-wait), A is killed with SIGKILL, and B takes the lease as soon as the broker drops
// A's producer. The time from the kill to the broker dropping the producer is logged: it is
// the expiry of a lease whose holder died (docs/watch.md).

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/kop-offsets/kop-offsets/internal/audit"
	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/lease"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest/labrun"
)

func TestMain(m *testing.M) { labrun.Main(m) }

// copyConfig writes the lab's config to a file of its own (another operator's config) whose
// offsets topic is in metadataNS instead of __kafka.
func copyConfig(t *testing.T, l *lab.Lab, name, metadataNS string) string {
	t.Helper()
	p := labtest.ConfigCopy(t, l, name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.ReplaceAll(string(b), "metadataNamespace: "+lab.MetadataNamespace[len(lab.Tenant)+1:], "metadataNamespace: "+metadataNS))
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// emptyOffsetsNamespace creates, on scus, a namespace of its own with 4 bundles and an
// offsets topic of 8 partitions, and no group in it: the lab's own offsets topic holds the
// groups of the tests that ran before this one in every bundle, and a bundle with groups does
// not end verified on a lab without KoP. It returns the namespace's name in the tenant.
func emptyOffsetsNamespace(t *testing.T, adm pulsaradmin.Client) string {
	t.Helper()
	name := fmt.Sprintf("lease-e2e-%d", time.Now().UnixNano())
	ns := lab.Tenant + "/" + name
	pol := utils.NewDefaultPolicies()
	pol.Bundles = utils.NewBundlesDataWithNumBundles(4)
	pol.ReplicationClusters = []string{"scus"}
	if err := adm.Namespaces().CreateNsWithPolices(ns, *pol); err != nil {
		t.Fatalf("create %s: %v", ns, err)
	}
	tn, err := utils.GetTopicName("persistent://" + ns + "/__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	if err := adm.Topics().Create(*tn, 8); err != nil {
		t.Fatalf("create %s: %v", tn, err)
	}
	t.Cleanup(func() {
		_ = adm.Topics().Delete(*tn, true, true)
		_ = adm.Namespaces().DeleteNamespace(ns)
	})
	return name
}

// twoBundles returns offsets partitions of scus in two consecutive bundles, the first
// without groups: its reload ends verified without KoP, and A pauses before the second.
func twoBundles(t *testing.T, bin, cfg string) (int32, int32) {
	t.Helper()
	out, err := exec.Command(bin, "--config", cfg, "reload", "--cluster", "scus", "--partition", "0,1,2,3,4,5,6,7",
		"--allow-active", "--accept-loss", "--dry-run", "--max-plan-bundles", "8", "-o", "json").Output()
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	var doc struct {
		Plan struct {
			Bundles []struct {
				Range             string
				OffsetsPartitions []int32
				Groups            []string
			}
		}
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	bs := doc.Plan.Bundles
	for i := 0; i+1 < len(bs); i++ {
		if len(bs[i].Groups) == 0 {
			return bs[i].OffsetsPartitions[0], bs[i+1].OffsetsPartitions[0]
		}
	}
	t.Fatalf("no bundle without groups before another: %+v", bs)
	return 0, 0
}

func reloadArgs(cfg, trail string, parts string, extra ...string) []string {
	return append([]string{"--config", cfg, "reload", "--cluster", "scus", "--partition", parts, "--allow-active", "--accept-loss",
		"--yes", "--wait", "5s", "--audit-file", trail}, extra...)
}

func TestE2ELeaseTwoProcesses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	l, err := labrun.Ensure(ctx)
	if err != nil {
		t.Fatalf("lab: %v", err)
	}
	bin := labtest.Binary(t)
	adm := labtest.PulsarxAdmin(t, l.Cluster("scus"))
	ns := emptyOffsetsNamespace(t, labtest.Admin(t, l.Cluster("scus")))
	cfgA, cfgB := copyConfig(t, l, "operator-a", ns), copyConfig(t, l, "operator-b", ns)
	p1, p2 := twoBundles(t, bin, cfgA)
	dir := t.TempDir()
	trailA, trailB := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")

	// A: two bundles, a long pause between them: it holds the lease through the pause.
	a := exec.Command(bin, reloadArgs(cfgA, trailA, fmt.Sprintf("%d,%d", p1, p2), "--max-plan-bundles", "2", "--pause", "10m")...)
	a.Env = os.Environ()
	stderrA, err := a.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = a.Process.Kill(); _ = a.Wait() }()
	go func() {
		sc := bufio.NewScanner(stderrA)
		for sc.Scan() {
			t.Logf("A: %s", sc.Text())
		}
	}()
	waitFor(t, 3*time.Minute, "A unloads its first bundle", func() bool { return count(t, trailA, audit.ActionUnload) > 0 })

	// The lock topic names A in its producer metadata.
	holders, err := (lease.Pulsar{Admin: adm}).Holders(ctx, lease.DefaultTopic("public"))
	if err != nil || len(holders) != 1 || holders[0].PID != a.Process.Pid || !strings.Contains(holders[0].Command, "reload --cluster scus") {
		t.Fatalf("holders %+v, %v; want A (pid %d)", holders, err, a.Process.Pid)
	}

	// B, at once: refused, naming A; nothing written.
	out, err := exec.Command(bin, reloadArgs(cfgB, trailB, fmt.Sprint(p1))...).CombinedOutput()
	t.Logf("B (refused):\n%s", out)
	if code := exitCode(err); code != 3 {
		t.Fatalf("B exit %d, want 3", code)
	}
	host, _ := os.Hostname()
	for _, want := range []string{"cluster scus: the writer lease (persistent://public/kop-offsets/writer-lease) is held by",
		fmt.Sprintf("(pid %d, user ", a.Process.Pid), "host " + host, "reload --cluster scus", "nothing was written"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("B's error lacks %q", want)
		}
	}
	if n := count(t, trailB, ""); n != 0 {
		t.Errorf("B recorded %d writes while refused", n)
	}

	// B again, waiting; A is killed; B takes the lease once the broker drops A's producer.
	b := exec.Command(bin, reloadArgs(cfgB, trailB, fmt.Sprint(p1), "--lease-wait", "3m")...)
	outB := &strings.Builder{}
	b.Stdout, b.Stderr = outB, outB
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // B plans, then waits for the lease
	killed := time.Now()
	if err := syscall.Kill(a.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	dropped := waitFor(t, 3*time.Minute, "the broker drops A's producer", func() bool {
		hs, err := (lease.Pulsar{Admin: adm}).Holders(ctx, lease.DefaultTopic("public"))
		return err == nil && (len(hs) == 0 || hs[0].PID != a.Process.Pid)
	})
	err = b.Wait()
	t.Logf("B (waiting):\n%s", outB)
	if code := exitCode(err); code != 0 && code != 3 && code != 4 {
		t.Fatalf("B exit %d", code)
	}
	recs := labtest.ReadTrail(t, trailB)
	if len(recs) == 0 || recs[0].Action != audit.ActionUnload || recs[0].Who.PID != b.Process.Pid {
		t.Fatalf("B's trail %+v: B did not write after A died", recs)
	}
	acquired := recs[0].Time.Add(-time.Duration(recs[0].DurationMs) * time.Millisecond)
	t.Logf("lease expiry after SIGKILL: broker dropped the producer %s after the kill; B (retrying every %s) unloaded %s after it",
		dropped.Round(time.Millisecond), lease.DefaultRetry, acquired.Sub(killed).Round(time.Millisecond))
	if acquired.Before(killed) {
		t.Errorf("B wrote at %s, before A was killed at %s", acquired, killed)
	}
}

func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < limit {
		if cond() {
			return time.Since(start)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not after %s", what, limit)
	return 0
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

func count(t *testing.T, p, action string) int {
	n := 0
	for _, r := range labtest.ReadTrail(t, p) {
		if action == "" || r.Action == action {
			n++
		}
	}
	return n
}
