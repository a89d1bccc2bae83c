package lease

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/audit"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/reload"
)

var since = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func other() map[string]string {
	return Holder{Who: audit.Who{Host: "jump-1", User: "ops", PID: 4242, Command: "kop-offsets repair --yes"}, Since: since}.Properties()
}

// fakeClock advances when slept on.
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time { return c.t }
func (c *fakeClock) Sleep(_ context.Context, d time.Duration) error {
	c.t = c.t.Add(d)
	return nil
}

func newLease(b Broker, wait time.Duration) (*Lease, *fakeClock) {
	c := &fakeClock{t: since.Add(time.Hour)}
	return &Lease{Cluster: "wus", Topic: DefaultTopic("public"), Broker: b, Wait: wait,
		Self: audit.Who{Host: "k8s-pod", User: "nobody", PID: 1, Command: "kop-offsets watch --repair"},
		Now:  c.Now, Sleep: c.Sleep}, c
}

func TestAcquireReleaseAcquire(t *testing.T) {
	b := &MemBroker{}
	l, _ := newLease(b, 0)
	if err := l.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := l.Acquire(context.Background()); err != nil || b.Claims != 1 {
		t.Fatalf("second Acquire while held: %v, %d claims (want a no-op)", err, b.Claims)
	}
	h, ok := HolderFrom(b.Holder)
	if !ok || h.Host != "k8s-pod" || h.PID != 1 || h.Command != "kop-offsets watch --repair" || !h.Since.Equal(since.Add(time.Hour)) {
		t.Errorf("holder metadata %+v", h)
	}
	l.Release()
	if l.Held() || b.Holder != nil {
		t.Fatal("still held after Release")
	}
	if err := l.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b.Prepared != 2 {
		t.Errorf("lock topic prepared %d times, want at each of the 2 acquisitions (the broker may delete it in between)", b.Prepared)
	}
}

func TestHeldErrorNamesTheHolder(t *testing.T) {
	b := &MemBroker{Holder: other()}
	l, _ := newLease(b, 0)
	err := l.Acquire(context.Background())
	var he *HeldError
	if !errors.As(err, &he) || !errors.Is(err, ErrHeld) {
		t.Fatalf("err %v, want a *HeldError", err)
	}
	for _, want := range []string{"cluster wus", "persistent://public/kop-offsets/writer-lease", `"kop-offsets repair --yes"`,
		"pid 4242", "user ops", "host jump-1", "since 2026-12-01T10:00:00.000Z", "nothing was written"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "waited") {
		t.Errorf("error %q speaks of a wait that was not asked for", err)
	}
	if l.Held() || b.Claims != 1 {
		t.Errorf("held %v, claims %d: Wait 0 tries once", l.Held(), b.Claims)
	}
}

func TestAcquireWaitsForADeadHolder(t *testing.T) {
	b := &MemBroker{Holder: other(), FreeAfter: 3}
	l, c := newLease(b, time.Minute)
	start := c.Now()
	if err := l.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := c.Now().Sub(start); got != 3*DefaultRetry {
		t.Errorf("acquired after %s, want %s (three refused claims a retry apart)", got, 3*DefaultRetry)
	}
	if !l.Waited() {
		t.Error("Waited() false after three refused claims")
	}
	l.Release()
	if err := l.Acquire(context.Background()); err != nil || l.Waited() {
		t.Errorf("free lease: err %v, Waited() %v (want a fresh acquisition without a wait)", err, l.Waited())
	}
}

func TestAcquireGivesUpAfterWait(t *testing.T) {
	b := &MemBroker{Holder: other()}
	l, _ := newLease(b, 2500*time.Millisecond)
	err := l.Acquire(context.Background())
	if !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "waited 2.5s") {
		t.Fatalf("err %v", err)
	}
	if b.Claims != 4 { // at 0, 1s, 2s and 2.5s
		t.Errorf("%d claims, want 4", b.Claims)
	}
}

func TestOtherFailuresAreNotHeld(t *testing.T) {
	for name, b := range map[string]*MemBroker{
		"prepare": {PrepareErr: pulsarx.ErrAuth},
		"claim":   {ClaimErr: errors.New("connection refused")},
	} {
		l, _ := newLease(b, time.Minute)
		err := l.Acquire(context.Background())
		if err == nil || errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "cluster wus: writer lease") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestHolderOfAnotherTool(t *testing.T) {
	h, ok := HolderFrom(map[string]string{"app": "x"})
	if ok {
		t.Fatal("foreign metadata read as ours")
	}
	h.Producer = "producer p from 10.0.0.1:4000"
	if !strings.Contains(h.String(), "not kop-offsets") {
		t.Errorf("%s", h)
	}
	err := (&HeldError{Cluster: "c", Topic: "t"}).Error()
	if !strings.Contains(err, "did not name it") {
		t.Errorf("%s", err)
	}
}

// unloads records UnloadBundle calls.
type unloads struct {
	reload.BundleAdmin
	n int
}

func (u *unloads) UnloadBundle(context.Context, string, string) error { u.n++; return nil }
func (u *unloads) LookupOwner(context.Context, string) (pulsarx.Owner, error) {
	return pulsarx.Owner{}, nil
}

func TestAdminUnloadsOnlyUnderTheLease(t *testing.T) {
	b := &MemBroker{Holder: other()}
	l, _ := newLease(b, 0)
	inner := &unloads{}
	a := Admin{BundleAdmin: inner, Lease: l}
	if err := a.UnloadBundle(context.Background(), "public/__kafka", "0x0_0x4"); !errors.Is(err, ErrHeld) || inner.n != 0 {
		t.Fatalf("unload while held elsewhere: %v, %d unloads", err, inner.n)
	}
	if _, err := a.LookupOwner(context.Background(), "t"); err != nil {
		t.Errorf("lookups are not guarded: %v", err)
	}
	b.Holder = nil
	if err := a.UnloadBundle(context.Background(), "public/__kafka", "0x0_0x4"); err != nil || inner.n != 1 || !l.Held() {
		t.Fatalf("unload with the lease free: %v, %d unloads, held %v", err, inner.n, l.Held())
	}
}
