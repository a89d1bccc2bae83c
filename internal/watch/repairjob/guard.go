package repairjob

import (
	"context"
	"errors"

	"github.com/kop-offsets/kop-offsets/internal/lease"
)

// WriteGuard is taken before watch --repair's first unload on a cluster in a cycle and
// given back after the cycle's last: the writer lease (another process may then write
// between two cycles) and the audit trail. Reading and exporting never wait for it.
type WriteGuard interface {
	BeforeWrite(ctx context.Context) error
	AfterWrite()
}

// GuardedReloader is a Reloader whose writes are guarded (Cluster.Reloader).
type GuardedReloader struct {
	Reloader
	Guard WriteGuard
}

// BeforeWrite implements WriteGuard.
func (g GuardedReloader) BeforeWrite(ctx context.Context) error { return g.Guard.BeforeWrite(ctx) }

// AfterWrite implements WriteGuard.
func (g GuardedReloader) AfterWrite() { g.Guard.AfterWrite() }

// guardReason is the refusal reason of a guard's error.
func guardReason(err error) string {
	if errors.Is(err, lease.ErrHeld) {
		return "lease_held"
	}
	return "lease_failed"
}
