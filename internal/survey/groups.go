package survey

import (
	"context"
	"maps"
	"slices"

	"github.com/kop-offsets/kop-offsets/internal/explain"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/match"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
)

// Where a group is known on one cluster.
const (
	WhereBoth      = "both"
	WhereCached    = "cached"
	WherePersisted = "persisted"
)

// GroupsReport is the document `groups -o json` prints.
type GroupsReport struct {
	SchemaVersion int `json:"schemaVersion"`
	// Tenants are the tenants of a multi-tenant report (each group row names its tenant).
	Tenants  []string        `json:"tenants,omitempty"`
	Clusters []string        `json:"clusters"`
	Groups   []GroupRow      `json:"groups"`
	Errors   []ClusterError  `json:"errors,omitempty"`
	ExitCode outcome.Outcome `json:"exitCode"`
}

// GroupRow is one group on every cluster.
type GroupRow struct {
	Tenant           string               `json:"tenant,omitempty"`
	Group            string               `json:"group"`
	OffsetsPartition int32                `json:"offsetsPartition"`
	Clusters         map[string]GroupCell `json:"clusters"`
}

// GroupCell is one group on one cluster. Absent from the map: the cluster does not know it.
type GroupCell struct {
	Where            string  `json:"where"`            // cached, persisted or both
	State            *string `json:"state"`            // as KoP describes it (cached side)
	Members          *int    `json:"members"`          // as KoP describes it
	PersistedState   *string `json:"persistedState"`   // what KoP would load: Empty or Stable
	PersistedOffsets int     `json:"persistedOffsets"` // number of persisted offsets
}

// Groups lists every group per cluster (KoP's ListGroups + DescribeGroups: the cached side)
// joined with the groups of the offsets topic (persisted side). Set Describe on the
// kop.Fetchers to get states and member counts.
func Groups(ctx context.Context, clusters []Cluster, groupGlobs []string, concurrency int) *GroupsReport {
	rep := &GroupsReport{SchemaVersion: 1, Groups: []GroupRow{}}
	states := make([]*clusterState, len(clusters))
	for i, c := range clusters {
		states[i] = &clusterState{c: c}
		rep.Clusters = append(rep.Clusters, c.Name)
	}
	if concurrency <= 0 {
		concurrency = 4
	}
	o := Options{Groups: groupGlobs, Concurrency: concurrency}
	parallel(states, func(s *clusterState) {
		s.readPersisted(ctx, o)
		if s.c.Fetcher != nil {
			s.listGroups(ctx)
		}
	})
	rows := map[string]*GroupRow{}
	row := func(g string) *GroupRow {
		if r, ok := rows[g]; ok {
			return r
		}
		r := &GroupRow{Group: g, OffsetsPartition: -1, Clusters: map[string]GroupCell{}}
		rows[g] = r
		return r
	}
	for _, s := range states {
		if s.pErr != nil {
			rep.Errors = append(rep.Errors, clusterErr(s.c, explain.Pulsar, s.pErr))
		}
		for _, err := range []error{s.cacheErr, s.listErr} {
			if err != nil {
				rep.Errors = append(rep.Errors, clusterErr(s.c, explain.Kafka, err))
			}
		}
		for _, v := range s.views() {
			for _, g := range v.Groups() {
				if !match.Any(groupGlobs, g.Group) {
					continue
				}
				r := row(g.Group)
				st := string(g.State)
				r.Clusters[s.c.Name] = GroupCell{Where: WherePersisted, PersistedState: &st, PersistedOffsets: g.Offsets}
			}
		}
		for _, g := range s.listed {
			if !match.Any(groupGlobs, g.Group) {
				continue
			}
			r := row(g.Group)
			cell := r.Clusters[s.c.Name]
			if cell.Where == WherePersisted {
				cell.Where = WhereBoth
			} else {
				cell.Where = WhereCached
			}
			if g.State != "" {
				st, m := g.State, g.Members
				cell.State, cell.Members = &st, &m
			}
			r.Clusters[s.c.Name] = cell
		}
	}
	for _, g := range slices.Sorted(maps.Keys(rows)) {
		r := rows[g]
		for _, s := range states {
			if s.partitions > 0 {
				r.OffsetsPartition = loader.PartitionFor(g, s.partitions)
				break
			}
		}
		rep.Groups = append(rep.Groups, *r)
	}
	if len(rep.Errors) > 0 {
		rep.ExitCode = outcome.Unreachable
	}
	return rep
}
