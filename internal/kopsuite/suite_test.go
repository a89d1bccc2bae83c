//go:build kop

package kopsuite

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

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	chk "github.com/kop-offsets/kop-offsets/internal/check"
	"github.com/kop-offsets/kop-offsets/internal/commands"
	"github.com/kop-offsets/kop-offsets/internal/commands/root"
	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/lab/labtest"
	"github.com/kop-offsets/kop-offsets/internal/offsets"
)

// theLab is the KoP lab of this run, set by TestMain.
var theLab *lab.Lab

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
	l, err := lab.Ensure(ctx)
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
		_ = lab.Release(context.Background())
		os.Exit(1)
	}
	theLab = l
	restoreTrail := lab.IsolateAuditTrail() // the suite's writes never reach the user's trail
	code := m.Run()
	restoreTrail()
	result := "PASS"
	if code != 0 {
		result = "FAIL"
	}
	fmt.Printf("kop suite: %s in %s on KoP %s (%s, sha256 %s) and Apache Pulsar %s\n",
		result, time.Since(start).Round(time.Second), l.KoP.Version, l.KoP.Nar, l.KoP.SHA256, l.State.PulsarVersion)
	rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	if err := lab.Release(rctx); err != nil {
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
	code, out, _ := runCLI(ctx, l, "--timeout", "10s", "check", "-o", "json")
	var rep chk.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		return []string{fmt.Sprintf("check exit %d, unreadable output", code)}
	}
	var s []string
	for _, r := range rep.Rows {
		for _, cell := range r.Cells {
			if cell.Status == offsets.StatusStaleCache {
				s = append(s, fmt.Sprintf("%s %s %s/%d", cell.Cluster, r.Group, r.Topic, r.Partition))
			}
		}
	}
	return s
}

// runCLI runs kop-offsets in-process against the lab's config.yaml.
func runCLI(ctx context.Context, l *lab.Lab, args ...string) (int, string, string) {
	f, streams := labtest.Factory(l)
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
	}
	code := commands.Run(ctx, f, root.NewCmdRoot(f), args)
	return code, streams.Out.String(), streams.ErrOut.String()
}

// run runs kop-offsets and logs the command, its exit code and its output.
func run(t *testing.T, args ...string) (int, string) {
	t.Helper()
	start := time.Now()
	code, out, errOut := runCLI(context.Background(), theLab, args...)
	t.Logf("$ kop-offsets %s -> exit %d in %s\n%s%s", strings.Join(args, " "), code, time.Since(start).Round(time.Millisecond), out, errOut)
	return code, out
}

// repair runs `kop-offsets repair` with a lock file of the test's own.
func repair(t *testing.T, args ...string) (int, repairDoc) {
	t.Helper()
	lock := filepath.Join(t.TempDir(), "repair.lock")
	code, out := run(t, append([]string{"--timeout", "10s", "repair", "--lock-file", lock, "-o", "json"}, args...)...)
	var d repairDoc
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("repair: exit %d, not a repair document: %v", code, err)
	}
	return code, d
}

// repairDoc is the part of `repair -o json` the suite reads.
type repairDoc struct {
	Stale    []repairRow
	Left     []repairRow
	Clusters []struct {
		Cluster   string
		Groups    []string
		Refusal   string
		Execution *struct {
			Unloaded []string
			ExitCode int
		}
		ExitCode int
	}
	After *struct {
		Stale    []repairRow
		Unserved []struct{ Cluster string }
	}
}

type repairRow struct {
	Cluster, Group, Topic, Status, Reason string
	Partition                             int32
}

// check runs `kop-offsets check -o json` and returns the report and the exit code.
func check(t *testing.T, args ...string) (chk.Report, int) {
	t.Helper()
	code, out := run(t, append([]string{"--timeout", "10s", "check", "-o", "json"}, args...)...)
	var rep chk.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("check: exit %d, not a report: %v", code, err)
	}
	if rep.ExitCode != code {
		t.Errorf("check: exitCode %d in JSON, process %d", rep.ExitCode, code)
	}
	return rep, code
}

// row returns the row of group in rep.
func row(t *testing.T, rep chk.Report, group string) chk.Row {
	t.Helper()
	for _, r := range rep.Rows {
		if r.Group == group {
			return r
		}
	}
	t.Fatalf("check has no row for %s: %+v", group, rep.Rows)
	return chk.Row{}
}

func val(p *int64) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

// newTopic creates persistent://public/default/<name> with one partition on both clusters
// (the namespace replicates both ways) and returns its Kafka name.
func newTopic(t *testing.T, prefix string) string {
	t.Helper()
	name := labtest.Name(prefix)
	tn, err := utils.GetTopicName("persistent://public/default/" + name)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range theLab.Clusters {
		a := labtest.Admin(t, c)
		if err := a.Topics().Create(*tn, 1); err != nil && !strings.Contains(err.Error(), "409") {
			t.Fatalf("%s: create %s: %v", c.Name, tn, err)
		}
	}
	return name
}

