// Package repair is the one repair policy, shared by the `repair` command and `watch
// --repair`: which check rows a reload fixes (stale_cache; for watch also
// coordinator_unavailable), which it leaves and why, the unserved offsets partitions
// reloaded with them, and the per-bundle gates (the reload's refusal, the cooldown, the
// bundles per run). It reads the check engine's rows as values (verdict.Row).
package repair

import (
	"slices"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/reload"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// Row is one check row on one cluster, as a repair run reports it.
type Row struct {
	Tenant    string `json:"tenant,omitempty"` // in a multi-tenant run
	Cluster   string `json:"cluster"`
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Status    string `json:"status"`
	Reason    string `json:"reason,omitempty"`
}

// Partition is an offsets partition of one cluster.
type Partition struct {
	Tenant           string `json:"tenant,omitempty"` // in a multi-tenant run
	Cluster          string `json:"cluster"`
	OffsetsPartition int32  `json:"offsetsPartition"`
	Answer           string `json:"answer,omitempty"`
}

// CellStatus is r's status on cluster (the row's status when the cell has none).
func CellStatus(r verdict.Row, cluster string) verdict.Status {
	if c, ok := r.Lookup(cluster); ok && c.Status != "" {
		return c.Status
	}
	return r.Status
}

// Stale reports whether r is stale_cache on cluster: its cell says so, or (a cell without
// a status) the row does and the cell's cached value differs from its persisted one.
func Stale(r verdict.Row, cluster string) bool {
	c, ok := r.Lookup(cluster)
	switch {
	case !ok:
		return false
	case c.Status != "":
		return c.Status == verdict.StatusStaleCache
	case r.Status != verdict.StatusStaleCache, c.Cached == nil && c.Persisted == nil:
		return false
	case c.Cached == nil || c.Persisted == nil:
		return true
	}
	return *c.Cached != *c.Persisted
}

// Selection is what a run reloads on the clusters it writes to, and what it leaves.
type Selection struct {
	Stale    []Row       // the stale_cache rows
	Unserved []Partition // the offsets partitions KoP does not serve
	Left     []Row       // the rows left alone, with the reason
	// Misaligned counts the Left rows that are misaligned (the failover fixes them).
	Misaligned int
	// Groups and Partitions are, per cluster, the stale groups and the unserved offsets
	// partitions to reload.
	Groups     map[string][]string
	Partitions map[string][]int32
}

// Select files the rows and unserved partitions of a check on the clusters written to as
// stale (reloaded), unserved (their bundles reloaded too) or left (with the reason). A
// coordinator_unavailable row of an unserved partition is neither: its partition's reload
// decides, and the next check says whether it is back.
func Select(rows []verdict.Row, unserved []survey.UnservedPartition, write []string) Selection {
	s := Selection{Stale: []Row{}, Unserved: []Partition{}, Left: []Row{}, Groups: map[string][]string{}, Partitions: map[string][]int32{}}
	for _, cl := range write {
		for _, u := range unserved {
			if u.Cluster == cl {
				s.Partitions[cl] = append(s.Partitions[cl], u.OffsetsPartition)
				s.Unserved = append(s.Unserved, Partition{Cluster: u.Cluster, OffsetsPartition: u.OffsetsPartition, Answer: u.Answer})
			}
		}
	}
	for _, cl := range write {
		for _, cr := range rows {
			st := CellStatus(cr, cl)
			row := Row{Cluster: cl, Group: cr.Group, Topic: cr.Topic, Partition: cr.Partition, Status: string(st)}
			switch {
			case st == verdict.StatusCoordinatorUnavailable && slices.Contains(s.Partitions[cl], cr.OffsetsPartition):
			case Stale(cr, cl):
				row.Status = string(verdict.StatusStaleCache)
				s.Stale = append(s.Stale, row)
				if !slices.Contains(s.Groups[cl], cr.Group) {
					s.Groups[cl] = append(s.Groups[cl], cr.Group)
				}
			case st == verdict.StatusOK || st == "" || st == verdict.StatusExpiring:
			default:
				row.Reason = LeaveReason(st)
				if c := cr.Cell(cl); c.Error != "" {
					row.Reason += ": " + c.Error
				} else if st == verdict.StatusMisaligned && c.Detail != "" {
					row.Reason += ": " + c.Detail
				}
				s.Left = append(s.Left, row)
				if st == verdict.StatusMisaligned {
					s.Misaligned++
				}
			}
		}
	}
	return s
}

// Remaining is what a second check still finds on the clusters written to: stale_cache
// rows, unserved partitions and coordinator_unavailable rows. Any of them means the run
// did not fix everything it may fix.
type Remaining struct {
	Stale       []Row       `json:"stale"`
	Unserved    []Partition `json:"unserved"`
	Unavailable int         `json:"coordinatorUnavailable"`
}

// Any reports whether anything remains.
func (r *Remaining) Any() bool {
	return len(r.Stale) > 0 || len(r.Unserved) > 0 || r.Unavailable > 0
}

// Remains adds to rem what the rows and unserved partitions of a check leave on the
// clusters written to.
func Remains(rem *Remaining, rows []verdict.Row, unserved []survey.UnservedPartition, write []string) {
	for _, cl := range write {
		for _, row := range rows {
			if Stale(row, cl) {
				rem.Stale = append(rem.Stale, Row{Cluster: cl, Group: row.Group, Topic: row.Topic, Partition: row.Partition, Status: string(verdict.StatusStaleCache)})
			}
			if CellStatus(row, cl) == verdict.StatusCoordinatorUnavailable {
				rem.Unavailable++
			}
		}
		for _, u := range unserved {
			if u.Cluster == cl {
				rem.Unserved = append(rem.Unserved, Partition{Cluster: u.Cluster, OffsetsPartition: u.OffsetsPartition, Answer: u.Answer})
			}
		}
	}
}

// Reloads reports whether watch --repair reloads a cell with status st: stale_cache, and
// coordinator_unavailable (KoP kept answering NOT_COORDINATOR or loading for the whole
// coordinator wait: it dropped the partition's load, and only another load brings it back).
func Reloads(st verdict.Status) bool {
	return st == verdict.StatusStaleCache || st == verdict.StatusCoordinatorUnavailable
}

// RefusalReason names why the reload refused bundle pb (the label of the refusal metric).
func RefusalReason(plan *reload.Plan, pb reload.PlannedBundle) string {
	switch {
	case len(pb.Losses) > 0:
		return "would_lose_offsets"
	case plan.RefusedForActivity(pb):
		return "live_members"
	}
	return "refused_by_reload"
}

// Cooldown remembers when each bundle was last reloaded, so that a bundle is not reloaded
// again within the cooldown.
type Cooldown map[string]time.Time

// Wait is how long ago bundle was reloaded and whether that is less than d.
func (c Cooldown) Wait(bundle string, now time.Time, d time.Duration) (time.Duration, bool) {
	ago := now.Sub(c[bundle])
	return ago, ago < d
}

// BundleGroups is the groups of want in bundle pb.
func BundleGroups(plan *reload.Plan, pb reload.PlannedBundle, want []string) []string {
	var out []string
	for _, g := range plan.GroupsIn(pb.Range) {
		if slices.Contains(want, g.Group) {
			out = append(out, g.Group)
		}
	}
	if len(out) == 0 {
		return []string{}
	}
	return out
}
