package align_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

// TestWarmForLeavesAStalledReadBehind: a copy that hangs is read in the background once the
// wait ends; meanwhile its translations say ErrReading at once (not a wait, not a number),
// the other topics translate, and a second WarmFor does not start a second read of it. Once
// the read ends, it answers like the rest.
func TestWarmForLeavesAStalledReadBehind(t *testing.T) {
	topics := map[string][]uint64{"slow": fakes.Sequence(0, 500), "fast": fakes.Sequence(1<<32, 1<<32+500)}
	wus := &fakes.Stalled{RangeSource: fakes.MemCopies{Topics: topics}, Topic: "slow", Release: make(chan struct{})}
	p := &align.Pool{Sources: map[string]align.Source{"scus": fakes.MemCopies{Topics: topics}, "wus": wus}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reqs := []align.Request{{From: "scus", To: "wus", Topic: "slow", Offset: 300}, {From: "scus", To: "wus", Topic: "fast", Offset: 300}}

	start := time.Now()
	p.WarmFor(ctx, reqs, 4, 50*time.Millisecond)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("WarmFor waited %s for a stalled copy", d)
	}
	if _, err := p.Translate(ctx, "scus", "wus", "slow", 0, 300, 0, "g"); !errors.Is(err, align.ErrReading) {
		t.Fatalf("slow while read: err %v, want ErrReading", err)
	}
	if tr, err := p.Translate(ctx, "scus", "wus", "fast", 0, 300, 0, "g"); err != nil || tr.Translated != 300 {
		t.Fatalf("fast: %+v %v, want 300", tr, err)
	}
	before := p.Stats()
	p.WarmFor(ctx, reqs, 4, 10*time.Millisecond) // the read of slow still runs: not started again
	if _, err := p.Translate(ctx, "scus", "wus", "slow", 0, 300, 0, "g"); !errors.Is(err, align.ErrReading) {
		t.Fatalf("slow after a second WarmFor: err %v, want ErrReading", err)
	}
	if after := p.Stats(); after.Builds != before.Builds {
		t.Errorf("builds %d -> %d while slow was being read, want none more", before.Builds, after.Builds)
	}

	close(wus.Release)
	deadline := time.Now().Add(5 * time.Second)
	for {
		tr, err := p.Translate(ctx, "scus", "wus", "slow", 0, 300, 0, "g")
		if err == nil {
			if tr.Translated != 300 {
				t.Fatalf("slow after the read: %d, want 300", tr.Translated)
			}
			break
		}
		if !errors.Is(err, align.ErrReading) || time.Now().After(deadline) {
			t.Fatalf("slow after the read: err %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	p.Wait()
}

// TestWarmForEndsWithItsContext: a read left in the background ends when its ctx does, and
// Wait returns; the translation then reads again (and says why it failed) rather than
// answering ErrReading for ever.
func TestWarmForEndsWithItsContext(t *testing.T) {
	topics := map[string][]uint64{"slow": fakes.Sequence(0, 500)}
	wus := &fakes.Stalled{RangeSource: fakes.MemCopies{Topics: topics}, Topic: "slow", Release: make(chan struct{})}
	p := &align.Pool{Sources: map[string]align.Source{"scus": fakes.MemCopies{Topics: topics}, "wus": wus}}
	ctx, cancel := context.WithCancel(context.Background())
	p.WarmFor(ctx, []align.Request{{From: "scus", To: "wus", Topic: "slow", Offset: 10}}, 1, 10*time.Millisecond)
	cancel()
	p.Wait()
	_, err := p.Translate(ctx, "scus", "wus", "slow", 0, 10, 0, "g")
	if err == nil || errors.Is(err, align.ErrReading) {
		t.Fatalf("after the read ended with its ctx: err %v, want the read's own error", err)
	}
}
