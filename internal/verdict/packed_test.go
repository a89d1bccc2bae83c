package verdict

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
	"github.com/kop-offsets/kop-offsets/internal/output"
)

// TestPackedRowsRebuildExactly: every kind of cell the engine builds (numbers only, a
// pending transactional commit, an expiry, an error, alignment, a lag that does not follow
// from the numbers, a time not in UTC) comes back from Pack equal, and so do rows that do not
// pack at all (an unknown status, a topic not named as displayNS names it).
func TestPackedRowsRebuildExactly(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	f64 := func(v float64) *float64 { return &v }
	at := output.NewTime(offsetlog.Millis(1_800_000_000_123).Time())
	const nowMs, expireMs = 1_800_000_100_000, 1_800_000_200_500
	expire := output.NewTime(time.UnixMilli(expireMs))
	j := &Judge{Now: time.UnixMilli(nowMs), DisplayNamespace: "public/default"}
	full := "persistent://public/default/orders"
	cells := [][]Cell{
		{{Cluster: "scus", Cached: i64(5), Persisted: i64(7), LogEndOffset: i64(9), Lag: i64(4), CommitTimestamp: at, Status: StatusStaleCache},
			{Cluster: "wus", Persisted: i64(7), LogEndOffset: i64(3), Lag: i64(0), Status: StatusOK}},
		{{Cluster: "scus", Status: StatusMissing}, {Cluster: "wus", Cached: i64(1), Status: StatusOK}},
		{{Cluster: "scus", Persisted: i64(8), Predicted: &Prediction{Offset: i64(7), Reason: "pending"}, Status: StatusStaleCache},
			{Cluster: "wus", Persisted: i64(2), ExpireTimestamp: expire, ExpiresIn: f64(-3.5), Detail: "expired", Status: StatusExpired}},
		{{Cluster: "scus", Persisted: i64(8), ExpireTimestamp: expire, ExpiresIn: f64(float64(expireMs-nowMs) / 1000), Status: StatusExpiring},
			{Cluster: "wus", Persisted: i64(2), ExpireTimestamp: expire, ExpiresIn: f64(1), Status: StatusOK}},
		{{Cluster: "scus", Error: "cluster down", Status: StatusError},
			{Cluster: "wus", Persisted: i64(2), Origin: "scus", Translated: i64(3), Alignment: "aligned", Status: StatusOK}},
		{{Cluster: "scus", Cached: i64(5), LogEndOffset: i64(9), Lag: i64(1), Status: StatusOK},
			{Cluster: "wus", CommitTimestamp: output.NewTime(time.UnixMilli(5).In(time.FixedZone("x", 3600))), Status: StatusOK}},
	}
	var rows []Row
	for p, cs := range cells {
		rows = append(rows, Row{Group: "g", Topic: "orders", Partition: int32(p), OffsetsPartition: 4, Status: StatusStaleCache, fullTopic: full, Cells: cs})
	}
	clusters := []string{"scus", "wus"}
	packs := map[string][]Row{"packs": rows}
	odd := append([]Row(nil), rows...)
	odd[1].Status = "unknown"
	packs["unknown status"] = odd
	odd = append([]Row(nil), rows...)
	odd[3].Topic = full
	packs["topic in another namespace"] = odd
	for name, rs := range packs {
		p := Pack(rs, clusters, j)
		if p.Len() != len(rs) || p.Group() != "g" {
			t.Fatalf("%s: %d rows of %q", name, p.Len(), p.Group())
		}
		got := slices.Collect(p.Rows(clusters, "public/default"))
		if len(got) != len(rs) {
			t.Fatalf("%s: %d rows rebuilt, want %d", name, len(got), len(rs))
		}
		for i := range rs {
			if !reflect.DeepEqual(got[i], rs[i]) {
				t.Errorf("%s: row %d:\ngot  %s\nwant %s", name, i, encode(t, got[i], false), encode(t, rs[i], false))
			}
		}
		var statuses []Status
		for _, r := range rs {
			statuses = append(statuses, r.Status)
		}
		if st := slices.Collect(p.Statuses()); !slices.Equal(st, statuses) {
			t.Errorf("%s: statuses %v, want %v", name, st, statuses)
		}
		if ts := p.Topics(); !slices.Equal(ts, []string{full}) {
			t.Errorf("%s: topics %v", name, ts)
		}
		// The caller's rows: changing one changes no later rebuild.
		got[0].Cells[0].Status = "changed"
		if again := slices.Collect(p.Rows(clusters, "public/default")); !reflect.DeepEqual(again[0], rs[0]) {
			t.Errorf("%s: a rebuilt row changed with the copy an earlier call returned", name)
		}
		// Kept whole: the prediction, the expired cell's detail, alignment, an expiresInSeconds
		// that does not follow, a lag that does not follow, a time not in UTC (the error packs).
		if name == "packs" && (p.rare == nil || p.rare.whole != nil || len(p.rare.cells) != 6 || !slices.Equal(p.rare.errs, []string{"cluster down"})) {
			t.Errorf("packs: rare %+v, want 6 cells kept whole and the error of one", p.rare)
		}
	}
	// Numbers of every size and sign come back (varints, deltas).
	for _, v := range []int64{0, 1, -1, 127, 128, -129, 1 << 40, -(1 << 40), 1<<63 - 1, -1 << 63} {
		c := Cell{Cluster: "scus", Cached: i64(v), Persisted: i64(-v), LogEndOffset: i64(v / 3), Lag: i64(max(v/3-v, 0)),
			CommitTimestamp: output.NewTime(offsetlog.Millis(v / 1000).Time()), Status: StatusOK}
		r := Row{Group: "g", Topic: "orders", OffsetsPartition: 4, Status: StatusOK, fullTopic: full, Cells: []Cell{c}}
		p := Pack([]Row{r}, []string{"scus"}, j)
		if got := slices.Collect(p.Rows([]string{"scus"}, "public/default")); !reflect.DeepEqual(got, []Row{r}) {
			t.Errorf("%d: got %s", v, encode(t, got, false))
		}
		if p.rare != nil {
			t.Errorf("%d: kept whole", v)
		}
	}
}

