package offsetsync

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

// committer records what sync sends to one cluster.
type committer struct {
	commits [][]kop.SyncCommit
	deletes []map[string][]int32
	groups  []string // groups deleted
	err     error
	// noOffsetDelete answers OffsetDelete as KoP 3.1 does (UNSUPPORTED_VERSION).
	noOffsetDelete bool
}

func (c *committer) Commit(_ context.Context, group string, cs []kop.SyncCommit) error {
	if c.err != nil {
		return fmt.Errorf("commit group %s: %w", group, c.err)
	}
	c.commits = append(c.commits, cs)
	return nil
}

func (c *committer) Delete(_ context.Context, group string, tps map[string][]int32) error {
	if c.err != nil {
		return fmt.Errorf("delete group %s: %w", group, c.err)
	}
	if c.noOffsetDelete {
		return fmt.Errorf("delete offsets of group %s: %w", group, kerr.UnsupportedVersion)
	}
	c.deletes = append(c.deletes, tps)
	return nil
}

func (c *committer) DeleteGroup(_ context.Context, group string) error {
	if c.err != nil {
		return fmt.Errorf("delete group %s: %w", group, c.err)
	}
	c.groups = append(c.groups, group)
	return nil
}

// lab is a Syncer of clusters whose copies of "orders" (and of any topic in more) are ids,
// with a recording committer each.
type lab struct {
	s    *Syncer
	sent map[string]*committer
}

func newLab(copies map[string][]uint64, names ...string) *lab {
	l := &lab{s: &Syncer{Pool: &align.Pool{Sources: map[string]align.Source{}}, Window: 10 * time.Second}, sent: map[string]*committer{}}
	for _, n := range names {
		l.sent[n] = &committer{}
		l.s.Clusters = append(l.s.Clusters, Cluster{Name: n, KafkaNamespace: "public/default", Committer: l.sent[n]})
		l.s.Pool.Sources[n] = fakes.MemCopies{Topics: map[string][]uint64{"orders": copies[n], "payments": copies[n]}}
	}
	return l
}

func aligned(names ...string) *lab {
	copies := map[string][]uint64{}
	for _, n := range names {
		copies[n] = fakes.Sequence(0, 1000)
	}
	return newLab(copies, names...)
}

// commit is a persisted commit of G: at seconds since 0, metadata md.
func commit(topic string, p int32, offset int64, at int, md string) loader.CommittedOffset {
	return loader.CommittedOffset{Group: "G", Topic: "persistent://public/default/" + topic, Partition: p, Offset: offset,
		Metadata: md, CommitTimestamp: offsetlog.Millis(at * 1000)}
}

func marked(from string, source int64) string { return Mark{From: from, Source: source}.Metadata("") }

func view(members int, cos ...loader.CommittedOffset) View {
	return View{Offsets: cos, Members: members, MembersKnown: true}
}

func (l *lab) sync(t *testing.T, views map[string]View) Result {
	t.Helper()
	return l.s.Sync(context.Background(), "G", views)
}

func noErrors(t *testing.T, res Result) {
	t.Helper()
	for _, err := range res.Errors {
		t.Error(err)
	}
}

func TestSyncAligned(t *testing.T) {
	l := aligned("scus", "wus")
	res := l.sync(t, map[string]View{"scus": view(1, commit("orders", 0, 900, 5, "app")), "wus": view(0)})
	noErrors(t, res)
	want := []kop.SyncCommit{{Topic: "orders", Partition: 0, Offset: 900, Metadata: "kop-offsets-sync:from=scus,source=900,floor=0|app"}}
	if res.Source != "scus" || !reflect.DeepEqual(l.sent["wus"].commits, [][]kop.SyncCommit{want}) {
		t.Fatalf("source %s, commits %+v", res.Source, l.sent["wus"].commits)
	}
	if len(l.sent["scus"].commits) != 0 {
		t.Fatalf("committed on the source: %+v", l.sent["scus"].commits)
	}
	if s := res.Synced; len(s) != 1 || s[0] != (Synced{Cluster: "wus", Topic: "orders", Partition: 0, Source: 900, SourceAt: 5000, Translated: 900}) {
		t.Fatalf("synced %+v", s)
	}
	// Next cycle: wus holds the translation; nothing is sent again.
	res = l.sync(t, map[string]View{"scus": view(1, commit("orders", 0, 900, 5, "app")),
		"wus": view(0, commit("orders", 0, 900, 6, want[0].Metadata))})
	if noErrors(t, res); len(l.sent["wus"].commits) != 1 || len(res.Synced) != 0 {
		t.Fatalf("sent again: %+v", l.sent["wus"].commits)
	}
}

