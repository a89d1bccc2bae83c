package verdict

import (
	"testing"
)

func TestClassifyDrift(t *testing.T) {
	p := func(v int64) *int64 { return &v }
	answered := func(v *int64) CachedOffsets { return CachedOffsets{State: CacheAnswered, Offset: v} }
	notChecked := CachedOffsets{State: CacheNotChecked}
	lagFromScus := map[string]Inbound{"scus": {Backlog: 3, Connected: true}}

	type want struct {
		row  Status
		scus Status
		wus  Status
	}
	tests := []struct {
		name   string
		source string
		scus   ClusterObservation
		wus    ClusterObservation
		want   want
	}{
		{"all equal", "",
			ClusterObservation{Persisted: p(10900), Cached: answered(p(10900))},
			ClusterObservation{Persisted: p(10900), Cached: answered(p(10900))},
			want{StatusOK, StatusOK, StatusOK}},
		{"user's case: wus cache behind its own topic", "",
			ClusterObservation{Persisted: p(10900), Cached: answered(p(10900))},
			ClusterObservation{Persisted: p(10900), Cached: answered(p(500))},
			want{StatusStaleCache, StatusOK, StatusStaleCache}},
		{"cache has a value the topic lacks", "",
			ClusterObservation{Persisted: p(5), Cached: answered(p(5))},
			ClusterObservation{Persisted: p(5), Cached: answered(nil)},
			want{StatusStaleCache, StatusOK, StatusStaleCache}},
		{"stale cache wins over lag on the same cluster", "scus",
			ClusterObservation{Persisted: p(20), Cached: answered(p(20))},
			ClusterObservation{Persisted: p(10), Cached: answered(p(5)), Inbound: lagFromScus},
			want{StatusStaleCache, StatusOK, StatusStaleCache}},
		{"replication lag behind the source", "scus",
			ClusterObservation{Persisted: p(20), Cached: notChecked},
			ClusterObservation{Persisted: p(10), Cached: notChecked, Inbound: lagFromScus},
			want{StatusReplicationLag, StatusOK, StatusReplicationLag}},
		{"replication lag behind the max without a source", "",
			ClusterObservation{Persisted: p(20), Cached: notChecked},
			ClusterObservation{Persisted: p(10), Cached: notChecked, Inbound: lagFromScus},
			want{StatusReplicationLag, StatusOK, StatusReplicationLag}},
		{"backlog from a non-source peer does not explain it", "scus",
			ClusterObservation{Persisted: p(20), Cached: notChecked},
			ClusterObservation{Persisted: p(10), Cached: notChecked, Inbound: map[string]Inbound{"eus": {Backlog: 4}}},
			want{StatusDiverged, StatusOK, StatusDiverged}},
		{"behind without backlog: diverged", "",
			ClusterObservation{Persisted: p(20), Cached: notChecked},
			ClusterObservation{Persisted: p(10), Cached: notChecked, Inbound: map[string]Inbound{"scus": {Connected: true}}},
			want{StatusDiverged, StatusOK, StatusDiverged}},
		{"ahead of the source: diverged even with backlog", "scus",
			ClusterObservation{Persisted: p(20), Cached: notChecked},
			ClusterObservation{Persisted: p(30), Cached: notChecked, Inbound: lagFromScus},
			want{StatusDiverged, StatusOK, StatusDiverged}},
		{"missing on wus, no backlog", "",
			ClusterObservation{Persisted: p(20), Cached: answered(p(20))},
			ClusterObservation{Cached: answered(nil)},
			want{StatusMissing, StatusOK, StatusMissing}},
		{"absent on wus but backlog explains it", "",
			ClusterObservation{Persisted: p(20), Cached: notChecked},
			ClusterObservation{Cached: notChecked, Inbound: lagFromScus},
			want{StatusReplicationLag, StatusOK, StatusReplicationLag}},
		{"absent on the source", "scus",
			ClusterObservation{Cached: notChecked},
			ClusterObservation{Persisted: p(7), Cached: notChecked},
			want{StatusMissing, StatusMissing, StatusOK}},
		{"absent on the source, wus still replicating to it", "scus",
			ClusterObservation{Cached: notChecked, Inbound: map[string]Inbound{"wus": {Backlog: 1}}},
			ClusterObservation{Persisted: p(7), Cached: notChecked},
			want{StatusReplicationLag, StatusReplicationLag, StatusOK}},
		{"coordinator unavailable", "",
			ClusterObservation{Persisted: p(20), Cached: answered(p(20))},
			ClusterObservation{Persisted: p(20), Cached: CachedOffsets{State: CacheCoordinatorUnavailable}},
			want{StatusCoordinatorUnavailable, StatusOK, StatusCoordinatorUnavailable}},
		{"KoP listener unreachable", "",
			ClusterObservation{Persisted: p(20), Cached: CachedOffsets{State: CacheError}},
			ClusterObservation{Persisted: p(20), Cached: answered(p(20))},
			want{StatusError, StatusError, StatusOK}},
		{"cluster unreachable: the other is still classified", "",
			ClusterObservation{Persisted: p(20), Cached: answered(p(20))},
			ClusterObservation{Unreachable: true},
			want{StatusError, StatusOK, StatusError}},
		{"cluster unreachable does not hide the other's stale cache", "",
			ClusterObservation{Persisted: p(20), Cached: answered(p(3))},
			ClusterObservation{Unreachable: true},
			want{StatusError, StatusStaleCache, StatusError}},
		{"source unreachable: no reference", "scus",
			ClusterObservation{Unreachable: true},
			ClusterObservation{Persisted: p(20), Cached: notChecked},
			want{StatusError, StatusError, StatusOK}},
		{"diverged outranks stale cache on the row", "scus",
			ClusterObservation{Persisted: p(20), Cached: answered(p(1))},
			ClusterObservation{Persisted: p(10), Cached: notChecked},
			want{StatusDiverged, StatusStaleCache, StatusDiverged}},
		{"misaligned: the replicated number names another message here", "",
			ClusterObservation{Persisted: p(10), Cached: notChecked},
			ClusterObservation{Persisted: p(10), Cached: notChecked, Translated: p(9)},
			want{StatusMisaligned, StatusOK, StatusMisaligned}},
		{"aligned", "",
			ClusterObservation{Persisted: p(10), Cached: notChecked},
			ClusterObservation{Persisted: p(10), Cached: notChecked, Translated: p(10)},
			want{StatusOK, StatusOK, StatusOK}},
		{"aligned stale cache stays stale_cache (the user's story)", "",
			ClusterObservation{Persisted: p(10900), Cached: answered(p(10900))},
			ClusterObservation{Persisted: p(10900), Cached: answered(p(500)), Translated: p(10900)},
			want{StatusStaleCache, StatusOK, StatusStaleCache}},
		{"numbers of two numberings compared in each cluster's own (a failed-over group)", "",
			ClusterObservation{Persisted: p(60), Cached: notChecked},
			ClusterObservation{Persisted: p(50), Cached: notChecked, RefIn: map[string]int64{"scus": 50}},
			want{StatusOK, StatusOK, StatusOK}},
		{"the target behind the translated reference: diverged", "",
			ClusterObservation{Persisted: p(60), Cached: notChecked},
			ClusterObservation{Persisted: p(40), Cached: notChecked, RefIn: map[string]int64{"scus": 50}},
			want{StatusDiverged, StatusOK, StatusDiverged}},
		{"misaligned outranks a stale cache: a reload would serve the number", "",
			ClusterObservation{Persisted: p(10900), Cached: answered(p(10900))},
			ClusterObservation{Persisted: p(10900), Cached: answered(p(500)), Translated: p(10850)},
			want{StatusMisaligned, StatusOK, StatusMisaligned}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.scus.Cluster, tt.wus.Cluster = "scus", "wus"
			d := ClassifyDrift(DriftInput{Source: tt.source, Clusters: []ClusterObservation{tt.scus, tt.wus}})
			got := want{d.Status, d.Clusters[0], d.Clusters[1]}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestClassifyDriftSingleCluster(t *testing.T) {
	v := int64(4)
	d := ClassifyDrift(DriftInput{Clusters: []ClusterObservation{{Cluster: "a", Persisted: &v, Cached: CachedOffsets{State: CacheAnswered, Offset: &v}}}})
	if d.Status != StatusOK || *d.Reference != 4 {
		t.Errorf("%+v", d)
	}
}

func TestStatuses(t *testing.T) {
	if len(Statuses) != 15 {
		t.Fatalf("%d statuses", len(Statuses))
	}
	for i, s := range Statuses {
		if s.Severity() != i {
			t.Errorf("%s severity %d", s, s.Severity())
		}
		if got, ok := ParseStatus(upper(string(s))); !ok || got != s {
			t.Errorf("parse %s", s)
		}
	}
	if _, ok := ParseStatus("bogus"); ok {
		t.Error("bogus parsed")
	}
}

func TestClassifyLoaderModel(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	answered := func(v *int64) CachedOffsets { return CachedOffsets{State: CacheAnswered, Offset: v} }
	now := int64(1_700_000_000_000)
	for _, tc := range []struct {
		name string
		ob   ClusterObservation
		want Status
	}{
		{"user's case: older cache", ClusterObservation{Persisted: i(10900), Cached: answered(i(500))}, StatusStaleCache},
		{"no cache, persisted", ClusterObservation{Persisted: i(10900), Cached: answered(nil)}, StatusStaleCache},
		{"transactional commit only the cache has", ClusterObservation{Pending: i(600), Cached: answered(i(600))}, StatusCacheAhead},
		{"cache newer than the loader view", ClusterObservation{Persisted: i(5), Cached: answered(i(600))}, StatusCacheAhead},
		{"partition KoP cannot load", ClusterObservation{Persisted: i(10), Cached: answered(nil), LoadFailure: "bad"}, StatusUnloadable},
		{"expired, gone from the cache", ClusterObservation{Persisted: i(10), Cached: answered(nil), ExpireAt: now - 1, Now: now}, StatusExpired},
		{"expires within the window", ClusterObservation{Persisted: i(10), Cached: answered(i(10)), ExpireAt: now + 1000, Now: now, ExpiryWarning: 5000}, StatusExpiring},
		{"expires later", ClusterObservation{Persisted: i(10), Cached: answered(i(10)), ExpireAt: now + 10000, Now: now, ExpiryWarning: 5000}, StatusOK},
		{"no expiry rules without a clock", ClusterObservation{Persisted: i(10), Cached: answered(i(10)), ExpireAt: 1}, StatusOK},
	} {
		tc.ob.Cluster = "a"
		if got := ClassifyDrift(DriftInput{Clusters: []ClusterObservation{tc.ob}}).Status; got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