// TestPackedRowsSame: rows packed again from the same numbers are the same (watch keeps the
// older copy), at another time too; a changed number, status or expiry, or rows kept whole,
// are not.
func TestPackedRowsSame(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	full := "persistent://public/default/orders"
	row := func(cached int64, st Status, expire *output.Time, expiresIn *float64) []Row {
		return []Row{{Group: "g", Topic: "orders", Partition: 1, OffsetsPartition: 4, Status: st, fullTopic: full,
			Cells: []Cell{{Cluster: "scus", Cached: i64(cached), Persisted: i64(7), Status: st, ExpireTimestamp: expire, ExpiresIn: expiresIn}}}}
	}
	clusters := []string{"scus"}
	at := func(ms int64) *Judge { return &Judge{Now: time.UnixMilli(ms), DisplayNamespace: "public/default"} }
	base := Pack(row(7, StatusOK, nil, nil), clusters, at(1_000))
	expire := output.NewTime(time.UnixMilli(10_000))
	in := func(nowMs int64) *float64 { v := float64(10_000-nowMs) / 1000; return &v }
	withError := func(cached int64, err string) *PackedRows {
		rs := row(cached, StatusError, nil, nil)
		rs[0].Cells[0].Error = err
		return Pack(rs, clusters, at(1_000))
	}
	for _, tc := range []struct {
		name string
		a, b *PackedRows
		want bool
	}{
		{"same numbers", base, Pack(row(7, StatusOK, nil, nil), clusters, at(1_000)), true},
		{"same numbers, later", base, Pack(row(7, StatusOK, nil, nil), clusters, at(9_000)), true},
		{"another cached offset", base, Pack(row(6, StatusOK, nil, nil), clusters, at(1_000)), false},
		{"another status", base, Pack(row(7, StatusStaleCache, nil, nil), clusters, at(1_000)), false},
		{"an expiry, the same time", Pack(row(7, StatusOK, expire, in(1_000)), clusters, at(1_000)),
			Pack(row(7, StatusOK, expire, in(1_000)), clusters, at(1_000)), true},
		{"an expiry, later", Pack(row(7, StatusOK, expire, in(1_000)), clusters, at(1_000)),
			Pack(row(7, StatusOK, expire, in(2_000)), clusters, at(2_000)), true},
		{"another expiry", Pack(row(7, StatusOK, expire, in(1_000)), clusters, at(1_000)),
			Pack(row(7, StatusOK, output.NewTime(time.UnixMilli(11_000)), in(0)), clusters, at(1_000)), false},
		{"kept whole", Pack(row(7, "unknown", nil, nil), clusters, at(1_000)), Pack(row(7, "unknown", nil, nil), clusters, at(1_000)), false},
		{"the same error", withError(7, "down"), withError(7, "down"), true},
		{"another error", withError(7, "down"), withError(7, "not replayed"), false},
		{"none", base, nil, false},
	} {
		if got := tc.a.Same(tc.b); got != tc.want {
			t.Errorf("%s: Same %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestShareTopics: rows of two groups on the same topics keep one list of them; a pool at its
// bound keeps its own list and adds none.
func TestShareTopics(t *testing.T) {
	j := &Judge{Now: time.UnixMilli(1_000), DisplayNamespace: "public/default"}
	pack := func(group string, topics ...string) *PackedRows {
		var rows []Row
		for _, tp := range topics {
			rows = append(rows, Row{Group: group, Topic: tp, fullTopic: "persistent://public/default/" + tp,
				Cells: []Cell{{Cluster: "scus", Status: StatusOK}}, Status: StatusOK})
		}
		return Pack(rows, []string{"scus"}, j)
	}
	pool := map[string][]string{}
	a, b, c := pack("a", "t1", "t2"), pack("b", "t1", "t2"), pack("c", "t3")
	for _, p := range []*PackedRows{a, b, c} {
		p.ShareTopics(pool, 1)
	}
	if &a.topics[0] != &b.topics[0] || len(pool) != 1 {
		t.Errorf("a and b keep their own lists (pool %v)", pool)
	}
	if !slices.Equal(c.Topics(), []string{"persistent://public/default/t3"}) || len(pool) != 1 {
		t.Errorf("c's topics %v, pool %v", c.Topics(), pool)
	}
	if rs := slices.Collect(b.Rows([]string{"scus"}, "public/default")); len(rs) != 2 || rs[1].Topic != "t2" {
		t.Errorf("b's rows %+v", rs)
	}
}

// TestPackedRowsRandomRoundTrip: random groups of rows (each number and time present or
// not, times repeated or not from cell to cell, some cells that do not pack) come back from
// Pack exactly.
func TestPackedRowsRandomRoundTrip(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	j := &Judge{Now: time.UnixMilli(1_800_000_000_000), DisplayNamespace: "public/default"}
	clusters := []string{"scus", "wus", "eus"}
	maybe := func(v int64) *int64 {
		if rnd.IntN(4) == 0 {
			return nil
		}
		return &v
	}
	times := []int64{1_800_000_000_000, 1_799_999_000_123, 5, 1_800_000_000_000}
	for n := range 500 {
		var rows []Row
		for i := range rnd.IntN(8) + 1 {
			r := Row{Group: "g", Topic: fmt.Sprintf("t%d", rnd.IntN(3)), Partition: int32(i), OffsetsPartition: 2, Status: StatusOK}
			r.fullTopic = "persistent://public/default/" + r.Topic
			for _, cl := range clusters {
				c := Cell{Cluster: cl, Cached: maybe(rnd.Int64N(1 << 50)), Persisted: maybe(rnd.Int64N(1 << 50)),
					LogEndOffset: maybe(rnd.Int64N(1 << 50)), Status: Statuses[rnd.IntN(len(Statuses))]}
				c.Lag = (&packedCell{cached: deref(c.Cached), persisted: deref(c.Persisted), logEnd: deref(c.LogEndOffset),
					has: bit(c.Cached, hasCached) | bit(c.Persisted, hasPersisted) | bit(c.LogEndOffset, hasLogEnd)}).lag()
				if rnd.IntN(4) > 0 {
					c.CommitTimestamp = output.NewTime(offsetlog.Millis(times[rnd.IntN(len(times))]).Time())
				}
				if rnd.IntN(3) > 0 {
					ms := times[rnd.IntN(len(times))] + int64(rnd.IntN(2))*259_200_000
					c.ExpireTimestamp = output.NewTime(time.UnixMilli(ms))
					in := float64(ms-j.Now.UnixMilli()) / 1000
					c.ExpiresIn = &in
				}
				switch rnd.IntN(10) {
				case 0:
					c.Detail = "kept whole"
				case 1, 2:
					c.Error = []string{"offsets partition not replayed yet", "cluster down", "KoP: NOT_COORDINATOR"}[rnd.IntN(3)]
				}
				r.Cells = append(r.Cells, c)
			}
			rows = append(rows, r)
		}
		p := Pack(rows, clusters, j)
		if got := slices.Collect(p.Rows(clusters, "public/default")); !reflect.DeepEqual(got, rows) {
			t.Fatalf("group %d:\ngot  %s\nwant %s", n, encode(t, got, false), encode(t, rows, false))
		}
	}
}

func deref(v *int64) int64 {
	if v == nil {
		return 0
	}
	return *v
}

func bit(v *int64, b uint8) uint8 {
	if v == nil {
		return 0
	}
	return b
}
