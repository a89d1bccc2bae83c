package check

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
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

// rowJSON is the JSON shape of a Row (for reading it back).
type rowJSON struct {
	Group            string         `json:"group"`
	Topic            string         `json:"topic"`
	Partition        int32          `json:"partition"`
	OffsetsPartition int32          `json:"offsetsPartition"`
	Status           offsets.Status `json:"status"`
}

// MarshalJSON implements json.Marshaler: cells as the object "clusters", keyed by cluster
// name in encoding/json's order of map keys (the shape a map of cells had).
func (r Row) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil) }

// AppendJSON appends the row's compact JSON to dst, HTML characters unescaped (an encoder
// that escapes them does so when it copies a marshaller's output). A check of a million rows
// writes each with it: the row's own fields are appended directly, each cell is encoded once.
func (r *Row) AppendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"group":`...)
	dst = appendString(dst, r.Group)
	dst = append(dst, `,"topic":`...)
	dst = appendString(dst, r.Topic)
	dst = append(dst, `,"partition":`...)
	dst = strconv.AppendInt(dst, int64(r.Partition), 10)
	dst = append(dst, `,"offsetsPartition":`...)
	dst = strconv.AppendInt(dst, int64(r.OffsetsPartition), 10)
	dst = append(dst, `,"status":`...)
	dst = appendString(dst, string(r.Status))
	dst = append(dst, `,"clusters":{`...)
	order := make([]int, len(r.Cells))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(r.Cells[a].Cluster, r.Cells[b].Cluster) })
	buf := bytes.NewBuffer(dst)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	for n, i := range order {
		if n > 0 {
			buf.WriteByte(',')
		}
		buf.Write(appendString(buf.AvailableBuffer(), r.Cells[i].Cluster))
		buf.WriteByte(':')
		if err := enc.Encode(&r.Cells[i]); err != nil {
			return nil, err
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
	}
	buf.WriteString("}}")
	return buf.Bytes(), nil
}

// appendString appends s as a JSON string as encoding/json writes it without HTML escaping:
// directly when nothing in it needs escaping, else through encoding/json.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(s) // a string always encodes
			return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
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
