package watch

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/fakes"
	"github.com/kop-offsets/kop-offsets/internal/reload"
)

func TestShutdownSafeAdminNeverLeavesABundleUnloaded(t *testing.T) {
	adm := fakes.NewAdmin("wus") // fails calls on a done context, as the admin client does
	a := ShutdownSafeAdmin{BundleAdmin: adm, CallTimeout: time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	if err := a.UnloadBundle(ctx, "public/__kafka", "0x00000000_0x40000000"); err != nil {
		t.Fatal(err)
	}
	cancel() // the signal arrives between the unload and the lookup
	if _, err := a.LookupOwner(ctx, "persistent://public/__kafka/__consumer_offsets-partition-0"); err != nil {
		t.Fatalf("the lookup after an unload was cancelled: %v", err)
	}
	if !adm.Owned("0x00000000_0x40000000") {
		t.Error("the bundle was left unloaded")
	}
	// After the signal no new unload starts.
	err := a.UnloadBundle(ctx, "public/__kafka", "0x40000000_0x80000000")
	if err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "not unloaded") {
		t.Errorf("unload after the signal: %v", err)
	}
	if w := adm.Writes(); len(w) != 2 || w[0] != "unload public/__kafka/0x00000000_0x40000000" ||
		w[1] != "lookup persistent://public/__kafka/__consumer_offsets-partition-0" {
		t.Errorf("calls that reached the admin: %v", w)
	}
}

func TestNewReloadSessionWrapsAdminAndRefusesActive(t *testing.T) {
	p := &reload.Planner{AllowActive: true}
	e := &reload.Executor{Admin: fakes.NewAdmin("wus")}
	s := NewReloadSession(p, e, 0)
	if s.Planner.AllowActive {
		t.Error("AllowActive kept")
	}
	if _, ok := s.Executor.Admin.(ShutdownSafeAdmin); !ok {
		t.Errorf("admin not wrapped: %T", s.Executor.Admin)
	}
}
