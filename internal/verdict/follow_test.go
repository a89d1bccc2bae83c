package verdict

import (
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// TestClassifyFollow is the rule of a sync or kept deployment: every cluster follows the
// translation of the group's newest own commit (issue 51 item 4).
func TestClassifyFollow(t *testing.T) {
	p := func(v int64) *int64 { return &v }
	const now = int64(1_700_000_000_000)
	minute := time.Minute.Milliseconds()
	own := func(v, at int64) ClusterObservation {
		return ClusterObservation{Persisted: p(v), Now: now, Cached: CachedOffsets{State: CacheNotChecked}, Follow: FollowObservation{Writer: WriterGroup, CommitAt: at}}
	}
	tool := func(w Writer, v, at int64, from string, source int64, in map[string]int64) ClusterObservation {
		return ClusterObservation{Persisted: p(v), Now: now, Cached: CachedOffsets{State: CacheNotChecked}, Follow: FollowObservation{Writer: w, CommitAt: at, From: from, Source: source, In: in}}
	}
	withIn := func(ob ClusterObservation, in map[string]int64) ClusterObservation { ob.Follow.In = in; return ob }
	backlog := func(ob ClusterObservation, from string) ClusterObservation {
		ob.Inbound = map[string]Inbound{from: {Backlog: 2, Connected: true}}
		return ob
	}
	type want struct{ row, scus, wus Status }
	for _, tc := range []struct {
		name      string
		scus, wus ClusterObservation
		want      want
		home      string
	}{
		// The failure: scus reset to 0 (misaligned copies, 300 messages on scus
		// alone), wus kept serving the old translation of 600; check said ok on both.
		{"reset on scus, wus still on the old translation: ahead",
			own(0, now-10*minute), tool(WriterSync, 300, now-20*minute, "scus", 600, map[string]int64{"scus": 0}),
			want{StatusAhead, StatusOK, StatusAhead}, "scus"},
		{"aligned sync", own(600, now-minute), tool(WriterSync, 600, now-minute+20, "scus", 600, map[string]int64{"scus": 600}),
			want{StatusOK, StatusOK, StatusOK}, "scus"},
		{"misaligned sync", own(600, now-minute), tool(WriterSync, 300, now-minute+20, "scus", 600, map[string]int64{"scus": 300}),
			want{StatusOK, StatusOK, StatusOK}, "scus"},
		{"kept translation (its commit time is the source's)", own(600, now-minute), tool(WriterKeeper, 300, now-minute, "scus", 600, map[string]int64{"scus": 300}),
			want{StatusOK, StatusOK, StatusOK}, "scus"},
		{"homed on wus, scus synced", tool(WriterSync, 650, now-minute+20, "wus", 350, map[string]int64{"wus": 650}), own(350, now-minute),
			want{StatusOK, StatusOK, StatusOK}, "wus"},
		{"homed on wus, reset there, scus not followed: ahead",
			tool(WriterSync, 650, now-9*minute, "wus", 350, map[string]int64{"wus": 300}), own(0, now-5*minute),
			want{StatusAhead, StatusAhead, StatusOK}, "wus"},
		{"the target's own newer commit is the group's newest word, not ahead",
			tool(WriterSync, 750, now-minute+20, "wus", 450, map[string]int64{"wus": 750}), withIn(own(450, now-minute), map[string]int64{"scus": 300}),
			want{StatusOK, StatusOK, StatusOK}, "wus"},
		{"scus committed after it was read, wus already followed that commit",
			own(600, now-minute), tool(WriterSync, 350, now-minute+500, "scus", 700, map[string]int64{"scus": 300}),
			want{StatusOK, StatusOK, StatusOK}, "scus"},
		{"behind within the grace: the sync's latency",
			own(700, now-10_000), tool(WriterSync, 300, now-minute, "scus", 600, map[string]int64{"scus": 400}),
			want{StatusOK, StatusOK, StatusOK}, "scus"},
		{"behind past the grace: sync_lag",
			own(700, now-5*minute), tool(WriterSync, 300, now-6*minute, "scus", 600, map[string]int64{"scus": 400}),
			want{StatusSyncLag, StatusOK, StatusSyncLag}, "scus"},
		{"behind past the grace with a backlog from the home: replication_lag (kept deployment)",
			own(700, now-5*minute), backlog(tool(WriterKeeper, 300, now-6*minute, "scus", 600, map[string]int64{"scus": 400}), "scus"),
			want{StatusReplicationLag, StatusOK, StatusReplicationLag}, "scus"},
		{"a replicated value is misaligned's to judge",
			own(600, now-minute), ClusterObservation{Persisted: p(600), Translated: p(300), Now: now, Cached: CachedOffsets{State: CacheNotChecked}, Follow: FollowObservation{Writer: WriterReplica}},
			want{StatusMisaligned, StatusOK, StatusMisaligned}, ""},
		{"no tool's write on the row: the rules of replication",
			own(600, now-minute), withIn(own(300, now-2*minute), map[string]int64{"scus": 300}),
			want{StatusDiverged, StatusOK, StatusDiverged}, ""},
		{"two own commits of the same millisecond: no home",
			own(600, now-minute), withIn(own(300, now-minute), map[string]int64{"scus": 300}),
			want{StatusDiverged, StatusOK, StatusDiverged}, ""},
		{"translation unknown: compared with the home's value",
			own(0, now-minute), tool(WriterSync, 300, now-2*minute, "scus", 600, nil),
			want{StatusDiverged, StatusOK, StatusDiverged}, "scus"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.scus.Cluster, tc.wus.Cluster = "scus", "wus"
			d := ClassifyDrift(DriftInput{Clusters: []ClusterObservation{tc.scus, tc.wus}})
			if got := (want{d.Status, d.Clusters[0], d.Clusters[1]}); got != tc.want || d.Home != tc.home {
				t.Errorf("got %+v home %q, want %+v home %q", got, d.Home, tc.want, tc.home)
			}
		})
	}
}

