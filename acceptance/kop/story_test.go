//go:build kop

package kop

import (
	"slices"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest/labcli"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// TestUserStory is the user's story, step by step, on two KoP clusters with real Kafka
// clients: 10900 records on scus; the group commits 500; wus loads it; the group commits
// 10900 on scus; wus still serves 500 while its offsets topic holds 10900; check names it
// STALE_CACHE; repair fixes it; a consumer of the group on wus (franz-go) starts at 10900; a
// second repair does nothing.
func TestUserStory(t *testing.T) { story(t, consumeFirst) }

// TestUserStoryJavaConsumer is the same story with the user's kind of consumer at the end: the
// Java kafka-clients 2.8 (lab/java/FirstRecord.java, resolved through lab/pom.xml).
func TestUserStoryJavaConsumer(t *testing.T) { story(t, javaConsumeFirst) }

// story runs the user's story; consume joins the group on a cluster and returns the offset
// of the first record it gets.
func story(t *testing.T, consume func(t *testing.T, cluster, group, topic string) int64) {
	topic := labtest.NewTopic(t, theLab, "story")
	group := labtest.Name("story-group")
	part := loader.PartitionFor(group, lab.OffsetsTopicPartitions)
	t.Logf("topic %s, group %s (offsets partition %d)", topic, group, part)

	// 1. 10900 records on scus, replicated to wus.
	labtest.Produce(t, theLab.Cluster("scus"), topic, 10900)
	labtest.WaitEndOffset(t, theLab.Cluster("scus"), topic, 10900)
	labtest.WaitEndOffset(t, theLab.Cluster("wus"), topic, 10900)

	// 2. The group commits 500 on scus; replicated; wus loads it (its bundle taken again).
	labtest.Commit(t, theLab, "scus", group, topic, 500)
	labtest.WaitReplicated(t, theLab, "scus", "wus", part)
	labtest.LoadOn(t, theLab, "wus", group)
	labtest.WantServed(t, theLab, "wus", group, topic, "500", "wus serves %s after loading, want 500")

	// 3. The group consumes to the end on scus and commits 10900; replicated.
	labtest.Commit(t, theLab, "scus", group, topic, 10900)
	labtest.WaitReplicated(t, theLab, "scus", "wus", part)

	// 4. wus still serves 500, while its offsets topic holds 10900.
	labtest.WantServed(t, theLab, "wus", group, topic, "500", "wus serves %s after the replicated commit, want the stale 500")
	labtest.WantServed(t, theLab, "scus", group, topic, "10900", "scus serves %s, want 10900")
	rep, code := cli.Check(t, "--persisted-only", "--group", group)
	r := labcli.Row(t, rep, group)
	if code != 0 || labtest.Val(r.Cell("wus").Persisted) != "10900" || labtest.Val(r.Cell("scus").Persisted) != "10900" {
		t.Fatalf("persisted: exit %d, %+v", code, r.Cells)
	}

	// 5. check names it.
	rep, code = cli.Check(t, "--group", group)
	r = labcli.Row(t, rep, group)
	w, s := r.Cell("wus"), r.Cell("scus")
	if code != 1 || r.Status != verdict.StatusStaleCache || w.Status != verdict.StatusStaleCache ||
		labtest.Val(w.Cached) != "500" || labtest.Val(w.Persisted) != "10900" || s.Status != verdict.StatusOK || labtest.Val(s.Cached) != "10900" {
		t.Fatalf("check: exit %d, row %s, wus %+v, scus %+v", code, r.Status, w, s)
	}

	// 6. repair --cluster wus --yes fixes it.
	code, d := cli.Repair(t, "--cluster", "wus", "--yes")
	if code != 0 || len(d.Clusters) != 1 || d.Clusters[0].Execution == nil || len(d.Clusters[0].Execution.Unloaded) != 1 ||
		d.After == nil || len(d.After.Stale) != 0 {
		t.Fatalf("repair: exit %d, %+v", code, d)
	}
	if len(d.Stale) != 1 || d.Stale[0].Group != group || d.Stale[0].Cluster != "wus" {
		t.Errorf("repair found stale %+v, want only %s on wus (a lab stale elsewhere: restart it fresh)", d.Stale, group)
	}
	if !slices.Contains(d.Clusters[0].Groups, group) {
		t.Errorf("repair reloaded groups %v, not %s", d.Clusters[0].Groups, group)
	}
	labtest.WantServed(t, theLab, "wus", group, topic, "10900", "wus serves %s after repair, want 10900")
	rep, code = cli.Check(t, "--group", group)
	r = labcli.Row(t, rep, group)
	if code != 0 || r.Status != verdict.StatusOK || labtest.Val(r.Cell("wus").Cached) != "10900" {
		t.Fatalf("check after repair: exit %d, %+v", code, r)
	}

	// 7. A consumer of the group on wus starts at 10900: one more record there to read.
	labtest.Produce(t, theLab.Cluster("wus"), topic, 1)
	if first := consume(t, "wus", group, topic); first != 10900 {
		t.Fatalf("the group's consumer on wus started at %d, want 10900", first)
	}

	// 8. A second repair does nothing.
	code, d = cli.Repair(t, "--cluster", "wus", "--yes")
	if code != 0 || len(d.Stale) != 0 {
		t.Fatalf("second repair: exit %d, stale %+v", code, d.Stale)
	}
	for _, c := range d.Clusters {
		if c.Execution != nil && len(c.Execution.Unloaded) > 0 {
			t.Errorf("second repair unloaded %v on %s", c.Execution.Unloaded, c.Cluster)
		}
	}
}