func TestSyncMisaligned(t *testing.T) {
	// scus holds 300 messages of its own first: scus N is wus N-300.
	l := newLab(map[string][]uint64{"scus": append(fakes.Sequence(1<<40, 1<<40+300), fakes.Sequence(0, 6500)...), "wus": fakes.Sequence(0, 6500)}, "scus", "wus")
	for i, o := range []int64{6000, 6100, 6250} {
		res := l.sync(t, map[string]View{"scus": view(1, commit("orders", 0, o, 10+i, "")), "wus": view(0)})
		noErrors(t, res)
		if got := l.sent["wus"].commits[i][0]; got.Offset != o-300 || got.Metadata != marked("scus", o) {
			t.Fatalf("scus %d: committed %+v, want %d", o, got, o-300)
		}
	}
	if st := l.s.Pool.Stats(); st.Builds != 1 {
		t.Fatalf("%d builds for three cycles, want 1 (then incremental)", st.Builds)
	}
	// And back: wus's numbering into scus's.
	res := l.sync(t, map[string]View{"wus": view(1, commit("orders", 0, 6000, 20, "")), "scus": view(0, commit("orders", 0, 6250, 15, ""))})
	if noErrors(t, res); res.Source != "wus" || l.sent["scus"].commits[0][0].Offset != 6300 {
		t.Fatalf("wus 6000 into scus: %+v", l.sent["scus"].commits)
	}
}

// TestSyncNewestIntentWins: the group's own commit on the target newer than the source's is
// never moved back; an older one is no floor against a source moved back below it (a reset
// after the group left the target): the target follows. A source past it moves it forward.
func TestSyncNewestIntentWins(t *testing.T) {
	l := aligned("scus", "wus")
	newer := view(0, commit("orders", 0, 950, 6, ""))
	res := l.sync(t, map[string]View{"scus": view(1, commit("orders", 0, 900, 5, "")), "wus": newer})
	if noErrors(t, res); len(l.sent["wus"].commits) != 0 {
		t.Fatalf("moved wus's own newer 950 back: %+v", l.sent["wus"].commits)
	}
	older := view(0, commit("orders", 0, 950, 1, ""))
	res = l.sync(t, map[string]View{"scus": view(1, commit("orders", 0, 900, 5, "")), "wus": older})
	if noErrors(t, res); len(l.sent["wus"].commits) != 1 || l.sent["wus"].commits[0][0].Offset != 900 {
		t.Fatalf("scus reset to 900 after the group left wus at 950: sent %+v, want 900", l.sent["wus"].commits)
	}
	res = l.sync(t, map[string]View{"scus": view(1, commit("orders", 0, 990, 6, "")), "wus": older})
	if noErrors(t, res); len(l.sent["wus"].commits) != 2 || l.sent["wus"].commits[1][0].Offset != 990 {
		t.Fatalf("scus 990 over wus's 950: %+v", l.sent["wus"].commits)
	}
}

// TestSyncFollowsAReset: the tool's own commit on a target is no floor: a group reset on
// its source (to earliest, by a shift) moves every target back to the reset point.
func TestSyncFollowsAReset(t *testing.T) {
	l := newLab(map[string][]uint64{"scus": append(fakes.Sequence(1<<40, 1<<40+300), fakes.Sequence(0, 1000)...), "wus": fakes.Sequence(0, 1000)}, "scus", "wus")
	res := l.sync(t, map[string]View{"scus": view(0, commit("orders", 0, 600, 5, "")), "wus": view(0)})
	noErrors(t, res)
	first := l.sent["wus"].commits[0][0]
	for i, reset := range []int64{450, 0, 500} { // by a shift, to earliest, then forward again
		res = l.sync(t, map[string]View{"scus": view(0, commit("orders", 0, reset, 10+i, "")), "wus": view(0, commit("orders", 0, first.Offset, 6+i, first.Metadata))})
		noErrors(t, res)
		want := max(reset-300, 0)
		if c := l.sent["wus"].commits; len(c) != i+2 || c[i+1][0].Offset != want {
			t.Fatalf("scus at %d: sent %+v, want %d", reset, c, want)
		}
		first = l.sent["wus"].commits[i+1][0]
	}
}

