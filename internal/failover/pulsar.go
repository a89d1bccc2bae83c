package failover

import (
	"context"

	"github.com/kop-offsets/kop-offsets/internal/reload"
	"github.com/kop-offsets/kop-offsets/internal/survey"
)

// AdminBacklog is the Backlog of the source's replicators toward one target.
type AdminBacklog struct {
	Replication survey.ReplicationSource
	Target      string
}

// Backlog implements Backlog.
func (a AdminBacklog) Backlog(ctx context.Context, p int32) (int64, error) {
	st, err := a.Replication.OutboundReplication(ctx, p)
	if err != nil {
		return 0, err
	}
	return st[a.Target].Backlog, nil
}

// SessionReloader is the Reloader of a reload Planner and Executor of the target.
type SessionReloader struct {
	Planner  *reload.Planner
	Executor *reload.Executor
}

// Plan implements Reloader.
func (s SessionReloader) Plan(ctx context.Context, groups []string, intended map[reload.IntendedKey]int64, target reload.PartitionReplayer) (*reload.Plan, error) {
	s.Planner.Intended, s.Planner.Persisted = intended, target
	return s.Planner.Plan(ctx, reload.Request{Groups: groups})
}

// Execute implements Reloader: its re-checks and verifications read the offsets topic
// through the replay the last Plan read it with (what was appended since, only).
func (s SessionReloader) Execute(ctx context.Context, plan *reload.Plan) *reload.Execution {
	s.Executor.Persisted = s.Planner.Persisted
	return s.Executor.Execute(ctx, plan, plan.Executable())
}
