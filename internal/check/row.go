package check

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/kop-offsets/kop-offsets/internal/offsets"
	"github.com/kop-offsets/kop-offsets/internal/output"
)

// Row is one group/topic/partition.
type Row struct {
	Group            string         `json:"group"`
	Topic            string         `json:"topic"`
	Partition        int32          `json:"partition"`
	OffsetsPartition int32          `json:"offsetsPartition"`
	Status           offsets.Status `json:"status"`
	// Cells are the row on each cluster, in the order of the report's clusters. JSON writes
	// them as the object "clusters", keyed by cluster name: a slice costs a row a fraction
	// of a map.
	Cells []Cell `json:"-"`

	fullTopic string
}

// FullTopic is the row's topic in KoP's full name ("" for a row read from JSON).
func (r Row) FullTopic() string { return r.fullTopic }

// Cell returns the row's cell on cluster (the zero Cell when the row has none).
func (r Row) Cell(cluster string) Cell {
	c, _ := r.Lookup(cluster)
	return c
}

// Lookup returns the row's cell on cluster.
func (r Row) Lookup(cluster string) (Cell, bool) {
	for _, c := range r.Cells {
		if c.Cluster == cluster {
			return c, true
		}
	}
	return Cell{}, false
}

// Cell is one row on one cluster.
type Cell struct {
	// Cluster names the cluster (the key of the cell in JSON).
	Cluster string `json:"-"`
	Cached  *int64 `json:"cached"`
	// Persisted is what the offsets topic holds: the loader's value, or a newer
	// transactional commit whose COMMIT marker the loader cannot see.
	Persisted *int64 `json:"persisted"`
	// Predicted is what KoP would serve after a load, present only where it differs from
	// Persisted.
	Predicted       *Prediction    `json:"predicted,omitempty"`
	CommitTimestamp *output.Time   `json:"commitTimestamp"`
	ExpireTimestamp *output.Time   `json:"expireTimestamp,omitempty"`
	ExpiresIn       *float64       `json:"expiresInSeconds,omitempty"` // negative: expired
	LogEndOffset    *int64         `json:"logEndOffset"`
	Lag             *int64         `json:"lag"`
	Status          offsets.Status `json:"status"`
	Error           string         `json:"error,omitempty"`
	// Detail says why for unloadable, misaligned, cache_ahead and expired.
	Detail string `json:"detail,omitempty"`
	// Origin is the cluster the persisted commit was replicated from (absent: written on
	// this cluster): its offset counts in Origin's numbering of the topic.
	Origin string `json:"origin,omitempty"`
	// Translated is the persisted offset in this cluster's numbering (the first message the
	// group has not consumed on Origin), present when Origin is set and alignment is known.
	Translated *int64 `json:"translated,omitempty"`
	// Alignment explains Translated, or why alignment is unknown.
	Alignment string `json:"alignment,omitempty"`
}

// Prediction is what KoP's loader would serve after a load of the row's offsets partition.
type Prediction struct {
	Offset *int64 `json:"offset"` // null: nothing
	Reason string `json:"reason"`
}

// rowJSON is the JSON shape of a Row.
type rowJSON struct {
	Group            string         `json:"group"`
	Topic            string         `json:"topic"`
	Partition        int32          `json:"partition"`
	OffsetsPartition int32          `json:"offsetsPartition"`
	Status           offsets.Status `json:"status"`
	Clusters         cellsJSON      `json:"clusters"`
}

// cellsJSON writes cells as an object keyed by cluster name, keys sorted as encoding/json
// sorts a map's (the shape a map of cells had).
type cellsJSON []Cell

// MarshalJSON implements json.Marshaler.
func (cs cellsJSON) MarshalJSON() ([]byte, error) {
	order := make([]int, len(cs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(cs[a].Cluster, cs[b].Cluster) })
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // the caller's encoder escapes, or not, as it was told
	buf.WriteByte('{')
	for n, i := range order {
		if n > 0 {
			buf.WriteByte(',')
		}
		if err := enc.Encode(cs[i].Cluster); err != nil {
			return nil, err
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
		buf.WriteByte(':')
		if err := enc.Encode(&cs[i]); err != nil {
			return nil, err
		}
		buf.Truncate(buf.Len() - 1)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// MarshalJSON implements json.Marshaler: cells as the object "clusters".
func (r Row) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rowJSON{r.Group, r.Topic, r.Partition, r.OffsetsPartition, r.Status, cellsJSON(r.Cells)}); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON implements json.Unmarshaler: cells sorted by cluster name.
func (r *Row) UnmarshalJSON(b []byte) error {
	var v struct {
		rowJSON
		Clusters map[string]Cell `json:"clusters"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*r = Row{Group: v.Group, Topic: v.Topic, Partition: v.Partition, OffsetsPartition: v.OffsetsPartition, Status: v.Status}
	for _, name := range slices.Sorted(mapKeys(v.Clusters)) {
		c := v.Clusters[name]
		c.Cluster = name
		r.Cells = append(r.Cells, c)
	}
	return nil
}