// TestSyncMarkedNeverSyncedBack: what the tool committed is no source, neither by members
// nor by commit time.
func TestSyncMarkedNeverSyncedBack(t *testing.T) {
	l := aligned("scus", "wus")
	// wus's commit is newer, but it is the tool's: scus (its own, older) is the source.
	views := map[string]View{"scus": view(0, commit("orders", 0, 900, 5, "")), "wus": view(0, commit("orders", 0, 900, 60, marked("scus", 900)))}
	res := l.sync(t, views)
	if noErrors(t, res); res.Source != "scus" || len(l.sent["scus"].commits)+len(l.sent["wus"].commits) != 0 {
		t.Fatalf("source %s; sent scus %+v wus %+v", res.Source, l.sent["scus"].commits, l.sent["wus"].commits)
	}
	// The group now runs on wus and has not committed there yet: nothing goes to scus.
	views["wus"] = view(1, commit("orders", 0, 900, 60, marked("scus", 900)))
	res = l.sync(t, views)
	if noErrors(t, res); res.Source != "wus" || len(l.sent["scus"].commits)+len(l.sent["scus"].deletes) != 0 {
		t.Fatalf("synced the tool's commit back: %+v %+v", l.sent["scus"].commits, l.sent["scus"].deletes)
	}
}

func TestSyncMembersDecideTheSource(t *testing.T) {
	l := aligned("scus", "wus")
	// scus committed later, but the members are on wus.
	res := l.sync(t, map[string]View{"scus": view(0, commit("orders", 0, 700, 50, "")), "wus": view(2, commit("orders", 0, 800, 40, ""))})
	noErrors(t, res)
	if res.Source != "wus" || len(l.sent["scus"].commits) != 1 || l.sent["scus"].commits[0][0].Offset != 800 {
		t.Fatalf("source %s, sent to scus %+v", res.Source, l.sent["scus"].commits)
	}
}

func TestSyncSplitBrain(t *testing.T) {
	for _, tc := range []struct {
		name  string
		views map[string]View
		says  []string
	}{
		{"members on both", map[string]View{"scus": view(1, commit("orders", 0, 900, 5, "")), "wus": view(3, commit("orders", 0, 800, 1, ""))},
			[]string{"scus (1)", "wus (3)"}},
		{"own commits within the window", map[string]View{"scus": view(0, commit("orders", 0, 900, 100, "")), "wus": view(0, commit("orders", 1, 800, 95, ""))},
			[]string{"scus", "wus", "two writers"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := aligned("scus", "wus")
			res := l.sync(t, tc.views)
			if res.SplitBrain == "" || res.Source != "" || len(l.sent["scus"].commits)+len(l.sent["wus"].commits) != 0 {
				t.Fatalf("split brain %q, source %q; sent %+v %+v", res.SplitBrain, res.Source, l.sent["scus"].commits, l.sent["wus"].commits)
			}
			for _, s := range tc.says {
				if !strings.Contains(res.SplitBrain, s) {
					t.Errorf("%q does not say %s", res.SplitBrain, s)
				}
			}
		})
	}
	// Further apart than the window: the newest is the source.
	l := aligned("scus", "wus")
	res := l.sync(t, map[string]View{"scus": view(0, commit("orders", 0, 900, 100, "")), "wus": view(0, commit("orders", 0, 800, 89, ""))})
	if noErrors(t, res); res.SplitBrain != "" || res.Source != "scus" || len(l.sent["wus"].commits) != 1 {
		t.Fatalf("11 s apart: %+v", res)
	}
}

