package keepjob

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/standby"
	"github.com/kop-offsets/kop-offsets/internal/watch/job"
)

// TestKeepReadsOnlyTheKeptClusters: the followers feed no Store before Start, and after it
// only those of the clusters with a Keeper, read as they are at Start.
func TestKeepReadsOnlyTheKeptClusters(t *testing.T) {
	cs := []Cluster{{Name: "scus"}, {Name: "wus"}}
	env := job.Env{Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Up: func(string, bool) bool { return true }, Now: time.Now}
	j := New(func() []Cluster { return cs }, Options{}, env, NewMetrics())
	if j.Start() != nil {
		t.Fatal("a job with nothing to keep runs")
	}
	cs[1].Keeper = &standby.Keeper{Cluster: "wus", KafkaNamespace: "public/default"}
	if j.Store("wus") != nil {
		t.Fatal("a Store before Start")
	}
	run := j.Start()
	if run == nil || j.Store("wus") == nil || j.Store("scus") != nil {
		t.Fatalf("after Start: run %v, Stores wus %v scus %v; want wus's only", run != nil, j.Store("wus"), j.Store("scus"))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { run(ctx); close(done) }()
	j.AfterCycle(ctx, job.Cycle{}) // a retry with nothing due
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the keeping engines did not stop with their context")
	}
}
