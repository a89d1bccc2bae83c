// Package job is the seam between watch's exporter and the jobs that run beside it (sync,
// kept translations, repair): what a job is told by the exporter, and what it gets from the
// process. A job owns its metrics and its decision log; the exporter knows a job only as a
// Job, so that adding a mode changes no cycle.
package job

import (
	"context"
	"iter"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kop-offsets/kop-offsets/internal/streamsync"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// Job is one job run beside the exporter.
type Job interface {
	// Store is the copy of cluster's offsets topic the job reads, which the followers feed
	// as they read (nil: the job does not read the commit stream).
	Store(cluster string) *streamsync.Store
	// Start readies the job before the followers start and returns what runs until its
	// context ends (nil: nothing runs). A watch that only seeds (SyncOnce) starts no job.
	Start() (run func(ctx context.Context))
	// AfterCycle tells the job what the cycle that just ended learnt. It is called from
	// the cycle's goroutine, one cycle at a time.
	AfterCycle(ctx context.Context, c Cycle)
}

// Cycle is what one cycle of the exporter learnt, for the jobs.
type Cycle struct {
	Start  time.Time
	Resync bool // every group was asked
	First  bool // the process's first cycle
	// Ready: every cluster that answers has replayed its offsets topic.
	Ready bool
	// Asked are the groups asked this cycle, sorted.
	Asked []string
	// Rows yields the rows of group as the cycle classified them.
	Rows func(group string) iter.Seq[verdict.Row]
	// Inbound is the replication of group's offsets partition from every peer toward
	// cluster, as the cycle read it.
	Inbound func(cluster, group string) map[string]verdict.Inbound
}

// Env is what every job gets from the process.
type Env struct {
	Log *slog.Logger
	// Errors is kop_offsets_watch_errors_total (labels cluster, endpoint): a job counts its
	// failures there under its own endpoint.
	Errors *prometheus.CounterVec
	// Up reports whether cluster answered at the last cycle; safe from any goroutine.
	// unknown is the answer for a cluster watch does not follow.
	Up  func(cluster string, unknown bool) bool
	Now func() time.Time
}

// DurationBuckets are the buckets of watch's durations, from a few milliseconds (a fetch)
// to an hour (a stale standby).
var DurationBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}
