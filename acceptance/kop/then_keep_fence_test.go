//go:build kop

package kop

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// TestKeepFencedAgainstANewerCommit is issue 51's race on real KoP: the keeper decided on
// scus's 500, and its write (held back here) landed on wus after scus's 10900 had replicated
// and wus's bundle had been unloaded. KoP loads the last entry of a key, so wus then serves
// 500 after any load: the tool made wus's persisted offset older. A second group shows the
// same over the group's own newer commit on wus. watch --keep-translations, started on that
// state, keeps the hidden commits (scus's 10900 translated, the group's own written back as
// it was), and a load of wus serves the newest commit of each again.
func TestKeepFencedAgainstANewerCommit(t *testing.T) {
	topic, group, part := settledGroup(t, "keep-fence")
	_, own, ownPart := settledGroup(t, "keep-fence-own")
	forgetGroups(t, group, own)
	scus, wus := theLab.Cluster("scus"), theLab.Cluster("wus")
	labtest.Produce(t, scus, topic, 11000)
	labtest.WaitEndOffset(t, wus, topic, 11000)

	// The keeper's write of a translation it decided on, landed late: what Keeper.Keep
	// writes (kop.Writer.Keep: the mark, the source's commit time, replication disabled).
	late := func(g string, offset int64, committed time.Time) {
		t.Helper()
		c := kop.OffsetCommit{Group: g, Topic: "persistent://public/default/" + topic, Offset: offset, CommitTime: committed, NoExpiry: true}
		mark := loader.KeptMark{From: "scus", Sources: []int64{offset}, At: time.Now()}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, _, err := labtest.Writer(t, wus).Keep(ctx, []kop.OffsetCommit{c}, mark); err != nil {
			t.Fatal(err)
		}
	}
	// Group 1: scus 500, decided; scus 10900 replicates; wus's bundle unloaded; the kept 500
	// lands.
	labtest.Commit(t, theLab, "scus", group, topic, 500)
	decided := time.Now() // after KoP stamped the 500: the kept 500 is older than the 10900
	labtest.WaitReplicated(t, theLab, "scus", "wus", part)
	time.Sleep(20 * time.Millisecond)
	labtest.Commit(t, theLab, "scus", group, topic, 10900)
	labtest.WaitReplicated(t, theLab, "scus", "wus", part)
	labtest.LoadOn(t, theLab, "wus", group)
	late(group, 500, decided)
	// Group 2: scus 600 replicated, the group's own 700 on wus, then the kept 600 lands.
	labtest.Commit(t, theLab, "scus", own, topic, 600)
	decidedOwn := time.Now()
	labtest.WaitReplicated(t, theLab, "scus", "wus", ownPart)
	time.Sleep(20 * time.Millisecond)
	labtest.Commit(t, theLab, "wus", own, topic, 700)
	late(own, 600, decidedOwn)

	// The race as the issue saw it: after a load, wus serves the older values.
	labtest.LoadOn(t, theLab, "wus", group)
	labtest.LoadOn(t, theLab, "wus", own)
	labtest.WantServed(t, theLab, "wus", group, topic, "500", "the late kept 500 did not land last: wus serves %s")
	labtest.WantServed(t, theLab, "wus", own, topic, "600", "the late kept 600 did not land last: wus serves %s")
	// check names it (issue 51 item 4): KoP would load a write older than a commit it hid.
	for _, g := range []string{group, own} {
		rep, code := quietly[survey.Report](t, "--timeout", "10s", "check", "-o", "json", "--group", g)
		if len(rep.Rows) != 1 || code != 1 || rep.Rows[0].Cell("wus").Status != verdict.StatusOverwritten {
			t.Fatalf("check of %s: exit %d, rows %+v, want wus overwritten", g, code, rep.Rows)
		}
		t.Logf("check of %s before watch: wus %s: %s", g, rep.Rows[0].Cell("wus").Status, rep.Rows[0].Cell("wus").Detail)
	}

	listen := labtest.FreeListen(t)
	stop := cli.StartWatchArgs(t, listen, 30, "--keep-translations", "--cluster", "wus", "--interval", "2s", "--group", group, "--group", own)
	keptCount(t, listen, "wus", 2)
	if code, stopped := stop(); !stopped || code != 0 {
		t.Fatalf("watch: exit %d (stopped %v)", code, stopped)
	}
	labtest.LoadOn(t, theLab, "wus", group)
	labtest.LoadOn(t, theLab, "wus", own)
	labtest.WantServed(t, theLab, "wus", group, topic, "10900", "after watch kept the hidden commit, a load of wus serves %s, want scus's 10900")
	labtest.WantServed(t, theLab, "wus", own, topic, "700", "after watch wrote the group's own commit back, a load of wus serves %s, want its own 700")
	t.Logf("wus serves 10900 (scus's newest) and 700 (the group's own) after a load: the late kept translations are no longer the last word")
}

// forgetGroups deletes groups on every cluster when the test ends (before their Settle's
// reload). A group that moved keeps an own commit on one cluster newer than the other's; when
// a replicator sends the other's older commit again (after a pause it resends from its
// mark-delete position, docs/kop-facts.md), the offsets topic ends on the older commit, and
// every later reload of that bundle (another test's repair or failover) is rightly refused.
func forgetGroups(t *testing.T, groups ...string) {
	t.Cleanup(func() {
		for _, c := range theLab.Clusters {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			resp, err := kafkaAdmin(t, c.Name).DeleteGroups(ctx, groups...)
			cancel()
			if err != nil {
				t.Errorf("%s: delete groups %v: %v", c.Name, groups, err)
				continue
			}
			for g, r := range resp {
				if r.Err != nil && !errors.Is(r.Err, kerr.GroupIDNotFound) {
					t.Errorf("%s: delete group %s: %v", c.Name, g, r.Err)
				}
			}
		}
	})
}