func TestSyncUnknownMembers(t *testing.T) {
	l := aligned("scus", "wus", "eus")
	unknown := View{Offsets: []loader.CommittedOffset{commit("orders", 0, 100, 1, "")}}
	res := l.sync(t, map[string]View{"scus": view(1, commit("orders", 0, 900, 5, "")), "wus": unknown})
	noErrors(t, res)
	if len(l.sent["wus"].commits)+len(l.sent["eus"].commits) != 0 || len(res.Left) != 2 {
		t.Fatalf("wrote where members are unknown: %+v %+v; left %+v", l.sent["wus"].commits, l.sent["eus"].commits, res.Left)
	}
	for _, lf := range res.Left {
		if !strings.Contains(lf.Why, "unknown") || lf.Partition != -1 || strings.Contains(lf.Why, "could be") {
			t.Errorf("left %+v", lf)
		}
	}
	// With no members anywhere known, the unknown cluster could be the source.
	res = l.sync(t, map[string]View{"scus": view(0, commit("orders", 0, 900, 5, "")), "wus": unknown, "eus": view(0)})
	if res.Source != "" || len(l.sent["eus"].commits) != 0 || len(res.Left) != 1 || !strings.Contains(res.Left[0].Why, "could be the group's source") {
		t.Fatalf("synced with the source unknown: %+v; sent %+v", res, l.sent["eus"].commits)
	}
}

// TestSyncMembersOnThreeClusters: the one live cluster is the source whatever the commit
// times; every other cluster follows it.
func TestSyncMembersOnThreeClusters(t *testing.T) {
	l := aligned("scus", "wus", "eus")
	res := l.sync(t, map[string]View{"scus": view(0, commit("orders", 0, 1, 9, "")), "wus": view(0), "eus": view(4, commit("orders", 0, 500, 2, ""))})
	noErrors(t, res)
	if res.Source != "eus" || len(l.sent["wus"].commits) != 1 || len(l.sent["scus"].commits) != 1 || len(l.sent["eus"].commits) != 0 {
		t.Fatalf("source %s; sent wus %+v scus %+v eus %+v", res.Source, l.sent["wus"].commits, l.sent["scus"].commits, l.sent["eus"].commits)
	}
}

func TestSyncDeletionFollowsTheSource(t *testing.T) {
	l := aligned("scus", "wus")
	// scus holds orders[0] only; wus holds orders[1] (synced from scus, gone there),
	// orders[2] (its own) and orders[3] synced from another cluster.
	wus := view(0, commit("orders", 0, 900, 6, marked("scus", 900)), commit("orders", 1, 40, 6, marked("scus", 40)),
		commit("orders", 2, 70, 1, ""), commit("payments", 3, 5, 6, marked("eus", 5)))
	res := l.sync(t, map[string]View{"scus": view(1, commit("orders", 0, 900, 5, "")), "wus": wus})
	noErrors(t, res)
	if d := l.sent["wus"].deletes; !reflect.DeepEqual(d, []map[string][]int32{{"orders": {1}}}) {
		t.Fatalf("deleted %+v, want orders[1] only", d)
	}
	if !reflect.DeepEqual(res.Deleted, []Deleted{{Cluster: "wus", Topic: "orders", Partition: 1}}) {
		t.Fatalf("Deleted %+v", res.Deleted)
	}
	// The group deleted on scus: no own commit anywhere, the marks name scus. wus holds
	// only what scus synced: the group goes there too, in one DeleteGroups.
	l = aligned("scus", "wus")
	wus = view(0, commit("orders", 0, 900, 6, marked("scus", 900)), commit("payments", 1, 40, 6, marked("scus", 40)))
	res = l.sync(t, map[string]View{"scus": view(0), "wus": wus})
	noErrors(t, res)
	if g, d := l.sent["wus"].groups, l.sent["wus"].deletes; res.Source != "scus" || !reflect.DeepEqual(g, []string{"G"}) || d != nil || len(res.Deleted) != 2 {
		t.Fatalf("source %q, groups deleted %v, offsets deleted %+v, Deleted %+v", res.Source, g, d, res.Deleted)
	}
	// The same with a commit on wus that replication brought before setup (history, not
	// the tool's): the group stays, with it; scus's keys go.
	l = aligned("scus", "wus")
	old := commit("payments", 3, 5, 1, "")
	old.Origin = "scus"
	wus = view(0, commit("orders", 0, 900, 6, marked("scus", 900)), commit("payments", 1, 40, 6, marked("scus", 40)), old)
	res = l.sync(t, map[string]View{"scus": view(0), "wus": wus})
	noErrors(t, res)
	if g, d := l.sent["wus"].groups, l.sent["wus"].deletes; g != nil || !reflect.DeepEqual(d, []map[string][]int32{{"orders": {0}, "payments": {1}}}) {
		t.Fatalf("groups deleted %v, offsets deleted %+v", g, d)
	}
}

