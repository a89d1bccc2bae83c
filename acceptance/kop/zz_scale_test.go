//go:build kop

package kop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/connect"
	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/lab/loadgen"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest/labcli"
)

// This file's name sorts last on purpose: go test runs the files in name order, and this test
// leaves 10,000 groups in both clusters' offsets topics, so every later test's bundles carry
// about 2,500 groups in their blast radius (a reload plan asks each of them): the watch tests'
// one-minute budgets are for the suite's own groups, not for a loaded lab.

// TestNamespaceUnloadAtScale: 10,000 groups × 5 keys committed on scus through KoP, then what
// an operator's `pulsar-admin namespaces unload public/__kafka` does (one unload of the whole
// namespace, then a lookup of each offsets partition), several times. KoP may drop the load of
// some partitions (docs/kop-facts.md). After each unload, `repair` must end with every
// partition served, exit 0, and `check` must read every row ok with exit 0. The test logs how
// many partitions each unload left unserved.
func TestNamespaceUnloadAtScale(t *testing.T) {
	const tries = 3
	id := time.Now().UnixNano()
	s := loadgen.Spec{Groups: 10000, KeysPerGroup: 5, Topics: 20, Commits: 50000,
		GroupPrefix: fmt.Sprintf("unl-%d-", id), TopicPrefix: fmt.Sprintf("unl-t-%d-", id)}.WithDefaults()
	scus := theLab.Cluster("scus")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	// Start with every offsets partition served on both clusters (an earlier run may have
	// left one unserved, which the lab's stale-row check does not see).
	for _, c := range []lab.Cluster{scus, theLab.Cluster("wus")} {
		for p := range int32(lab.OffsetsTopicPartitions) {
			if rawOffsetFetch(t, c, loader.ProbeGroup(p, lab.OffsetsTopicPartitions)) != nil {
				if err := lab.ReloadOffsetsPartition(ctx, c, p); err != nil {
					t.Fatalf("%s: bring offsets partition %d back before the test: %v", c.Name, p, err)
				}
			}
		}
	}
	for _, c := range []lab.Cluster{scus, theLab.Cluster("wus")} {
		a := labtest.Admin(t, c)
		if err := loadgen.CreateTopics(ctx, c.Name, a, s); err != nil {
			t.Fatal(err)
		}
	}
	kcl, err := connect.NewKafkaClient(config.Cluster{Name: scus.Name, KafkaBootstrap: []string{scus.KafkaBootstrap}}, connect.Options{RequestTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	st, err := loadgen.WriteKafka(ctx, kcl, s, loadgen.KafkaOptions{Concurrency: 16})
	kcl.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("scus: %d groups, %d commits through KoP in %s", s.Groups, st.Commits, time.Since(start).Round(time.Millisecond))
	scope := s.GroupPrefix + "*"
	// wus holds the replicated commits and never loaded them: the tool loads them there at
	// the end (a reload per partition by hand hits the very race this test is about), so
	// that later tests' repairs find nothing of this test stale.
	t.Cleanup(func() {
		d, code := quietly[labcli.RepairDoc](t, "--timeout", "10s", "repair", "--lock-file", filepath.Join(t.TempDir(), "repair.lock"), "-o", "json",
			"--cluster", "wus", "--group", scope, "--yes", "--max-bundles", "8", "--wait", "2m")
		if code != 0 {
			t.Errorf("cleanup: repair of wus: exit %d, after %+v", code, d.After)
		}
	})
	var unservedPerTry []int
	for try := 1; try <= tries; try++ {
		unloadNamespace(t, scus)
		time.Sleep(10 * time.Second) // KoP's loads of 10,000 groups end in seconds; a dropped one never does
		n := 0
		for p := range int32(lab.OffsetsTopicPartitions) {
			if err := rawOffsetFetch(t, scus, loader.ProbeGroup(p, lab.OffsetsTopicPartitions)); err != nil {
				n++
				t.Logf("try %d: scus offsets partition %d not served after the namespace unload: %v", try, p, err)
			}
		}
		unservedPerTry = append(unservedPerTry, n)
		d, code := quietly[labcli.RepairDoc](t, "--timeout", "10s", "repair", "--lock-file", filepath.Join(t.TempDir(), "repair.lock"), "-o", "json", "--cluster", "scus", "--group", scope, "--yes", "--max-bundles", "8", "--wait", "2m")
		if code != 0 || d.After == nil || len(d.After.Stale) != 0 || len(d.After.Unserved) != 0 {
			t.Fatalf("try %d: repair: exit %d, after %+v", try, code, d.After)
		}
		for p := range int32(lab.OffsetsTopicPartitions) {
			if err := rawOffsetFetch(t, scus, loader.ProbeGroup(p, lab.OffsetsTopicPartitions)); err != nil {
				t.Fatalf("try %d: scus offsets partition %d after repair: %v", try, p, err)
			}
		}
		rep, code := quietly[survey.Report](t, "--timeout", "10s", "check", "-o", "json", "--cluster", "scus", "--group", scope)
		if code != 0 || len(rep.Unserved) != 0 || rep.Summary["ok"] != s.Groups*s.KeysPerGroup {
			t.Fatalf("try %d: check after repair: exit %d, unserved %+v, summary %v", try, code, rep.Unserved, rep.Summary)
		}
	}
	t.Logf("partitions left unserved by one namespace unload at %d groups, per try: %v (of %d)", s.Groups, unservedPerTry, lab.OffsetsTopicPartitions)

	// watch --repair, separately: one more namespace unload with watch running; it brings
	// back whatever the unload left unserved, by itself.
	stop := cli.StartWatch(t, "127.0.0.1:19997", 30, scope)
	unloadNamespace(t, scus)
	time.Sleep(10 * time.Second)
	var left []int32
	for p := range int32(lab.OffsetsTopicPartitions) {
		if err := rawOffsetFetch(t, scus, loader.ProbeGroup(p, lab.OffsetsTopicPartitions)); err != nil {
			left = append(left, p)
		}
	}
	t.Logf("watch: the namespace unload left scus offsets partitions %v unserved", left)
	deadline := time.Now().Add(6 * time.Minute)
	for {
		served := 0
		for p := range int32(lab.OffsetsTopicPartitions) {
			if rawOffsetFetch(t, scus, loader.ProbeGroup(p, lab.OffsetsTopicPartitions)) == nil {
				served++
			}
		}
		if served == lab.OffsetsTopicPartitions {
			rep, code := quietly[survey.Report](t, "--timeout", "10s", "check", "-o", "json", "--cluster", "scus", "--group", scope)
			if code == 0 && rep.Summary["ok"] == s.Groups*s.KeysPerGroup {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("watch --repair: %d of %d partitions served after 6 minutes", served, lab.OffsetsTopicPartitions)
		}
		time.Sleep(15 * time.Second)
	}
	if code, stopped := stop(); !stopped {
		t.Errorf("watch did not stop (exit %d)", code)
	}
}

// quietly runs kop-offsets and decodes its JSON document, logging the command, its exit
// code, the document's size and the end of stderr (50,000 rows are too many to log).
func quietly[T any](t *testing.T, args ...string) (T, int) {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	code, out, errOut := labcli.RunCLI(ctx, theLab, args...)
	t.Logf("$ kop-offsets %s -> exit %d in %s, %d bytes of JSON\n%s", strings.Join(args, " "), code, time.Since(start).Round(time.Millisecond), len(out), labtest.Tail(errOut, 15))
	if code != 0 {
		// Too large for the log: kept whole beside the test's other files for the post-mortem.
		f := filepath.Join(os.TempDir(), fmt.Sprintf("%s-%d-exit%d.json", t.Name(), start.Unix(), code))
		if err := os.WriteFile(f, []byte(out), 0o644); err == nil {
			t.Logf("its document: %s", f)
		}
	}
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("exit %d, not a document: %v", code, err)
	}
	return v, code
}

// unloadNamespace unloads the whole offsets namespace of c and looks every offsets partition
// up, as an operator's `pulsar-admin namespaces unload` and the clients' next lookups do.
func unloadNamespace(t *testing.T, c lab.Cluster) {
	t.Helper()
	a := labtest.Admin(t, c)
	if err := a.Namespaces().Unload(lab.MetadataNamespace); err != nil {
		t.Fatalf("%s: unload %s: %v", c.Name, lab.MetadataNamespace, err)
	}
	for p := range int32(lab.OffsetsTopicPartitions) {
		tn, err := utils.GetTopicName(fmt.Sprintf("%s-partition-%d", lab.OffsetsTopic, p))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; ; i++ {
			if _, err = a.Topics().Lookup(*tn); err == nil || i == 20 {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("%s: look up %s: %v", c.Name, tn, err)
		}
	}
	t.Logf("%s: unloaded %s and looked up its %d offsets partitions", c.Name, lab.MetadataNamespace, lab.OffsetsTopicPartitions)
}
