package verdict

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/kop-offsets/kop-offsets/internal/output"
)

// Row is one group/topic/partition.
type Row struct {
	// Tenant is the row's tenant in a multi-tenant report (its group lives in that tenant's
	// offsets topic); empty otherwise.
	Tenant           string `json:"tenant,omitempty"`
	Group            string `json:"group"`
	Topic            string `json:"topic"`
	Partition        int32  `json:"partition"`
	OffsetsPartition int32  `json:"offsetsPartition"`
	Status           Status `json:"status"`
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
	Predicted       *Prediction  `json:"predicted,omitempty"`
	CommitTimestamp *output.Time `json:"commitTimestamp"`
	ExpireTimestamp *output.Time `json:"expireTimestamp,omitempty"`
	ExpiresIn       *float64     `json:"expiresInSeconds,omitempty"` // negative: expired
	LogEndOffset    *int64       `json:"logEndOffset"`
	Lag             *int64       `json:"lag"`
	Status          Status       `json:"status"`
	Error           string       `json:"error,omitempty"`
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
	// Follow is, in a sync or kept deployment, the group's newest own commit (made on
	// another cluster) and its translation here: what this cluster should hold.
	Follow *Follow `json:"follow,omitempty"`
}

// Follow is the commit a cluster follows in a sync or kept deployment.
type Follow struct {
	Cluster         string       `json:"cluster"` // where the group made its newest own commit
	Offset          int64        `json:"offset"`  // that commit, in Cluster's numbering
	CommitTimestamp *output.Time `json:"commitTimestamp"`
	Translated      int64        `json:"translated"` // in this cluster's numbering
}

// Prediction is what KoP's loader would serve after a load of the row's offsets partition.
type Prediction struct {
	Offset *int64 `json:"offset"` // null: nothing
	Reason string `json:"reason"`
}

// rowJSON is the JSON shape of a Row (for reading it back).
type rowJSON struct {
	Tenant           string `json:"tenant,omitempty"`
	Group            string `json:"group"`
	Topic            string `json:"topic"`
	Partition        int32  `json:"partition"`
	OffsetsPartition int32  `json:"offsetsPartition"`
	Status           Status `json:"status"`
}

// MarshalJSON implements json.Marshaler: cells as the object "clusters", keyed by cluster
// name in encoding/json's order of map keys (the shape a map of cells had).
func (r Row) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil) }

// AppendJSON appends the row's compact JSON to dst, HTML characters unescaped (an encoder
// with SetEscapeHTML(false) writes it as is).
func (r *Row) AppendJSON(dst []byte) ([]byte, error) {
	return r.AppendJSONIndent(dst, "", "")
}

// AppendJSONIndent appends the row's JSON as json.Indent would indent its compact form
// (compact with an empty indent): a million rows are written without encoding/json's
// reflection and without a second, indenting pass.
func (r *Row) AppendJSONIndent(dst []byte, prefix, indent string) ([]byte, error) {
	w := output.JSONWriter{B: dst, Prefix: prefix, Indent: indent}
	w.Open()
	if r.Tenant != "" {
		w.String("tenant", r.Tenant)
	}
	w.String("group", r.Group)
	w.String("topic", r.Topic)
	w.Int("partition", int64(r.Partition))
	w.Int("offsetsPartition", int64(r.OffsetsPartition))
	w.String("status", string(r.Status))
	w.Key("clusters")
	w.Open()
	r.byCluster(func(c *Cell) {
		w.Key(c.Cluster)
		c.write(&w)
	})
	w.Close()
	w.Close()
	return w.B, w.Err()
}

// byCluster calls fn for the cells in cluster-name order (stable, as a map's keys sort).
func (r *Row) byCluster(fn func(*Cell)) {
	var buf [8]int
	order := buf[:0]
	for i := range r.Cells {
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(r.Cells[a].Cluster, r.Cells[b].Cluster) })
	for _, i := range order {
		fn(&r.Cells[i])
	}
}

// write writes the cell's fields in the order and with the omissions of its struct tags.
func (c *Cell) write(w *output.JSONWriter) {
	w.Open()
	w.IntPtr("cached", c.Cached)
	w.IntPtr("persisted", c.Persisted)
	if c.Predicted != nil {
		w.Key("predicted")
		w.Open()
		w.IntPtr("offset", c.Predicted.Offset)
		w.String("reason", c.Predicted.Reason)
		w.Close()
	}
	writeTime(w, "commitTimestamp", c.CommitTimestamp)
	if c.ExpireTimestamp != nil {
		writeTime(w, "expireTimestamp", c.ExpireTimestamp)
	}
	if c.ExpiresIn != nil {
		w.Float("expiresInSeconds", *c.ExpiresIn)
	}
	w.IntPtr("logEndOffset", c.LogEndOffset)
	w.IntPtr("lag", c.Lag)
	w.String("status", string(c.Status))
	for _, f := range [...]struct{ k, v string }{{"error", c.Error}, {"detail", c.Detail}, {"origin", c.Origin}} {
		if f.v != "" {
			w.String(f.k, f.v)
		}
	}
	if c.Translated != nil {
		w.Int("translated", *c.Translated)
	}
	if c.Alignment != "" {
		w.String("alignment", c.Alignment)
	}
	if f := c.Follow; f != nil {
		w.Key("follow")
		w.Open()
		w.String("cluster", f.Cluster)
		w.Int("offset", f.Offset)
		writeTime(w, "commitTimestamp", f.CommitTimestamp)
		w.Int("translated", f.Translated)
		w.Close()
	}
	w.Close()
}

func writeTime(w *output.JSONWriter, k string, t *output.Time) {
	if t == nil {
		w.Null(k)
		return
	}
	w.Time(k, t.Time)
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
	*r = Row{Tenant: v.Tenant, Group: v.Group, Topic: v.Topic, Partition: v.Partition, OffsetsPartition: v.OffsetsPartition, Status: v.Status}
	for _, name := range slices.Sorted(maps.Keys(v.Clusters)) {
		c := v.Clusters[name]
		c.Cluster = name
		r.Cells = append(r.Cells, c)
	}
	return nil
}