// TestSyncOffsetDeleteUnsupported: KoP 3.1 answers OffsetDelete UNSUPPORTED_VERSION. A key
// the source dropped while the group goes on is left to KoP's retention on the target: no
// error (it would be retried and logged every cycle), named in Undeleted.
func TestSyncOffsetDeleteUnsupported(t *testing.T) {
	l := aligned("scus", "wus")
	l.sent["wus"].noOffsetDelete = true
	wus := view(0, commit("orders", 0, 900, 6, marked("scus", 900)), commit("orders", 1, 40, 6, marked("scus", 40)))
	res := l.sync(t, map[string]View{"scus": view(1, commit("orders", 0, 900, 5, "")), "wus": wus})
	noErrors(t, res)
	if !reflect.DeepEqual(res.Undeleted, []Deleted{{Cluster: "wus", Topic: "orders", Partition: 1}}) || res.Deleted != nil {
		t.Fatalf("Undeleted %+v, Deleted %+v", res.Undeleted, res.Deleted)
	}
	// Another failure of OffsetDelete is an error, naming the cluster.
	l.sent["wus"].noOffsetDelete, l.sent["wus"].err = false, errors.New("NOT_COORDINATOR")
	res = l.sync(t, map[string]View{"scus": view(1, commit("orders", 0, 900, 5, "")), "wus": wus})
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Error(), "cluster wus") {
		t.Fatalf("errors %v", res.Errors)
	}
}

// TestSyncTranslationErrorLeavesTheKey: a topic whose copies cannot be read is named; the
// other keys are committed, together.
func TestSyncTranslationErrorLeavesTheKey(t *testing.T) {
	l := aligned("scus", "wus")
	res := l.sync(t, map[string]View{"scus": view(1, commit("orders", 0, 900, 5, ""), commit("gone", 2, 10, 5, ""), commit("payments", 1, 30, 5, "")),
		"wus": view(0)})
	if len(res.Errors) != 1 {
		t.Fatalf("errors %v", res.Errors)
	}
	for _, s := range []string{"cluster wus", "group G", "gone[2]"} {
		if !strings.Contains(res.Errors[0].Error(), s) {
			t.Errorf("%q does not name %s", res.Errors[0], s)
		}
	}
	if c := l.sent["wus"].commits; len(c) != 1 || len(c[0]) != 2 || c[0][0].Topic != "orders" || c[0][1].Topic != "payments" {
		t.Fatalf("commits %+v, want orders and payments in one", c)
	}
}

// TestSyncCoalesces: every key of a group goes to a target in one Commit, one per target.
func TestSyncCoalesces(t *testing.T) {
	l := aligned("scus", "wus", "eus")
	var cos []loader.CommittedOffset
	for p := range int32(6) {
		cos = append(cos, commit("orders", p, int64(100+p), 5, ""))
	}
	res := l.sync(t, map[string]View{"scus": view(1, cos...), "wus": view(0), "eus": view(0, commit("orders", 3, 103, 1, ""))})
	noErrors(t, res)
	if w, e := l.sent["wus"].commits, l.sent["eus"].commits; len(w) != 1 || len(w[0]) != 6 || len(e) != 1 || len(e[0]) != 5 {
		t.Fatalf("wus %+v\neus %+v", w, e)
	}
	if len(res.Synced) != 11 {
		t.Fatalf("synced %d keys, want 11", len(res.Synced))
	}
}

// TestSyncCommitRefused: the target's error is reported with its cluster; nothing counts as
// synced there, the other target is.
func TestSyncCommitRefused(t *testing.T) {
	l := aligned("scus", "wus", "eus")
	l.sent["wus"].err = errors.New("UNKNOWN_MEMBER_ID")
	res := l.sync(t, map[string]View{"scus": view(1, commit("orders", 0, 900, 5, "")), "wus": view(0), "eus": view(0)})
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Error(), "cluster wus") || !strings.Contains(res.Errors[0].Error(), "group G") {
		t.Fatalf("errors %v", res.Errors)
	}
	if len(res.Synced) != 1 || res.Synced[0].Cluster != "eus" {
		t.Fatalf("synced %+v", res.Synced)
	}
}

