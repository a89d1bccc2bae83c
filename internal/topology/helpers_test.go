//go:build topology

package topology_test

// The user's story's helpers, as in the KoP suite (internal/kopsuite, tag kop), on the lab of
// this suite: those live in another test package and cannot be imported.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	chk "github.com/kop-offsets/kop-offsets/internal/check"
	"github.com/kop-offsets/kop-offsets/internal/commands"
	"github.com/kop-offsets/kop-offsets/internal/commands/root"
	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/lab/labtest"
	"github.com/kop-offsets/kop-offsets/internal/offsets"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

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
func run(t *testing.T, l *lab.Lab, args ...string) (int, string) {
	t.Helper()
	start := time.Now()
	code, out, errOut := runCLI(context.Background(), l, args...)
	t.Logf("$ kop-offsets %s -> exit %d in %s\n%s%s", strings.Join(args, " "), code, time.Since(start).Round(time.Millisecond), out, errOut)
	return code, out
}

// check runs `kop-offsets check -o json` and returns the report and the exit code.
func check(t *testing.T, l *lab.Lab, args ...string) (chk.Report, int) {
	t.Helper()
	code, out := run(t, l, append([]string{"--timeout", "20s", "check", "-o", "json"}, args...)...)
	var rep chk.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("check: exit %d, not a report: %v", code, err)
	}
	if rep.ExitCode != code {
		t.Errorf("check: exitCode %d in JSON, process %d", rep.ExitCode, code)
	}
	return rep, code
}