// produce writes n records (key k-<i>, value v-<i>) to topic through c's KoP.
func produce(t *testing.T, c lab.Cluster, topic string, n int) {
	t.Helper()
	start := time.Now()
	cl := labtest.Kafka(t, c, append(patientProducer(), kgo.DefaultProduceTopic(topic))...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const chunk = 1000
	for i := 0; i < n; i += chunk {
		var rs []*kgo.Record
		for j := i; j < n && j < i+chunk; j++ {
			rs = append(rs, &kgo.Record{Key: []byte(fmt.Sprintf("k-%d", j)), Value: []byte(fmt.Sprintf("v-%d", j))})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("%s: produce to %s through KoP: %v", c.Name, topic, err)
		}
	}
	t.Logf("%s: produced %d records to %s through KoP in %s", c.Name, n, topic, time.Since(start).Round(time.Millisecond))
}

// patientProducer is a producer without idempotence (the lab's KoP has no transaction
// coordinator) that waits long for KoP's answer: a produce request that times out is sent
// again, and without idempotence its records are then written twice (seen once on the
// loaded lab: 11,900 records for 10,900 produced).
func patientProducer() []kgo.Opt {
	return []kgo.Opt{kgo.DisableIdempotentWrite(), kgo.ProducerLinger(5 * time.Millisecond),
		kgo.ProduceRequestTimeout(2 * time.Minute), kgo.RequestTimeoutOverhead(2 * time.Minute)}
}

// waitEndOffset waits until topic's partition 0 on c ends at want (replication brings the
// records of the other cluster).
func waitEndOffset(t *testing.T, c lab.Cluster, topic string, want int64) {
	t.Helper()
	adm := kadm.NewClient(labtest.Kafka(t, c))
	deadline := time.Now().Add(2 * time.Minute)
	var got int64 = -1
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ends, err := adm.ListEndOffsets(ctx, topic)
		cancel()
		if err == nil {
			if o, ok := ends.Lookup(topic, 0); ok && o.Err == nil {
				got = o.Offset
				if got == want {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s ends at %d, want %d (%v)", c.Name, topic, got, want, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitReplicated waits until from's replicator of offsets partition p toward to is connected
// with no backlog.
func waitReplicated(t *testing.T, from, to string, p int32) {
	t.Helper()
	tn, _ := utils.GetTopicName(fmt.Sprintf("%s-partition-%d", lab.OffsetsTopic, p))
	a := labtest.Admin(t, theLab.Cluster(from))
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := a.Topics().GetStats(*tn)
		if err == nil {
			if r, ok := st.Replication[to]; ok && r.Connected && r.ReplicationBacklog == 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: replication of offsets partition %d to %s not done: %+v %v", from, p, to, st.Replication, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// served returns what KoP on cluster serves for group's topic/0 ("none" when it has no offset).
func served(t *testing.T, cluster, group, topic string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	off, ok, err := lab.FetchThroughKoP(ctx, theLab.Cluster(cluster), group, topic, 0)
	// An answer KoP gives while the bundle moves (LEADER_NOT_AVAILABLE, NOT_COORDINATOR, ...)
	// is asked again: tests poll this while watch or repair unloads.
	for err != nil && kerr.IsRetriable(err) && ctx.Err() == nil {
		time.Sleep(500 * time.Millisecond)
		off, ok, err = lab.FetchThroughKoP(ctx, theLab.Cluster(cluster), group, topic, 0)
	}
	if err != nil {
		t.Fatalf("%v", err)
	}
	if !ok {
		return "none"
	}
	return fmt.Sprint(off)
}

func commit(t *testing.T, cluster, group, topic string, offset int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := lab.CommitThroughKoP(ctx, theLab.Cluster(cluster), group, topic, 0, offset); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %s committed %s/0=%d through KoP", cluster, group, topic, offset)
}

// loadOn makes cluster's KoP load group's offsets partition afresh (bundle unload + lookup).
func loadOn(t *testing.T, cluster, group string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p := offsets.PartitionFor(group, lab.OffsetsTopicPartitions)
	if err := lab.ReloadOffsetsPartition(ctx, theLab.Cluster(cluster), p); err != nil {
		t.Fatal(err)
	}
}

// settle leaves nothing stale behind for the groups of a test: both clusters load their
// offsets partitions again, so that later tests (and repair, which takes every stale row)
// start from a lab where only they are stale.
func settle(t *testing.T, groups ...string) {
	t.Helper()
	t.Cleanup(func() {
		for _, g := range groups {
			for _, c := range []string{"scus", "wus"} {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				err := lab.ReloadOffsetsPartition(ctx, theLab.Cluster(c), offsets.PartitionFor(g, lab.OffsetsTopicPartitions))
				cancel()
				if err != nil {
					t.Errorf("settle %s on %s: %v", g, c, err)
				}
			}
		}
	})
}

// consumeFirst joins group on cluster with a franz-go group consumer of topic (no commits)
// and returns the offset of the first record it gets. With no committed offset it would
// start at the beginning (0).
func consumeFirst(t *testing.T, cluster, group, topic string) int64 {
	t.Helper()
	return firstRecord(t, cluster, group, topic).Offset
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

// storyAt500 sets up the user's story up to its stale point: 10900 records on scus replicated
// to wus, the group's commit of 500 on scus replicated, and wus's KoP loaded with it. The
// names start with prefix.
func storyAt500(t *testing.T, prefix string) (topic, group string, part int32) {
	t.Helper()
	topic = newTopic(t, prefix)
	group = labtest.Name(prefix + "-group")
	part = offsets.PartitionFor(group, lab.OffsetsTopicPartitions)
	settle(t, group)
	produce(t, theLab.Cluster("scus"), topic, 10900)
	waitEndOffset(t, theLab.Cluster("wus"), topic, 10900)
	commit(t, "scus", group, topic, 500)
	waitReplicated(t, "scus", "wus", part)
	loadOn(t, "wus", group)
	return topic, group, part
}