// TestSyncFailback: scus was the primary and wrote 300 messages alone; the group's own last
// commit there is 1100 (shared message 800). Live on wus now at 900: scus gets 1200, not
// its first message (where the no-skip rule alone would send it).
func TestSyncFailback(t *testing.T) {
	shared := fakes.Sequence(0, 1000)
	l := newLab(map[string][]uint64{"scus": append(fakes.Sequence(1<<40, 1<<40+300), shared...), "wus": shared}, "scus", "wus")
	res := l.sync(t, map[string]View{"wus": view(1, commit("orders", 0, 900, 50, "")), "scus": view(0, commit("orders", 0, 1100, 10, ""))})
	noErrors(t, res)
	if c := l.sent["scus"].commits; len(c) != 1 || c[0][0].Offset != 1200 {
		t.Fatalf("commits to scus %+v, want 1200", c)
	}
	// The next sync floors on the floor the commit carried: still never below it.
	md := l.sent["scus"].commits[0][0].Metadata
	if m, _, _ := ParseMark(md); m.Floor != 1100 {
		t.Fatalf("the commit's mark %q, want floor 1100", md)
	}
	res = l.sync(t, map[string]View{"wus": view(1, commit("orders", 0, 950, 51, "")), "scus": view(0, commit("orders", 0, 1200, 50, md))})
	noErrors(t, res)
	if c := l.sent["scus"].commits; len(c) != 2 || c[1][0].Offset != 1250 {
		t.Fatalf("commits to scus %+v, want 1250 next", c)
	}
	// A mark of a release before floors were carried floors on its own number.
	legacy := "kop-offsets-sync:from=wus,source=950|"
	res = l.sync(t, map[string]View{"wus": view(1, commit("orders", 0, 960, 52, "")), "scus": view(0, commit("orders", 0, 1250, 51, legacy))})
	noErrors(t, res)
	if c := l.sent["scus"].commits; len(c) != 3 || c[2][0].Offset != 1260 {
		t.Fatalf("commits to scus %+v, want 1260 over a mark without floor", c)
	}
	// The group is reset on wus to 400, then to its earliest: scus follows it back to the
	// same messages (700 is wus's 400 there); the 300 messages scus wrote alone, below the
	// group's own position there, stay consumed: the group resumes at the reset point.
	for i, c := range []struct{ reset, want int64 }{{400, 700}, {0, 300}} {
		res = l.sync(t, map[string]View{"wus": view(1, commit("orders", 0, c.reset, 53+i, "")), "scus": view(0, commit("orders", 0, 1260, 52, l.sent["scus"].commits[2][0].Metadata))})
		noErrors(t, res)
		if got := l.sent["scus"].commits; len(got) != 4+i || got[3+i][0].Offset != c.want {
			t.Fatalf("wus reset to %d: commits to scus %+v, want %d", c.reset, got, c.want)
		}
	}
}

// TestSyncBehind: wus holds only part of what the group consumed on scus; the commit is its
// log end, then rises as the messages arrive.
func TestSyncBehind(t *testing.T) {
	l := newLab(map[string][]uint64{"scus": fakes.Sequence(0, 100), "wus": fakes.Sequence(0, 60)}, "scus", "wus")
	scus := view(1, commit("orders", 0, 100, 5, ""))
	res := l.sync(t, map[string]View{"scus": scus, "wus": view(0)})
	if noErrors(t, res); len(res.Synced) != 1 || !res.Synced[0].Behind || res.Synced[0].Translated != 60 {
		t.Fatalf("synced %+v, want 60, behind", res.Synced)
	}
	l.s.Pool.Sources["wus"].(fakes.MemCopies).Topics["orders"] = fakes.Sequence(0, 100) // the Tracker's copy shares the map
	res = l.sync(t, map[string]View{"scus": scus, "wus": view(0, commit("orders", 0, 60, 6, marked("scus", 100)))})
	if noErrors(t, res); len(res.Synced) != 1 || res.Synced[0].Behind || res.Synced[0].Translated != 100 {
		t.Fatalf("after the data arrived: synced %+v, want 100", res.Synced)
	}
}

