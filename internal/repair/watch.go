package repair

import (
	"fmt"
	"iter"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/reload"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// Targets are the groups of asked with a row on cluster that watch --repair reloads
// (Reloads), in the order asked, and by how much each one's cache is behind its persisted
// offsets (the largest gap of its rows; 0 when no gap is known).
func Targets(asked []string, rows func(group string) iter.Seq[verdict.Row], cluster string) ([]string, map[string]int64) {
	behind := map[string]int64{}
	var stale []string
	for _, g := range asked {
		for r := range rows(g) {
			cell := r.Cell(cluster)
			if !Reloads(cell.Status) {
				continue
			}
			if _, ok := behind[g]; !ok {
				stale = append(stale, g)
			}
			b := behind[g]
			if cell.Cached != nil && cell.Persisted != nil {
				b = max(b, *cell.Persisted-*cell.Cached)
			}
			behind[g] = b
		}
	}
	return stale, behind
}

// Gates are the per-bundle gates of watch --repair, in the order they refuse: the reload's
// own refusal, the cooldown since the bundle's last reload, the bundles per interval.
type Gates struct {
	Last       Cooldown
	Now        time.Time
	Cooldown   time.Duration
	MaxBundles int
}

// Refuse returns the reason (the refusal metric's label) and the detail of the first gate
// refusing pb on cluster once done bundles were reloaded this interval; "" when none does.
func (g Gates) Refuse(plan *reload.Plan, pb reload.PlannedBundle, cluster string, done int) (reason, detail string) {
	ago, cooling := g.Last.Wait(pb.Range, g.Now, g.Cooldown)
	switch {
	case pb.Refused:
		return RefusalReason(plan, pb), pb.Reason
	case cooling:
		return "cooldown", fmt.Sprintf("reloaded %s ago (cooldown %s)", ago.Round(time.Second), g.Cooldown)
	case done >= g.MaxBundles:
		return "max_bundles", fmt.Sprintf("%d bundle(s) already reloaded on %s this interval (--max-bundles)", done, cluster)
	}
	return "", ""
}
