//go:build kop

package kop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest/labcli"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest/labrun"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// theLab is the KoP lab of this run, and cli runs kop-offsets on it (check, repair and
// watch with --timeout 10s); both are set by TestMain.
var (
	theLab *lab.Lab
	cli    labcli.CLI
)

// TestMain starts (or reuses) the lab with KoP required: without a NAR the whole suite fails
// at once with a message naming KOP_NAR; it never runs on a lab without KoP. A reused lab that
// already holds stale rows (left by other runs) is restarted over fresh data, since repair
// reloads whatever is stale and the story must be alone in being stale. At the end it prints
// the summary line: result, time, KoP and Pulsar versions, NAR sha256.
func TestMain(m *testing.M) {
	start := time.Now()
	if os.Getenv("KOP") == "" {
		_ = os.Setenv("KOP", "required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	l, err := labrun.Ensure(ctx)
	if err == nil && !l.KoP.Enabled {
		err = fmt.Errorf("the lab runs without KoP: %s", l.KoP.Reason)
	}
	if err == nil && !l.Started {
		if stale := staleRows(ctx, l); len(stale) > 0 {
			fmt.Fprintf(os.Stderr, "kop suite: the running lab has %d stale row(s) left by earlier runs (%s): restarting it over fresh data\n", len(stale), strings.Join(stale, "; "))
			l, err = lab.Up(ctx, lab.Options{Fresh: true, Keep: l.State.Keep})
		}
	}
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "\nKoP SUITE FAILED: it needs a lab with KoP, and there is none.\n"+
			"  Bring a KoP protocol handler NAR built for Pulsar %s:\n"+
			"    KOP_NAR=/path/to/pulsar-protocol-handler-kafka-<version>.nar make e2e-kop\n"+
			"  (docs/lab.md: where to get one). KOP_NAR=%q.\n  cause: %v\n\n",
			pulsarVersion(), os.Getenv("KOP_NAR"), err)
		_ = labrun.Release(context.Background())
		os.Exit(1)
	}
	theLab = l
	cli = labcli.CLI{Lab: l, Timeout: "10s"}
	restoreTrail := labrun.IsolateAuditTrail() // the suite's writes never reach the user's trail
	code := m.Run()
	restoreTrail()
	result := "PASS"
	if code != 0 {
		result = "FAIL"
	}
	fmt.Printf("kop suite: %s in %s on KoP %s (%s, sha256 %s) and Apache Pulsar %s\n",
		result, time.Since(start).Round(time.Second), l.KoP.Version, l.KoP.Nar, l.KoP.SHA256, l.State.PulsarVersion)
	rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	if err := labrun.Release(rctx); err != nil {
		fmt.Fprintln(os.Stderr, "lab: release:", err)
		if code == 0 {
			code = 1
		}
	}
	rcancel()
	os.Exit(code)
}

func pulsarVersion() string {
	if v := os.Getenv("PULSAR_VERSION"); v != "" {
		return v
	}
	return lab.DefaultPulsarVersion
}

// staleRows returns the stale_cache cells of the running lab ("cluster group topic/partition").
func staleRows(ctx context.Context, l *lab.Lab) []string {
	code, out, _ := labcli.RunCLI(ctx, l, "--timeout", "10s", "check", "-o", "json")
	var rep survey.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		return []string{fmt.Sprintf("check exit %d, unreadable output", code)}
	}
	var s []string
	for _, r := range rep.Rows {
		for _, cell := range r.Cells {
			if cell.Status == verdict.StatusStaleCache {
				s = append(s, fmt.Sprintf("%s %s %s/%d", cell.Cluster, r.Group, r.Topic, r.Partition))
			}
		}
	}
	return s
}

// consumeFirst joins group on cluster with a franz-go group consumer of topic (no commits)
// and returns the offset of the first record it gets. With no committed offset it would
// start at the beginning (0).
func consumeFirst(t *testing.T, cluster, group, topic string) int64 {
	t.Helper()
	return labtest.FirstRecord(t, theLab, cluster, group, topic).Offset
}

// errNotCoordinator is what KoP answers for an offsets partition it does not serve.
var errNotCoordinator = errors.New("NOT_COORDINATOR")

// rawOffsetFetch sends one OffsetFetch for group straight to c's only KoP broker, with no
// client retry, and returns the group's error code as an error (nil when it answered).
func rawOffsetFetch(t *testing.T, c lab.Cluster, group string) error {
	t.Helper()
	cl := labtest.Kafka(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil || len(md.Brokers) == 0 {
		t.Fatalf("%s: Metadata: %v", c.Name, err)
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	req.Groups = append(req.Groups, rg)
	resp, err := cl.Broker(int(md.Brokers[0].NodeID)).Request(ctx, req)
	if err != nil {
		t.Fatalf("%s: OffsetFetch %s: %v", c.Name, group, err)
	}
	r := resp.(*kmsg.OffsetFetchResponse)
	code := r.ErrorCode
	if len(r.Groups) > 0 {
		code = r.Groups[0].ErrorCode
	}
	if code == 0 {
		return nil
	}
	if code == 16 {
		return errNotCoordinator
	}
	return fmt.Errorf("error code %d", code)
}

// javaConsumeFirst is consumeFirst with the Java kafka-clients 2.8 consumer of
// lab/java/FirstRecord.java, run from source by java.
func javaConsumeFirst(t *testing.T, cluster, group, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp, err := lab.KafkaClientsClasspath(ctx, theLab.Paths, lab.DefaultKafkaClientsVersion)
	if err != nil {
		t.Fatal(err)
	}
	java := "java"
	if h := os.Getenv("JAVA_HOME"); h != "" {
		java = filepath.Join(h, "bin", "java")
	}
	cmd := exec.CommandContext(ctx, java, "-cp", cp, theLab.Paths.JavaSource("FirstRecord.java"),
		theLab.Cluster(cluster).KafkaBootstrap, group, topic)
	out, err := cmd.CombinedOutput()
	t.Logf("%s: java kafka-clients %s consumer of %s: %s", cluster, lab.DefaultKafkaClientsVersion, group, strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("%s: java consumer: %v", cluster, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		var tp string
		var p int32
		var off int64
		if n, _ := fmt.Sscanf(line, "first %s %d %d", &tp, &p, &off); n == 3 {
			return off
		}
	}
	t.Fatalf("%s: java consumer printed no record", cluster)
	return -1
}

// settledGroup is labtest.SettledGroup on the suite's lab: a fresh topic, a settled group
// named after it (name+"-group") and the group's offsets partition.
func settledGroup(t *testing.T, name string) (topic, group string, part int32) {
	t.Helper()
	return labtest.SettledGroup(t, theLab, name)
}