// TestSyncReplicatedCommits: commits replicated before sync setup are history (never a
// source, never the last writer; on a target the own commit below is the floor); the tool's
// own commit coming back by replication means the offsets topic replicates: nothing synced.
func TestSyncReplicatedCommits(t *testing.T) {
	l := newLab(map[string][]uint64{"scus": append(fakes.Sequence(1<<40, 1<<40+300), fakes.Sequence(0, 6500)...), "wus": fakes.Sequence(0, 6500)}, "scus", "wus")
	old := commit("orders", 0, 5000, 9, "") // scus's 5000, replicated to wus before setup
	old.Origin = "scus"
	// scus, no members, commits 6000 after: the source; wus's replicated 5000 (newer, a
	// replicated number) is no writer and no floor.
	res := l.sync(t, map[string]View{"scus": view(0, commit("orders", 0, 6000, 5, "")), "wus": view(0, old)})
	noErrors(t, res)
	if res.Source != "scus" || len(l.sent["wus"].commits) != 1 || l.sent["wus"].commits[0][0].Offset != 5700 {
		t.Fatalf("after setup: %+v, sent %+v", res, l.sent["wus"].commits)
	}
	// A replicated commit on the source is not synced (it counts in the target's numbering).
	back := commit("payments", 0, 100, 4, "")
	back.Origin = "wus"
	res = l.sync(t, map[string]View{"scus": view(1, commit("orders", 0, 6000, 5, ""), back), "wus": view(0, commit("orders", 0, 5700, 6, marked("scus", 6000)))})
	if noErrors(t, res); len(res.Synced) != 0 {
		t.Fatalf("synced a replicated commit: %+v", res.Synced)
	}
	// The tool's commit replicated back while scus was followed: the offsets topic
	// replicates; nothing is written.
	rep := commit("payments", 0, 5700, 6, marked("scus", 6000))
	rep.Origin = "wus"
	live := view(1, commit("orders", 0, 6100, 7, ""), rep)
	live.Replicating = true
	res = l.sync(t, map[string]View{"scus": live, "wus": view(0, commit("orders", 0, 5700, 6, marked("scus", 6000)))})
	if len(l.sent["wus"].commits) != 1 || res.Source != "" || !strings.Contains(res.Replicated, "scus holds the tool's commit replicated back from wus (persistent://public/default/payments") {
		t.Fatalf("synced beside replication: %+v, sent %+v", res, l.sent["wus"].commits)
	}
	// The same commit in the replay only (an earlier replication phase, sync setup --undo then
	// setup again): history; the group is synced.
	res = l.sync(t, map[string]View{"scus": view(1, commit("orders", 0, 6100, 7, ""), rep), "wus": view(0, commit("orders", 0, 5700, 6, marked("scus", 6000)))})
	noErrors(t, res)
	if res.Replicated != "" || res.Source != "scus" || len(l.sent["wus"].commits) != 2 || l.sent["wus"].commits[1][0].Offset != 5800 {
		t.Fatalf("history refused or not synced: %+v, sent %+v", res, l.sent["wus"].commits)
	}
}

// TestSyncCommitsOverAReplicatedEqual: wus holds scus's commit by replication from before
// setup, the same number as the translation (aligned): KoP on wus serves only what it loaded,
// so the translation is committed through it all the same. Once committed (marked), it is
// not sent again.
func TestSyncCommitsOverAReplicatedEqual(t *testing.T) {
	l := aligned("scus", "wus")
	repl := commit("orders", 0, 1, 1, "")
	repl.Origin = "scus"
	res := l.sync(t, map[string]View{"scus": view(0, commit("orders", 0, 1, 1, "")), "wus": view(0, repl)})
	noErrors(t, res)
	if len(l.sent["wus"].commits) != 1 || l.sent["wus"].commits[0][0].Offset != 1 {
		t.Fatalf("sent to wus %+v, want the translation 1 committed", l.sent["wus"].commits)
	}
	res = l.sync(t, map[string]View{"scus": view(0, commit("orders", 0, 1, 1, "")), "wus": view(0, commit("orders", 0, 1, 2, marked("scus", 1)))})
	noErrors(t, res)
	if len(l.sent["wus"].commits) != 1 {
		t.Fatalf("the tool's own commit of the same number sent again: %+v", l.sent["wus"].commits)
	}
}

