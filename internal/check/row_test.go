package check

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/offsets"
)

// mapRow is the shape Row had, a map of cells: its JSON is the contract.
type mapRow struct {
	Group            string          `json:"group"`
	Topic            string          `json:"topic"`
	Partition        int32           `json:"partition"`
	OffsetsPartition int32           `json:"offsetsPartition"`
	Status           offsets.Status  `json:"status"`
	Clusters         map[string]Cell `json:"clusters"`
}

func encode(t *testing.T, v any, escapeHTML bool) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestRowJSONIsTheMapShape: a row's cells, in any order, are written as the map of cells was,
// with names that need escaping, with and without HTML escaping, and read back.
func TestRowJSONIsTheMapShape(t *testing.T) {
	v := int64(7)
	for _, group := range []string{"orders", "a<b>&c", "é\"\\\n\t\u2028\x01", "\xff"} {
		r := Row{Group: group, Topic: "topic<1>", Partition: 3, OffsetsPartition: -1, Status: offsets.StatusStaleCache,
			Cells: []Cell{{Cluster: "wus", Cached: &v, Detail: "x < y & z"}, {Cluster: "scus", Persisted: &v}, {Cluster: "a&b"}}}
		m := mapRow{r.Group, r.Topic, r.Partition, r.OffsetsPartition, r.Status, map[string]Cell{}}
		for _, c := range r.Cells {
			m.Clusters[c.Cluster] = c
		}
		for _, esc := range []bool{true, false} {
			if got, want := encode(t, r, esc), encode(t, m, esc); got != want {
				t.Errorf("escapeHTML %v:\ngot  %s\nwant %s", esc, got, want)
			}
		}
		var back Row
		if err := json.Unmarshal([]byte(encode(t, r, false)), &back); err != nil {
			t.Fatal(err)
		}
		if back.Cell("wus").Detail != "x < y & z" || *back.Cell("scus").Persisted != 7 || len(back.Cells) != 3 {
			t.Errorf("read back %+v", back)
		}
	}
}
