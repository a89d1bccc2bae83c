package doctor

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// GroupStates are, per cluster, the groups with a row in each state a sync or kept
// deployment must not be in, as check judges them (verdict: ahead, sync_lag, overwritten).
type GroupStates map[string]map[verdict.Status][]string

// followStates are the statuses CheckGroupsFollow counts, with the severity of a finding,
// what it means for the groups and the fix.
var followStates = []struct {
	status   verdict.Status
	severity Severity
	means    string
	fix      string
}{
	{verdict.StatusAhead, SeverityError,
		"are past the translation of their newest own commit made on another cluster: consumers moved to %s would skip messages they never read",
		"run the tool that follows (kop-offsets watch --sync, or watch --keep-translations in a kept deployment) and check again; or reset each group on %s to the translated offset (check's follow.translated); see them with: kop-offsets check --fail-on ahead"},
	{verdict.StatusOverwritten, SeverityWarning,
		"hold a kept translation that landed after a newer commit: after any load KoP on %s serves the older value and they re-read",
		"kop-offsets watch --keep-translations writes the newer commit again (a replicated one while its source answers); do not reload %s before it has; see them with: kop-offsets check --fail-on overwritten"},
	{verdict.StatusSyncLag, SeverityWarning,
		"are behind the translation of their newest own commit for longer than the sync's grace: consumers moved to %s would re-read",
		"is kop-offsets watch --sync (or --keep-translations) running and holding the writer lease of %s? its log and kop_offsets_sync_commits_total say; see them with: kop-offsets check --fail-on sync_lag"},
}

// checkGroupsFollow counts, per cluster, the groups check finds ahead, overwritten or
// behind in a sync or kept deployment (Options.GroupStates).
func checkGroupsFollow(ctx context.Context, r *run) []Finding {
	// Two clusters to compare, every one answering: a cluster down was reported, and the
	// judgement would wait on it again.
	if r.opts.GroupStates == nil || len(r.clusters) < 2 || len(r.upClusters()) < len(r.clusters) {
		return nil
	}
	states, err := r.opts.GroupStates(ctx)
	if err != nil {
		return []Finding{{Severity: SeverityWarning, Check: CheckGroupsFollow, Message: "the groups' offsets could not be judged: " + err.Error(),
			Fix: "kop-offsets check (it names what failed)"}}
	}
	var out []Finding
	for _, cluster := range slices.Sorted(maps.Keys(states)) {
		for _, st := range followStates {
			groups := states[cluster][st.status]
			if len(groups) == 0 {
				continue
			}
			slices.Sort(groups)
			out = append(out, Finding{Severity: st.severity, Check: CheckGroupsFollow, Cluster: cluster, Subject: string(st.status),
				Message:  fmt.Sprintf("%d group(s) on %s %s (%s)", len(groups), cluster, fmt.Sprintf(st.means, cluster), examples(groups)),
				Evidence: map[string]any{"status": string(st.status), "groups": len(groups), "examples": groups[:min(len(groups), 10)]},
				Fix:      fmt.Sprintf(st.fix, cluster)})
		}
	}
	return out
}

// examples names up to 3 groups.
func examples(groups []string) string {
	if len(groups) <= 3 {
		return strings.Join(groups, ", ")
	}
	return strings.Join(groups[:3], ", ") + fmt.Sprintf(" and %d more", len(groups)-3)
}
