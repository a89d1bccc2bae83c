package offsetsync

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
)

// source picks the group's source: the one cluster with members, else the last writer. ""
// when nothing is to be synced, res saying why (SplitBrain, Left).
func (s *Syncer) source(views map[string]View, idx map[string]map[key]entry, res *Result) string {
	var live, unknown, counts []string
	for _, c := range s.Clusters {
		v, ok := views[c.Name]
		switch {
		case !ok:
			unknown = append(unknown, c.Name)
			res.Left = append(res.Left, Left{Cluster: c.Name, Partition: -1, Why: "not read this cycle: its members are unknown"})
		case !v.MembersKnown:
			unknown = append(unknown, c.Name)
			res.Left = append(res.Left, Left{Cluster: c.Name, Partition: -1, Why: "its members are unknown (DescribeGroups did not answer)"})
		case v.Members > 0:
			live = append(live, c.Name)
			counts = append(counts, fmt.Sprintf("%s (%d)", c.Name, v.Members))
		}
	}
	switch {
	case len(live) > 1:
		res.SplitBrain = fmt.Sprintf("members on %s at once: nothing synced", strings.Join(counts, " and "))
		return ""
	case len(live) == 1:
		return live[0]
	case len(unknown) > 0:
		// No known cluster has members: one whose members are unknown may be where the
		// group runs.
		for i := range res.Left {
			res.Left[i].Why += "; it could be the group's source: nothing synced"
		}
		return ""
	}
	return s.lastWriter(idx, res)
}

// lastWriter is the cluster holding the group's newest own commit; with none anywhere, the
// cluster the tool's commits name (the group was deleted, or its offsets expired, there).
func (s *Syncer) lastWriter(idx map[string]map[key]entry, res *Result) string {
	type write struct {
		cluster string
		at      offsetlog.Millis
	}
	var ws []write
	for _, c := range s.Clusters {
		var newest *offsetlog.Millis
		for _, e := range idx[c.Name] {
			if !e.marked && !e.foreign && (newest == nil || e.co.CommitTimestamp > *newest) {
				newest = &e.co.CommitTimestamp
			}
		}
		if newest != nil {
			ws = append(ws, write{c.Name, *newest})
		}
	}
	if len(ws) == 0 {
		return s.markedSource(idx)
	}
	slices.SortStableFunc(ws, func(a, b write) int { return cmp.Compare(b.at, a.at) })
	if len(ws) > 1 && time.Duration(ws[0].at-ws[1].at)*time.Millisecond <= s.Window {
		res.SplitBrain = fmt.Sprintf("own commits on %s (%s) and %s (%s), within %s of each other: two writers, nothing synced",
			ws[0].cluster, ws[0].at, ws[1].cluster, ws[1].at, s.Window)
		return ""
	}
	return ws[0].cluster
}

// markedSource is the one cluster the tool's commits of the group name, "" if they name none
// or several, or one not synced.
func (s *Syncer) markedSource(idx map[string]map[key]entry) string {
	from := ""
	for _, c := range s.Clusters {
		for _, e := range idx[c.Name] {
			switch {
			case !e.marked:
			case from == "":
				from = e.mark.From
			case from != e.mark.From:
				return ""
			}
		}
	}
	if _, ok := idx[from]; !ok {
		return ""
	}
	return from
}
