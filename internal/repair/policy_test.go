package repair

import (
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

func i64(v int64) *int64 { return &v }

// Select reloads stale rows and unserved partitions of the clusters written to, leaves the
// others with a reason, and leaves a coordinator_unavailable row of an unserved partition to
// its partition's reload.
func TestSelect(t *testing.T) {
	rows := []verdict.Row{
		{Group: "G", Topic: "t", Status: verdict.StatusStaleCache, Cells: []verdict.Cell{
			{Cluster: "wus", Cached: i64(5), Persisted: i64(9), Status: verdict.StatusStaleCache}, {Cluster: "scus", Status: verdict.StatusOK}}},
		{Group: "M", Topic: "t", Status: verdict.StatusMisaligned, Cells: []verdict.Cell{
			{Cluster: "wus", Status: verdict.StatusMisaligned, Detail: "names another message"}}},
		{Group: "U", Topic: "t", OffsetsPartition: 3, Status: verdict.StatusCoordinatorUnavailable, Cells: []verdict.Cell{
			{Cluster: "wus", Status: verdict.StatusCoordinatorUnavailable}}},
	}
	s := Select(rows, []survey.UnservedPartition{{Cluster: "wus", OffsetsPartition: 3, Answer: "NOT_COORDINATOR"}}, []string{"wus"})
	if len(s.Stale) != 1 || s.Stale[0].Group != "G" || len(s.Groups["wus"]) != 1 || len(s.Partitions["wus"]) != 1 {
		t.Errorf("stale %+v groups %v partitions %v", s.Stale, s.Groups, s.Partitions)
	}
	if len(s.Left) != 1 || s.Left[0].Group != "M" || s.Misaligned != 1 || s.Left[0].Reason == "" {
		t.Errorf("left %+v misaligned %d", s.Left, s.Misaligned)
	}
	rem := &Remaining{}
	Remains(rem, rows, nil, []string{"wus"})
	if len(rem.Stale) != 1 || rem.Unavailable != 1 || !rem.Any() {
		t.Errorf("remaining %+v", rem)
	}
}

// A cell without a status is stale when the row is and its values differ.
func TestStaleWithoutCellStatus(t *testing.T) {
	r := verdict.Row{Status: verdict.StatusStaleCache, Cells: []verdict.Cell{{Cluster: "a", Cached: i64(1), Persisted: i64(2)}, {Cluster: "b", Cached: i64(2), Persisted: i64(2)}}}
	if !Stale(r, "a") || Stale(r, "b") || Stale(r, "c") {
		t.Error("stale a, not b, not c")
	}
}
