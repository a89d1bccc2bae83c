package watch

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/reload"
)

// recordingAdmin is a reload.BundleAdmin that records the contexts it is called with.
type recordingAdmin struct {
	reload.BundleAdmin
	unloads, lookups []error // ctx.Err() at each call
}

func (a *recordingAdmin) UnloadBundle(ctx context.Context, _, _ string) error {
	a.unloads = append(a.unloads, ctx.Err())
	return nil
}

func (a *recordingAdmin) LookupOwner(ctx context.Context, _ string) (pulsarx.Owner, error) {
	a.lookups = append(a.lookups, ctx.Err())
	return pulsarx.Owner{BrokerURL: "pulsar://127.0.0.1:26650"}, ctx.Err()
}

func TestShutdownSafeAdminNeverLeavesABundleUnloaded(t *testing.T) {
	rec := &recordingAdmin{}
	a := ShutdownSafeAdmin{BundleAdmin: rec, CallTimeout: time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	if err := a.UnloadBundle(ctx, "public/__kafka", "0x00000000_0x40000000"); err != nil {
		t.Fatal(err)
	}
	cancel() // the signal arrives between the unload and the lookup
	if _, err := a.LookupOwner(ctx, "persistent://public/__kafka/__consumer_offsets-partition-0"); err != nil {
		t.Fatalf("the lookup after an unload was cancelled: %v", err)
	}
	if len(rec.lookups) != 1 || rec.lookups[0] != nil {
		t.Errorf("lookup ctx: %v", rec.lookups)
	}
	// After the signal no new unload starts.
	err := a.UnloadBundle(ctx, "public/__kafka", "0x40000000_0x80000000")
	if err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "not unloaded") {
		t.Errorf("unload after the signal: %v", err)
	}
	if len(rec.unloads) != 1 {
		t.Errorf("unloads reached the admin: %d", len(rec.unloads))
	}
}

func TestNewReloadSessionWrapsAdminAndRefusesActive(t *testing.T) {
	rec := &recordingAdmin{}
	p := &reload.Planner{AllowActive: true}
	e := &reload.Executor{Admin: rec}
	s := NewReloadSession(p, e, 0)
	if s.Planner.AllowActive {
		t.Error("AllowActive kept")
	}
	if _, ok := s.Executor.Admin.(ShutdownSafeAdmin); !ok {
		t.Errorf("admin not wrapped: %T", s.Executor.Admin)
	}
}
