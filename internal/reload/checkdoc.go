package reload

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// CheckDocument is the part of `check -o json` (cli.md, "A check row") that
// reload --from-check reads from a file: the stale_cache rows of one cluster. In-process,
// repair takes the survey's rows as values instead.
type CheckDocument struct {
	SchemaVersion int        `json:"schemaVersion"`
	Clusters      []string   `json:"clusters"`
	Rows          []CheckRow `json:"rows"`
	// Unserved are the offsets partitions KoP does not serve (check's "unserved").
	Unserved []CheckUnserved `json:"unserved,omitempty"`
	ExitCode outcome.Outcome `json:"exitCode"`
}

// CheckUnserved is an offsets partition KoP does not serve on one cluster.
type CheckUnserved struct {
	Cluster          string `json:"cluster"`
	OffsetsPartition int32  `json:"offsetsPartition"`
	Answer           string `json:"answer"`
}

// UnservedOn returns the unserved offsets partitions of cluster.
func (d *CheckDocument) UnservedOn(cluster string) []int32 {
	var out []int32
	for _, u := range d.Unserved {
		if u.Cluster == cluster {
			out = append(out, u.OffsetsPartition)
		}
	}
	return out
}

// CheckRow is one group/topic/partition row of a check.
type CheckRow struct {
	Group            string               `json:"group"`
	Topic            string               `json:"topic"`
	Partition        int32                `json:"partition"`
	OffsetsPartition int32                `json:"offsetsPartition"`
	Status           verdict.Status       `json:"status"`
	Clusters         map[string]CheckCell `json:"clusters"`
}

// CheckCell is a row on one cluster.
type CheckCell struct {
	Cached    *int64         `json:"cached"`
	Persisted *int64         `json:"persisted"`
	Status    verdict.Status `json:"status"`
	Error     string         `json:"error,omitempty"`
	Detail    string         `json:"detail,omitempty"`
}

// ParseCheckDocument reads a `check -o json` document (schemaVersion 1).
func ParseCheckDocument(r io.Reader) (*CheckDocument, error) {
	var d CheckDocument
	dec := json.NewDecoder(r)
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("not a check -o json document: %w", err)
	}
	if d.SchemaVersion != 1 {
		return nil, fmt.Errorf("check document has schemaVersion %d, want 1", d.SchemaVersion)
	}
	return &d, nil
}

// Stale reports whether the row is stale_cache on cluster: its cell says so, or (for a
// document without per-cluster statuses) the row does and the cell's cached value differs
// from its persisted one.
func (r CheckRow) Stale(cluster string) bool {
	c, ok := r.Clusters[cluster]
	if !ok {
		return false
	}
	if c.Status != "" {
		return c.Status == verdict.StatusStaleCache
	}
	if r.Status != verdict.StatusStaleCache {
		return false
	}
	switch {
	case c.Cached == nil && c.Persisted == nil:
		return false
	case c.Cached == nil || c.Persisted == nil:
		return true
	}
	return *c.Cached != *c.Persisted
}

// CellStatus is the row's status on cluster (the row status when the cell has none).
func (r CheckRow) CellStatus(cluster string) verdict.Status {
	if c, ok := r.Clusters[cluster]; ok && c.Status != "" {
		return c.Status
	}
	return r.Status
}

// StaleGroups returns, sorted, the groups with a stale_cache row on cluster.
func (d *CheckDocument) StaleGroups(cluster string) []string {
	var out []string
	for _, r := range d.Rows {
		if r.Stale(cluster) {
			out = append(out, r.Group)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
