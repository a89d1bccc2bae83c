package repair

import (
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/reload"
)

// Gates refuse a bundle reloaded within the cooldown, then one beyond the bundles per
// interval, and pass the others.
func TestGatesRefuse(t *testing.T) {
	now := time.Unix(1000, 0)
	g := Gates{Last: Cooldown{"0x0_0x1": now.Add(-30 * time.Second)}, Now: now, Cooldown: time.Minute, MaxBundles: 1}
	plan := &reload.Plan{}
	for _, tc := range []struct {
		bundle       string
		done         int
		reason, text string
	}{
		{"0x0_0x1", 0, "cooldown", "reloaded 30s ago (cooldown 1m0s)"},
		{"0x1_0x2", 1, "max_bundles", "1 bundle(s) already reloaded on a this interval (--max-bundles)"},
		{"0x1_0x2", 0, "", ""},
	} {
		reason, text := g.Refuse(plan, reload.PlannedBundle{Range: tc.bundle}, "a", tc.done)
		if reason != tc.reason || text != tc.text {
			t.Errorf("%s after %d: got %q %q, want %q %q", tc.bundle, tc.done, reason, text, tc.reason, tc.text)
		}
	}
}
