package survey

import (
	"slices"
	"sync"

	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// Report is the document `check -o json` prints (cli.md: "A check row").
type Report struct {
	SchemaVersion int            `json:"schemaVersion"`
	Clusters      []string       `json:"clusters"`
	Source        *string        `json:"source"`
	Rows          []verdict.Row  `json:"rows"`
	Errors        []ClusterError `json:"errors,omitempty"`
	// Unread are the clusters nothing could be read from (neither the offsets topic nor
	// KoP): their rows are missing, not in agreement.
	Unread []string `json:"unread,omitempty"`
	// Unserved are the offsets partitions KoP does not serve on a cluster (every group of
	// them gets NOT_COORDINATOR or "loading" for the whole --coordinator-wait), apart from
	// the rows they leave coordinator_unavailable.
	Unserved []UnservedPartition `json:"unserved,omitempty"`
	Warnings []string            `json:"warnings,omitempty"`
	Summary  map[string]int      `json:"summary"`
	ExitCode outcome.Outcome     `json:"exitCode"`
}

// UnservedPartition is an offsets partition KoP does not serve on one cluster.
type UnservedPartition struct {
	Cluster          string `json:"cluster"`
	OffsetsPartition int32  `json:"offsetsPartition"`
	// Answer is what KoP kept answering for a probe group of the partition.
	Answer string `json:"answer"`
	// Owner is the broker that owns the partition's bundle (none: no broker owns it; the
	// next lookup assigns it), when it could be read.
	Owner string `json:"owner,omitempty"`
	Fix   string `json:"fix"`
}

var reportMu sync.Mutex

func (r *Report) addErr(e ClusterError) {
	reportMu.Lock()
	defer reportMu.Unlock()
	r.Errors = append(r.Errors, e)
}

func (r *Report) addWarning(w string) {
	reportMu.Lock()
	defer reportMu.Unlock()
	r.Warnings = append(r.Warnings, w)
	slices.Sort(r.Warnings)
}