// TestClassifyFollowOlderOwn: a cluster whose value is the group's own older commit follows
// the newest one too (eus holds the tool's write: a sync deployment).
func TestClassifyFollowOlderOwn(t *testing.T) {
	p := func(v int64) *int64 { return &v }
	const now = int64(1_700_000_000_000)
	minute := time.Minute.Milliseconds()
	wus := ClusterObservation{Cluster: "wus", Persisted: p(0), Now: now, Cached: CachedOffsets{State: CacheNotChecked}, Follow: FollowObservation{Writer: WriterGroup, CommitAt: now - 5*minute}}
	eus := ClusterObservation{Cluster: "eus", Persisted: p(0), Now: now, Cached: CachedOffsets{State: CacheNotChecked}, Follow: FollowObservation{Writer: WriterSync, CommitAt: now - 5*minute + 9, From: "wus", Source: 0, In: map[string]int64{"wus": 0}}}
	for _, tc := range []struct {
		scus int64
		want Status
	}{{600, StatusAhead}, {100, StatusSyncLag}, {300, StatusOK}} {
		scus := ClusterObservation{Cluster: "scus", Persisted: p(tc.scus), Now: now, Cached: CachedOffsets{State: CacheNotChecked}, Follow: FollowObservation{Writer: WriterGroup, CommitAt: now - 10*minute, In: map[string]int64{"wus": 300}}}
		d := ClassifyDrift(DriftInput{Clusters: []ClusterObservation{scus, wus, eus}})
		if d.Clusters[0] != tc.want || d.Clusters[1] != StatusOK || d.Clusters[2] != StatusOK || d.Home != "wus" {
			t.Errorf("scus own %d: %+v, want scus %s", tc.scus, d, tc.want)
		}
	}
	// Within the grace the same commit is the sync's latency.
	scus := ClusterObservation{Cluster: "scus", Persisted: p(100), Now: now, Cached: CachedOffsets{State: CacheNotChecked}, Follow: FollowObservation{Writer: WriterGroup, CommitAt: now - 10*minute, In: map[string]int64{"wus": 300}}}
	if d := ClassifyDrift(DriftInput{Clusters: []ClusterObservation{scus, wus, eus}, SyncGrace: 10 * minute}); d.Clusters[0] != StatusOK {
		t.Errorf("within a 10-minute grace: %+v", d)
	}
}

// TestClassifyOverwritten: a kept translation that landed after a newer commit is
// overwritten, before cache_ahead (KoP may still serve the newer commit).
func TestClassifyOverwritten(t *testing.T) {
	p := func(v int64) *int64 { return &v }
	ob := ClusterObservation{Cluster: "wus", Persisted: p(300), Cached: CachedOffsets{State: CacheAnswered, Offset: p(450)},
		Newer: &loader.Newer{Origin: "scus", Offset: 750, CommitTimestamp: 1}}
	if d := ClassifyDrift(DriftInput{Clusters: []ClusterObservation{ob}}); d.Status != StatusOverwritten {
		t.Errorf("%+v", d)
	}
	ob.Newer = nil
	if d := ClassifyDrift(DriftInput{Clusters: []ClusterObservation{ob}}); d.Status != StatusCacheAhead {
		t.Errorf("without Newer: %+v", d)
	}
}