// TestWarmReadsWhatPlansTranslate: Warm reads, for each key, up to the highest own offset
// any group of the cycle holds on a cluster, into every other cluster's numbering; the
// tool's own (marked) commits are not read for. The Plans that follow read nothing.
func TestWarmReadsWhatPlansTranslate(t *testing.T) {
	l := newLab(map[string][]uint64{"scus": append(fakes.Sequence(1<<40, 1<<40+300), fakes.Sequence(0, 6500)...), "wus": fakes.Sequence(0, 6500)}, "scus", "wus")
	groups := map[string]map[string]View{}
	for i, o := range []int64{6000, 6200, 6100} {
		groups[fmt.Sprintf("G%d", i)] = map[string]View{
			"scus": view(1, commit("orders", 0, o, 10, "")),
			"wus":  view(0, commit("orders", 0, o-400, 9, marked("scus", o-100))),
		}
	}
	ctx := context.Background()
	l.s.Warm(ctx, groups, 4)
	read := l.s.Pool.Stats()
	if read.Builds != 1 || l.s.Pool.Trackers() != 1 {
		t.Fatalf("%d Trackers, %d builds; want one scus→wus Tracker of orders[0] (the marked commits on wus are no source)", l.s.Pool.Trackers(), read.Builds)
	}
	for g, views := range groups {
		res := l.s.Sync(ctx, g, views)
		noErrors(t, res)
		if len(res.Synced) != 1 || res.Synced[0].Translated != res.Synced[0].Source-300 {
			t.Fatalf("%s: synced %+v", g, res.Synced)
		}
	}
	if after := l.s.Pool.Stats(); after.SourceReads != read.SourceReads || after.TargetReads != read.TargetReads {
		t.Errorf("plans after Warm read %d+%d messages, want none", after.SourceReads-read.SourceReads, after.TargetReads-read.TargetReads)
	}
}

// TestSyncAfterAKeptTranslation: wus kept a translation of scus's commit (watch
// --keep-translations), then a failover wrote its record over it, then the sync committed the
// same number (marked). The kept translation is history on those keys (Kept.Current false):
// the tool's commit is not sent again, and the group's own commit on wus after it is synced
// to scus (issue 51: the same commit was sent every cycle after a failover).
func TestSyncAfterAKeptTranslation(t *testing.T) {
	l := aligned("scus", "wus")
	history := &loader.Kept{From: "scus", Source: 1995, Offset: 1995, At: 4000}
	failedOver := commit("orders", 0, 1995, 4, "")
	failedOver.Kept = history
	res := l.sync(t, map[string]View{"scus": view(0, commit("orders", 0, 1995, 4, "")), "wus": view(0, failedOver)})
	noErrors(t, res)
	if len(l.sent["wus"].commits) != 0 {
		t.Fatalf("the failover's record is the translation already; sent %+v", l.sent["wus"].commits)
	}
	synced := commit("orders", 0, 1995, 6, marked("scus", 1995))
	synced.Kept = history
	for range 3 {
		res = l.sync(t, map[string]View{"scus": view(0, commit("orders", 0, 1995, 4, "")), "wus": view(0, synced)})
		noErrors(t, res)
	}
	if len(l.sent["wus"].commits) != 0 {
		t.Fatalf("the tool's own commit sent again %d times: %+v", len(l.sent["wus"].commits), l.sent["wus"].commits)
	}
	own := commit("orders", 0, 2100, 8, "app")
	own.Kept = history
	res = l.sync(t, map[string]View{"scus": view(0, commit("orders", 0, 1995, 4, "")), "wus": view(1, own)})
	noErrors(t, res)
	if res.Source != "wus" || len(l.sent["scus"].commits) != 1 || l.sent["scus"].commits[0][0].Offset != 2100 {
		t.Fatalf("the group's own commit on wus after a kept translation: source %q, sent to scus %+v", res.Source, l.sent["scus"].commits)
	}
	// A kept translation that is still the key's last word is not the group's own.
	kept := commit("orders", 0, 1995, 4, "")
	kept.Kept = &loader.Kept{From: "scus", Source: 1995, Offset: 1995, At: 4000, Current: true}
	res = l.sync(t, map[string]View{"scus": view(0), "wus": view(0, kept)})
	if noErrors(t, res); len(l.sent["scus"].commits) != 1 {
		t.Fatalf("a current kept translation synced as the group's own: %+v", l.sent["scus"].commits)
	}
}