// repairDoc is the part of `repair -o json` the suite reads.
type repairDoc struct {
	Stale    []repairRow
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

// repair runs `kop-offsets repair` with a lock file of the test's own.
func repair(t *testing.T, l *lab.Lab, args ...string) (int, repairDoc) {
	t.Helper()
	lock := filepath.Join(t.TempDir(), "repair.lock")
	code, out := run(t, l, append([]string{"--timeout", "20s", "repair", "--lock-file", lock, "-o", "json"}, args...)...)
	var d repairDoc
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("repair: exit %d, not a repair document: %v", code, err)
	}
	return code, d
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

// newTopic creates persistent://public/default/<name> with one partition on every cluster
// and returns its Kafka name.
func newTopic(t *testing.T, l *lab.Lab, prefix string) string {
	t.Helper()
	name := labtest.Name(prefix)
	tn, err := utils.GetTopicName("persistent://public/default/" + name)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range l.Clusters {
		if err := labtest.Admin(t, c).Topics().Create(*tn, 1); err != nil && !strings.Contains(err.Error(), "409") {
			t.Fatalf("%s: create %s: %v", c.Name, tn, err)
		}
	}
	return name
}

// produce writes n records to topic through c's KoP.
func produce(t *testing.T, c lab.Cluster, topic string, n int) {
	t.Helper()
	start := time.Now()
	cl := labtest.Kafka(t, c, kgo.DefaultProduceTopic(topic), kgo.DisableIdempotentWrite(), kgo.ProducerLinger(5*time.Millisecond))
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

// waitEndOffset waits until topic's partition 0 on c ends at want.
func waitEndOffset(t *testing.T, c lab.Cluster, topic string, want int64) {
	t.Helper()
	adm := kadm.NewClient(labtest.Kafka(t, c))
	deadline := time.Now().Add(3 * time.Minute)
	var got int64 = -1
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ends, err := adm.ListEndOffsets(ctx, topic)
		cancel()
		if err == nil {
			if o, ok := ends.Lookup(topic, 0); ok && o.Err == nil {
				if got = o.Offset; got == want {
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
func waitReplicated(t *testing.T, l *lab.Lab, from, to string, p int32) {
	t.Helper()
	tn, _ := utils.GetTopicName(fmt.Sprintf("%s-partition-%d", lab.OffsetsTopic, p))
	a := labtest.Admin(t, l.Cluster(from))
	deadline := time.Now().Add(2 * time.Minute)
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
func served(t *testing.T, l *lab.Lab, cluster, group, topic string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	off, ok, err := lab.FetchThroughKoP(ctx, l.Cluster(cluster), group, topic, 0)
	if err != nil {
		t.Fatalf("%v", err)
	}
	if !ok {
		return "none"
	}
	return fmt.Sprint(off)
}

func commit(t *testing.T, l *lab.Lab, cluster, group, topic string, offset int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := lab.CommitThroughKoP(ctx, l.Cluster(cluster), group, topic, 0, offset); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %s committed %s/0=%d through KoP", cluster, group, topic, offset)
}

// loadOn makes cluster's KoP load group's offsets partition afresh (bundle unload + lookup).
func loadOn(t *testing.T, l *lab.Lab, cluster, group string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := lab.ReloadOffsetsPartition(ctx, l.Cluster(cluster), offsets.PartitionFor(group, lab.OffsetsTopicPartitions)); err != nil {
		t.Fatal(err)
	}
}

// settle reloads the groups' offsets partitions on every cluster when the test ends, so that
// nothing stale is left for later tests (repair takes every stale row of a cluster).
func settle(t *testing.T, l *lab.Lab, groups ...string) {
	t.Helper()
	t.Cleanup(func() {
		for _, g := range groups {
			for _, c := range l.Clusters {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				err := lab.ReloadOffsetsPartition(ctx, c, offsets.PartitionFor(g, lab.OffsetsTopicPartitions))
				cancel()
				if err != nil {
					t.Errorf("settle %s on %s: %v", g, c.Name, err)
				}
			}
		}
	})
}

// storyAt500 sets up the user's story to its stale point: 10900 records on scus replicated to
// wus, the group's commit of 500 on scus replicated, and wus's KoP loaded with it.
func storyAt500(t *testing.T, l *lab.Lab, prefix string) (topic, group string, part int32) {
	t.Helper()
	topic = newTopic(t, l, prefix)
	group = labtest.Name(prefix + "-group")
	part = offsets.PartitionFor(group, lab.OffsetsTopicPartitions)
	settle(t, l, group)
	produce(t, l.Cluster("scus"), topic, 10900)
	waitEndOffset(t, l.Cluster("wus"), topic, 10900)
	commit(t, l, "scus", group, topic, 500)
	waitReplicated(t, l, "scus", "wus", part)
	loadOn(t, l, "wus", group)
	return topic, group, part
}

// firstRecord joins group on cluster with a franz-go group consumer of topic (no commits) and
// returns the first record it gets; with no committed offset it starts at the beginning.
func firstRecord(t *testing.T, l *lab.Lab, cluster, group, topic string) *kgo.Record {
	t.Helper()
	cl := labtest.Kafka(t, l.Cluster(cluster), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		fs := cl.PollRecords(ctx, 1)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%s: consumer of %s on %s got no record: %v", cluster, group, topic, err)
		}
		var first *kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			if first == nil {
				first = r
			}
		})
		if first != nil {
			t.Logf("%s: consumer of %s starts at offset %d key %s", cluster, group, first.Offset, first.Key)
			return first
		}
	}
}

// brokerOf returns the index of the broker of c that owns offsets partition p now (a lookup,
// which assigns an owner to an unowned bundle), -1 when none of c's brokers matches.
func brokerOf(ctx context.Context, t *testing.T, c lab.Cluster, p int32) int {
	t.Helper()
	o, err := labtest.PulsarxAdmin(t, c).LookupOwner(ctx, pulsarx.PartitionTopic(lab.OffsetsTopic, p))
	if err != nil {
		t.Fatalf("%s: look up offsets partition %d: %v", c.Name, p, err)
	}
	for i := range c.BrokerCount() {
		b := c.Broker(i)
		if o.HTTPURL == b.AdminURL || o.BrokerURL == b.ServiceURL {
			return i
		}
	}
	t.Logf("%s: offsets partition %d owned by %+v, none of the lab's brokers", c.Name, p, o)
	return -1
}

// freeListen returns 127.0.0.1:<a port free now>.
func freeListen(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// startWatch runs `watch --repair` (2 s cycles) over groups in the background and waits until
// it is ready; stop cancels it and returns its exit code.
func startWatch(t *testing.T, l *lab.Lab, listen string, groups ...string) (stop func() (code int, stopped bool)) {
	t.Helper()
	args := []string{"--timeout", "20s", "watch", "--repair", "--interval", "2s", "--cooldown", "5s", "--max-bundles", "4", "--listen", listen}
	for _, g := range groups {
		args = append(args, "--group", g)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		code, _, errOut := runCLI(ctx, l, args...)
		t.Logf("watch stderr (last lines):\n%s", tail(errOut, 25))
		done <- code
	}()
	var once sync.Once
	var code int
	var stopped bool
	stop = func() (int, bool) {
		once.Do(func() {
			cancel()
			select {
			case code = <-done:
				stopped = true
			case <-time.After(30 * time.Second):
				t.Error("watch did not stop within 30 s")
			}
		})
		return code, stopped
	}
	t.Cleanup(func() { stop() }) // also when the wait below fails the test
	deadline := time.Now().Add(3 * time.Minute)
	for {
		resp, err := http.Get("http://" + listen + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return stop
			}
		}
		select {
		case c := <-done:
			done <- c
			t.Fatalf("watch ended (exit %d) before it was ready", c)
		default:
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("watch not ready after 3 min: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + fmt.Sprintf("\n(%d lines)", len(lines))
}
