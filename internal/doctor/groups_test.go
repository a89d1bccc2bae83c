package doctor

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// TestGroupsFollow: the groups check finds ahead (error), overwritten and sync_lag
// (warnings) are counted per cluster, with the fix; none, no finding.
func TestGroupsFollow(t *testing.T) {
	states := GroupStates{
		"wus":  {verdict.StatusAhead: {"g3", "g1", "g2", "g4"}, verdict.StatusSyncLag: {"g5"}},
		"scus": {verdict.StatusOverwritten: {"g6"}},
	}
	r := runWith(t, Options{GroupStates: func(context.Context) (GroupStates, error) { return states, nil }}, healthy("scus"), healthy("wus"))
	f := wantOne(t, r, SeverityError, CheckGroupsFollow, "wus", "watch --sync")
	if f.Evidence["groups"] != 4 || !strings.HasPrefix(f.Message, "4 group(s) on wus are past") || !strings.Contains(f.Message, "(g1, g2, g3 and 1 more)") {
		t.Errorf("ahead: %+v", f)
	}
	if fs := only(r, SeverityWarning, CheckGroupsFollow); len(fs) != 2 || fs[0].Cluster != "scus" || fs[0].Subject != "overwritten" ||
		fs[1].Cluster != "wus" || fs[1].Subject != "sync_lag" {
		t.Errorf("warnings: %+v", fs)
	}
	if r.Errors() != 1 {
		t.Errorf("errors %d: %+v", r.Errors(), r.Findings)
	}

	r = runWith(t, Options{GroupStates: func(context.Context) (GroupStates, error) { return GroupStates{}, nil }}, healthy("scus"), healthy("wus"))
	if fs := only(r, "", CheckGroupsFollow); len(fs) != 0 {
		t.Errorf("nothing found: %+v", fs)
	}
	r = runWith(t, Options{GroupStates: func(context.Context) (GroupStates, error) { return nil, errors.New("boom") }}, healthy("scus"), healthy("wus"))
	if fs := only(r, SeverityWarning, CheckGroupsFollow); len(fs) != 1 || !strings.Contains(fs[0].Message, "boom") {
		t.Errorf("failed: %+v", fs)
	}
}
