package streamsync

import (
	"errors"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/kop"
)

func acts(members map[string]int) map[string]kop.GroupActivity {
	out := map[string]kop.GroupActivity{}
	for g, n := range members {
		out[g] = kop.GroupActivity{State: "Stable", Members: n}
	}
	return out
}

// known fails the test unless lookup of group on cluster gives n (want) or nothing (n < 0).
func known(t *testing.T, ms *membership, cluster, group string, now time.Time, n int) {
	t.Helper()
	got, ok := ms.lookup(cluster, group, now)
	switch {
	case n < 0 && ok:
		t.Fatalf("lookup(%s, %s) = %d, want not known", cluster, group, got)
	case n >= 0 && (!ok || got != n):
		t.Fatalf("lookup(%s, %s) = %d, %v, want %d, true", cluster, group, got, ok, n)
	}
}

// TestMembershipLookupAfterSet: what DescribeGroups answered is known on that cluster only.
func TestMembershipLookupAfterSet(t *testing.T) {
	ms := newMembership(time.Minute)
	known(t, ms, "scus", "g", t0, -1)
	ms.set("scus", acts(map[string]int{"g": 2, "h": 0}), ms.ask(), t0)
	known(t, ms, "scus", "g", t0, 2)
	known(t, ms, "scus", "h", t0, 0)
	known(t, ms, "wus", "g", t0, -1)
	known(t, ms, "scus", "other", t0, -1)
	// A newer answer replaces the older.
	ms.set("scus", acts(map[string]int{"g": 1}), ms.ask(), t0)
	known(t, ms, "scus", "g", t0, 1)
}

// TestMembershipTTL: an answer is used for ttl, not longer.
func TestMembershipTTL(t *testing.T) {
	const ttl = time.Minute
	ms := newMembership(ttl)
	ms.set("scus", acts(map[string]int{"g": 1}), ms.ask(), t0)
	known(t, ms, "scus", "g", t0.Add(ttl), 1)
	known(t, ms, "scus", "g", t0.Add(ttl+time.Nanosecond), -1)
}

// TestMembershipForget: forget drops the groups on one cluster, or on every cluster ("").
func TestMembershipForget(t *testing.T) {
	ms := newMembership(time.Minute)
	for _, c := range []string{"scus", "wus"} {
		ms.set(c, acts(map[string]int{"g": 1, "h": 1, "i": 1}), ms.ask(), t0)
	}
	ms.forget("scus", []string{"g"})
	known(t, ms, "scus", "g", t0, -1)
	known(t, ms, "scus", "h", t0, 1)
	known(t, ms, "wus", "g", t0, 1)
	ms.forget("", []string{"h", "i"})
	for _, c := range []string{"scus", "wus"} {
		known(t, ms, c, "h", t0, -1)
		known(t, ms, c, "i", t0, -1)
	}
	known(t, ms, "wus", "g", t0, 1)
}

// TestMembershipAnswerAskedBeforeForget: an answer asked for before the stream said the
// group's members may have changed is older than that, and is not kept; the other groups
// of the answer, and answers asked for after, are.
func TestMembershipAnswerAskedBeforeForget(t *testing.T) {
	ms := newMembership(time.Minute)
	seq := ms.ask()
	ms.forget("scus", []string{"g"})
	ms.set("scus", acts(map[string]int{"g": 1, "h": 1}), seq, t0)
	known(t, ms, "scus", "g", t0, -1)
	known(t, ms, "scus", "h", t0, 1)
	// The same answer on another cluster: g was not forgotten there.
	ms.set("wus", acts(map[string]int{"g": 1}), seq, t0)
	known(t, ms, "wus", "g", t0, 1)
	// Asked after the forget: kept.
	ms.set("scus", acts(map[string]int{"g": 3}), ms.ask(), t0)
	known(t, ms, "scus", "g", t0, 3)
}

// TestMembershipAnswerAskedBeforeForgetEverywhere: forget("") guards every cluster that
// holds answers.
func TestMembershipAnswerAskedBeforeForgetEverywhere(t *testing.T) {
	ms := newMembership(time.Minute)
	for _, c := range []string{"scus", "wus"} {
		ms.set(c, acts(map[string]int{"x": 0}), ms.ask(), t0)
	}
	seq := ms.ask()
	ms.forget("", []string{"g"})
	for _, c := range []string{"scus", "wus"} {
		ms.set(c, acts(map[string]int{"g": 1}), seq, t0)
		known(t, ms, c, "g", t0, -1)
	}
	ms.set("scus", acts(map[string]int{"g": 1}), ms.ask(), t0)
	known(t, ms, "scus", "g", t0, 1)
}

// TestMembershipClear: clear forgets everything, and no answer asked for before it is kept.
func TestMembershipClear(t *testing.T) {
	ms := newMembership(time.Minute)
	ms.set("scus", acts(map[string]int{"g": 1}), ms.ask(), t0)
	seq := ms.ask()
	ms.clear()
	known(t, ms, "scus", "g", t0, -1)
	ms.set("scus", acts(map[string]int{"g": 1, "h": 2}), seq, t0)
	ms.set("wus", acts(map[string]int{"g": 1}), seq, t0)
	known(t, ms, "scus", "g", t0, -1)
	known(t, ms, "scus", "h", t0, -1)
	known(t, ms, "wus", "g", t0, -1)
	after := ms.ask()
	ms.set("scus", acts(map[string]int{"g": 4}), after, t0)
	known(t, ms, "scus", "g", t0, 4)
	// A forget before the clear does not outlive it: asked after the clear, kept.
	ms.forget("wus", []string{"h"})
	ms.clear()
	ms.set("wus", acts(map[string]int{"h": 1}), ms.ask(), t0)
	known(t, ms, "wus", "h", t0, 1)
}

// TestMembershipErrorsNotKept: a group DescribeGroups answered with an error stays unknown.
func TestMembershipErrorsNotKept(t *testing.T) {
	ms := newMembership(time.Minute)
	a := map[string]kop.GroupActivity{
		"g": {Members: 1, Err: errors.New("NOT_COORDINATOR")},
		"h": {State: "Empty", Members: 0},
	}
	ms.set("scus", a, ms.ask(), t0)
	known(t, ms, "scus", "g", t0, -1)
	known(t, ms, "scus", "h", t0, 0)
}
