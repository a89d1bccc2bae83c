package streamsync

import (
	"testing"
	"time"
)

// TestHealthSetReportsComingUp: set reports true only when a cluster is seen up for the
// first time or comes back from down.
func TestHealthSetReportsComingUp(t *testing.T) {
	h := newHealth()
	steps := []struct {
		cluster string
		up      bool
		came    bool
	}{
		{"a", true, true},   // first seen, up
		{"a", true, false},  // still up
		{"a", false, false}, // down
		{"a", false, false}, // still down
		{"a", true, true},   // back
		{"b", false, false}, // first seen, down
		{"b", true, true},   // up
		{"a", true, false},  // a is unaffected by b
	}
	for i, s := range steps {
		if came := h.set(s.cluster, s.up); came != s.came {
			t.Fatalf("step %d: set(%s, %v) = %v, want %v", i, s.cluster, s.up, came, s.came)
		}
		if up, known := h.state(s.cluster); up != s.up || !known {
			t.Fatalf("step %d: state(%s) = %v, %v, want %v, true", i, s.cluster, up, known, s.up)
		}
	}
	if _, known := h.state("c"); known {
		t.Fatal("state of a cluster never set: known")
	}
}

// TestHealthQuiet: a quiet cluster does not answer until the quiet ends, or until it comes
// back from down; a cluster down or unknown never answers.
func TestHealthQuiet(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	h := newHealth()
	if h.answers("a", now) {
		t.Fatal("an unknown cluster answers")
	}
	h.set("a", true)
	if !h.answers("a", now) {
		t.Fatal("a cluster up does not answer")
	}
	h.failed("a", now, time.Second)
	if h.answers("a", now) || h.answers("a", now.Add(time.Second-time.Nanosecond)) {
		t.Fatal("a quiet cluster answers before its quiet ends")
	}
	if !h.answers("a", now.Add(time.Second)) {
		t.Fatal("a cluster does not answer once its quiet has ended")
	}
	// Up again while up: still quiet.
	h.set("a", true)
	if h.answers("a", now) {
		t.Fatal("a probe seeing the cluster up again ended its quiet")
	}
	// Down (the engine makes it quiet too): asked again once the quiet ends, to learn that it
	// is back; back up by the probe: the quiet is over.
	h.set("a", false)
	h.failed("a", now, time.Second)
	if h.answers("a", now) || !h.answers("a", now.Add(time.Hour)) {
		t.Fatal("a cluster down is not quiet, or not asked once its quiet ends")
	}
	h.set("a", true)
	if !h.answers("a", now) {
		t.Fatal("a cluster back from down is still quiet")
	}
	if !h.up("a") || h.up("b") {
		t.Fatalf("up(a) = %v, up(b) = %v, want true, false", h.up("a"), h.up("b"))
	}
}

// TestHealthQuietBacksOff: failures in a row leave a cluster quiet twice as long each time, up
// to maxQuiet; an answer, or the cluster coming back from down, starts over.
func TestHealthQuietBacksOff(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	h := newHealth()
	h.set("a", true)
	for _, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, maxQuiet, maxQuiet} {
		h.failed("a", now, time.Second)
		if h.answers("a", now.Add(want-time.Nanosecond)) || !h.answers("a", now.Add(want)) {
			t.Fatalf("quiet after a failure in a row: want %s", want)
		}
	}
	h.answered("a")
	h.failed("a", now, time.Second)
	if !h.answers("a", now.Add(time.Second)) {
		t.Fatal("an answer did not start the pause over")
	}
	h.failed("a", now, time.Second)
	h.set("a", false)
	h.set("a", true)
	h.failed("a", now, time.Second)
	if !h.answers("a", now.Add(time.Second)) {
		t.Fatal("coming back from down did not start the pause over")
	}
}
