package verdict

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/output"
)

// mapRow is the shape Row had, a map of cells: its JSON is the contract.
type mapRow struct {
	Group            string          `json:"group"`
	Topic            string          `json:"topic"`
	Partition        int32           `json:"partition"`
	OffsetsPartition int32           `json:"offsetsPartition"`
	Status           Status          `json:"status"`
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
		r := Row{Group: group, Topic: "topic<1>", Partition: 3, OffsetsPartition: -1, Status: StatusStaleCache,
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

// TestRowJSONIndentIsEncodingJSON: every field of a cell, set or not, is written as
// encoding/json and json.Indent write the map shape, compact and at the report's indent.
func TestRowJSONIndentIsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	i64 := func() *int64 {
		if r.IntN(3) == 0 {
			return nil
		}
		v := r.Int64N(1<<50) - 1<<20
		return &v
	}
	str := func() string { return []string{"", "plain", `q"uote`, "a<b>", "nl\nx", "ü"}[r.IntN(6)] }
	tm := func() *output.Time {
		switch r.IntN(3) {
		case 0:
			return nil
		case 1:
			return &output.Time{} // the zero time: null
		}
		return output.NewTime(time.UnixMilli(r.Int64N(4102444800000)))
	}
	for n := range 3000 {
		row := Row{Group: str() + "g", Topic: "t" + str(), Partition: r.Int32N(100), OffsetsPartition: r.Int32N(50) - 1,
			Status: StatusStaleCache}
		for _, name := range []string{"wus", "scus", "eus"}[:1+r.IntN(3)] {
			c := Cell{Cluster: name, Cached: i64(), Persisted: i64(), CommitTimestamp: tm(), LogEndOffset: i64(), Lag: i64(),
				Status: StatusOK, Error: str(), Detail: str(), Origin: str(), Translated: i64(), Alignment: str()}
			if r.IntN(2) == 0 {
				c.ExpireTimestamp = tm()
				if c.ExpireTimestamp != nil {
					f := []float64{-86400.5, 0, 0.001, 1e-7, 604800, 1.5e21}[r.IntN(6)]
					c.ExpiresIn = &f
				}
			}
			if r.IntN(3) == 0 {
				c.Predicted = &Prediction{Offset: i64(), Reason: str()}
			}
			row.Cells = append(row.Cells, c)
		}
		m := mapRow{row.Group, row.Topic, row.Partition, row.OffsetsPartition, row.Status, map[string]Cell{}}
		for _, c := range row.Cells {
			m.Clusters[c.Cluster] = c
		}
		compact := bytes.TrimSuffix([]byte(encode(t, m, false)), []byte("\n"))
		var indented bytes.Buffer
		if err := json.Indent(&indented, compact, "    ", "  "); err != nil {
			t.Fatal(err)
		}
		if got, err := row.AppendJSON(nil); err != nil || !bytes.Equal(got, compact) {
			t.Fatalf("row %d compact (%v):\ngot  %s\nwant %s", n, err, got, compact)
		}
		if got, err := row.AppendJSONIndent(nil, "    ", "  "); err != nil || !bytes.Equal(got, indented.Bytes()) {
			t.Fatalf("row %d indented (%v):\ngot  %s\nwant %s", n, err, got, indented.Bytes())
		}
	}
}
