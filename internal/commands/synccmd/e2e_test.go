//go:build e2e

package synccmd_test

// sync setup on the real lab (two Apache Pulsar 4.0.8 clusters whose offsets topic
// replicates by namespace policy): watch --sync refuses that deployment; setup stops the
// offsets topic's replication between the clusters and nothing else; --undo gives it back.
// The lab is left as it was found (the cleanup undoes the setup), because every other e2e
// test needs the replicated offsets topic.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/root"
	"github.com/kop-offsets/kop-offsets/internal/commands/synccmd"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
)

func TestMain(m *testing.M) { labtest.Main(m) }

func run(t *testing.T, l *lab.Lab, args ...string) (int, string, string) {
	t.Helper()
	return runFor(t, l, 3*time.Minute, args...)
}

// runFor runs the command until it ends or d passes (then its context ends: a watch stops).
func runFor(t *testing.T, l *lab.Lab, d time.Duration, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	f, s := clitest.NewFactory("e2e", false)
	err := clitest.Execute(ctx, root.NewCmdRoot(f), append([]string{"--config", l.ConfigPath}, args...)...)
	return cmdutil.ExitCode(err), s.Out.String(), s.ErrOut.String() + errText(err)
}

// errText is err as the command line prints it (cmdutil.PrintError: the fix too).
func errText(err error) string {
	if err == nil {
		return ""
	}
	var b strings.Builder
	cmdutil.PrintError(&b, err, false)
	return b.String()
}

// entries is the number of entries of offsets partition p on cluster.
func entries(t *testing.T, l *lab.Lab, cluster string, p int32) int64 {
	t.Helper()
	tn, _ := utils.GetTopicName(fmt.Sprintf("%s-partition-%d", lab.OffsetsTopic, p))
	st, err := labtest.Admin(t, l.Cluster(cluster)).Topics().GetInternalStats(*tn)
	if err != nil {
		t.Fatal(err)
	}
	return st.NumberOfEntries
}

func TestE2ESyncSetup(t *testing.T) {
	l := labtest.Lab(t)
	trail := t.TempDir() + "/audit.jsonl"
	t.Cleanup(func() {
		if code, _, e := run(t, l, "sync", "setup", "--undo", "--yes", "--audit-file", ""); code != 0 {
			t.Errorf("cleanup: sync setup --undo: exit %d: %s", code, e)
		}
	})
	// Replicated by the namespace: watch --sync refuses to start, naming the fix.
	code, _, e := run(t, l, "watch", "--sync", "--listen", "127.0.0.1:0")
	if code != 1 || !strings.Contains(e, "replicates to wus (its namespace's policy)") || !strings.Contains(e, "fix: kop-offsets sync setup --cluster scus --cluster wus") {
		t.Fatalf("watch --sync on a replicated offsets topic: exit %d: %s", code, e)
	}
	// A dry run writes nothing.
	code, out, e := run(t, l, "sync", "setup", "--dry-run", "-o", "json", "--audit-file", trail)
	var res synccmd.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 || len(res.Changes) != 2 || res.Applied != nil {
		t.Fatalf("dry run: exit %d, %v: %s %s", code, err, out, e)
	}
	start := time.Now()
	// The seed needs KoP (the KoP suite runs it); this lab's Pulsar has none.
	code, out, e = run(t, l, "sync", "setup", "--yes", "--no-seed", "-o", "json", "--audit-file", trail)
	t.Logf("sync setup: exit %d in %s: %s", code, time.Since(start).Round(time.Millisecond), strings.TrimSpace(e))
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 || len(res.Applied) != 2 || !strings.HasPrefix(res.Verdict, "done and verified") ||
		res.Seed == nil || res.Seed.Skipped != "--no-seed" {
		t.Fatalf("setup: exit %d, %v: %s %s", code, err, out, e)
	}
	if recs := labtest.ReadTrail(t, trail); len(recs) != 2 || recs[0].Action != "policy" || recs[1].Cluster != "wus" {
		t.Fatalf("audit trail: %+v", recs)
	}
	// A commit on scus no longer reaches wus's offsets topic.
	g := labtest.Name("sync-setup")
	p := loader.PartitionFor(g, lab.OffsetsTopicPartitions)
	before := entries(t, l, "wus", p)
	w := labtest.Writer(t, l.Cluster("scus"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, _, err := w.Commit(ctx, kop.OffsetCommit{Group: g, Topic: "persistent://public/default/t", Offset: 7}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second)
	if after := entries(t, l, "wus", p); after != before {
		t.Fatalf("wus's offsets partition %d went from %d to %d entries: still replicated", p, before, after)
	}
	// Set up: nothing more to do; watch --sync no longer refuses (it runs until stopped).
	if code, out, _ = run(t, l, "sync", "setup", "--yes", "--no-seed", "-o", "json", "--audit-file", ""); code != 0 || !strings.Contains(out, "nothing to do") {
		t.Fatalf("setup again: exit %d: %s", code, out)
	}
	if code, _, e = runFor(t, l, 8*time.Second, "watch", "--sync", "--listen", "127.0.0.1:0"); code != 0 || !strings.Contains(e, `"sync":true`) {
		t.Fatalf("watch --sync once set up: exit %d: %s", code, labtest.Tail(e, 5))
	}
	// Undone: replication is back, and what scus wrote meanwhile reaches wus.
	if code, _, e = run(t, l, "sync", "setup", "--undo", "--yes", "--audit-file", trail); code != 0 {
		t.Fatalf("undo: exit %d: %s", code, e)
	}
	if _, _, err := w.Commit(ctx, kop.OffsetCommit{Group: g, Topic: "persistent://public/default/t", Offset: 8}); err != nil {
		t.Fatal(err)
	}
	labtest.WaitReplicated(t, l, "scus", "wus", p)
	if after := entries(t, l, "wus", p); after <= before {
		t.Fatalf("after --undo wus's offsets partition %d holds %d entries (was %d): not replicated", p, after, before)
	}
}
