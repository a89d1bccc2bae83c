package syncjob

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
	"github.com/kop-offsets/kop-offsets/internal/offsetsync"
	"github.com/kop-offsets/kop-offsets/internal/watch/job"
)

func testEnv(log *bytes.Buffer, up map[string]bool, now time.Time) job.Env {
	return job.Env{
		Log:    slog.New(slog.NewJSONHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "errors"}, []string{"cluster", "endpoint"}),
		Up:     func(c string, unknown bool) bool { v, ok := up[c]; return v || (!ok && unknown) },
		Now:    func() time.Time { return now },
	}
}

// TestObserverCountsWhatSyncDid: one result's commits, deletes, skips and errors land in the
// job's own series; split brain is logged when it starts and ends, counted at every retry.
func TestObserverCountsWhatSyncDid(t *testing.T) {
	var log bytes.Buffer
	now := time.UnixMilli(10_000)
	env := testEnv(&log, map[string]bool{"wus": true, "eus": false}, now)
	m := NewMetrics()
	o := &observer{env: env, m: m, split: map[string]bool{}}
	o.Result(offsetsync.Result{Group: "orders", Source: "scus",
		Synced:    []offsetsync.Synced{{Cluster: "wus", Topic: "t", SourceAt: offsetlog.Millis(9_500)}, {Cluster: "wus", Topic: "t", Partition: 1, Behind: true}},
		Deleted:   []offsetsync.Deleted{{Cluster: "wus", Topic: "gone"}},
		Undeleted: []offsetsync.Deleted{{Cluster: "wus", Topic: "old"}},
		Left:      []offsetsync.Left{{Cluster: "wus", Partition: -1}, {Cluster: "eus", Partition: -1}},
		Errors:    []error{&offsetsync.ClusterError{Cluster: "wus", Err: errors.New("refused")}}})
	o.Received("scus", 1)
	for name, got := range map[string]float64{
		"written":         testutil.ToFloat64(m.Synced.WithLabelValues("wus", "scus", "written")),
		"behind":          testutil.ToFloat64(m.Synced.WithLabelValues("wus", "scus", "behind")),
		"deleted":         testutil.ToFloat64(m.Deleted.WithLabelValues("wus", "scus")),
		"no OffsetDelete": testutil.ToFloat64(m.Skipped.WithLabelValues("offset_delete_unsupported")),
		"unknown (wus up; eus down is not counted)": testutil.ToFloat64(m.Skipped.WithLabelValues("unknown")),
		"error":    testutil.ToFloat64(env.Errors.WithLabelValues("wus", "sync")),
		"received": testutil.ToFloat64(m.Received.WithLabelValues("scus")),
	} {
		if got != 1 {
			t.Errorf("%s: %v, want 1", name, got)
		}
	}
	if n := testutil.CollectAndCount(m.Latency); n != 1 {
		t.Errorf("%d latency series, want 1 (the commit with a timestamp)", n)
	}
	split := offsetsync.Result{Group: "orders", SplitBrain: "members on scus and wus"}
	o.Result(split)
	o.Result(split)
	o.Result(offsetsync.Result{Group: "orders", Source: "scus"})
	if n := testutil.ToFloat64(m.Skipped.WithLabelValues("split_brain")); n != 2 {
		t.Errorf("split brain counted %v times, want 2", n)
	}
	if n := strings.Count(log.String(), "split brain (logged once"); n != 1 {
		t.Errorf("split brain logged %d times, want once", n)
	}
	if !strings.Contains(log.String(), "split brain over") {
		t.Error("the end of the split brain is not logged")
	}
}

// TestObserverDryRun: what a dry run would have synced counts as dry_run, with no latency.
func TestObserverDryRun(t *testing.T) {
	var log bytes.Buffer
	m := NewMetrics()
	o := &observer{env: testEnv(&log, nil, time.Now()), m: m, dryRun: true, split: map[string]bool{}}
	o.Result(offsetsync.Result{Group: "g", Source: "scus", Synced: []offsetsync.Synced{{Cluster: "wus", SourceAt: 1}}})
	if n := testutil.ToFloat64(m.Synced.WithLabelValues("wus", "scus", "dry_run")); n != 1 {
		t.Errorf("dry_run %v, want 1", n)
	}
	if n := testutil.CollectAndCount(m.Latency); n != 0 {
		t.Errorf("%d latency series in a dry run, want none", n)
	}
	if !strings.Contains(log.String(), "would sync (dry run)") {
		t.Error("the dry run is not logged as one")
	}
}
