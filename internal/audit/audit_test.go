package audit

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/reload"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

type memSink struct {
	mu   sync.Mutex
	recs []Record
}

func (m *memSink) Write(r Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs = append(m.recs, r)
	return nil
}

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func plan() *reload.Plan {
	return &reload.Plan{Cluster: "wus", RequestedGroups: []string{"orders"}, Bundles: []reload.PlannedBundle{
		{Range: "0x00000000_0x40000000", OffsetsPartitions: []int32{1, 5}, Groups: []string{"orders", "billing"}},
		{Range: "0x40000000_0x80000000", OffsetsPartitions: []int32{2}, Groups: []string{"other"}},
	}}
}

func TestAdminRecordsUnloadsAndLookupsWithTheirPlan(t *testing.T) {
	sink := &memSink{}
	who := Who{Host: "h", User: "u", PID: 7, Command: "kop-offsets repair --yes"}
	clock := t0
	adm := fakes.NewAdmin("wus")
	adm.UnloadErr["0x00000000_0x40000000"] = errors.New("503 busy")
	a := Admin{BundleAdmin: adm, Cluster: "wus", Who: who, Sink: sink,
		Now: func() time.Time { clock = clock.Add(250 * time.Millisecond); return clock }}
	ctx := WithWhy(context.Background(), Why{Reason: "repair: stale_cache rows", Plan: plan()})
	if err := a.UnloadBundle(ctx, "public/__kafka", "0x00000000_0x40000000"); err == nil {
		t.Fatal("the unload's error was swallowed")
	}
	if _, err := a.LookupOwner(ctx, "persistent://public/__kafka/__consumer_offsets-partition-5"); err != nil {
		t.Fatal(err)
	}
	if bs, err := a.Bundles(context.Background(), "public/__kafka"); err != nil || len(bs) != len(adm.BundleList) || len(adm.Calls()) != 3 {
		t.Fatalf("a read did not pass through: %v %v", bs, err)
	}
	if len(sink.recs) != 2 {
		t.Fatalf("records %+v", sink.recs)
	}
	u, l := sink.recs[0], sink.recs[1]
	if u.Action != ActionUnload || u.Cluster != "wus" || u.Bundle != "0x00000000_0x40000000" || u.Namespace != "public/__kafka" ||
		u.Result != ResultError || u.Error != "503 busy" || u.Reason != "repair: stale_cache rows" || u.DurationMs != 250 ||
		strings.Join(u.Groups, ",") != "orders,billing" || strings.Join(u.RequestedGroups, ",") != "orders" || u.Who != who {
		t.Errorf("unload record %+v", u)
	}
	if l.Action != ActionLookup || l.Bundle != "0x00000000_0x40000000" || l.Owner != "pulsar://broker-1:6650" || l.Result != ResultOK ||
		strings.Join(l.Groups, ",") != "orders,billing" {
		t.Errorf("lookup record %+v", l)
	}
}

// The unload of a part of a planned bundle split since the plan carries the planned
// bundle's groups.
func TestAdminRecordsThePlannedGroupsOfASplitPart(t *testing.T) {
	sink := &memSink{}
	a := Admin{BundleAdmin: fakes.NewAdmin("wus"), Cluster: "wus", Sink: sink, Now: func() time.Time { return t0 }}
	ctx := WithWhy(context.Background(), Why{Reason: "repair", Plan: plan()})
	if err := a.UnloadBundle(ctx, "public/__kafka", "0x00000000_0x40000000"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.BundleAdmin.(*fakes.Admin).Split("0x00000000_0x40000000"); err != nil {
		t.Fatal(err)
	}
	if err := a.UnloadBundle(ctx, "public/__kafka", "0x20000000_0x40000000"); err != nil {
		t.Fatal(err)
	}
	if len(sink.recs) != 2 || strings.Join(sink.recs[1].Groups, ",") != "orders,billing" || sink.recs[1].Bundle != "0x20000000_0x40000000" {
		t.Errorf("records %+v", sink.recs)
	}
}

func TestAdminWithoutWhyStillRecords(t *testing.T) {
	sink := &memSink{}
	a := Admin{BundleAdmin: fakes.NewAdmin("scus"), Cluster: "scus", Sink: sink}
	if err := a.UnloadBundle(context.Background(), "public/__kafka", "0x00000000_0x40000000"); err != nil {
		t.Fatal(err)
	}
	if len(sink.recs) != 1 || sink.recs[0].Groups == nil || sink.recs[0].Result != ResultOK {
		t.Errorf("%+v", sink.recs)
	}
}

// fakeCommits answers each request with partition 3, or err for the groups in fail.
type fakeCommits struct{ fail map[string]error }

func (f fakeCommits) CommitRequests(_ context.Context, reqs [][]kop.OffsetCommit) []kop.Sent {
	out := make([]kop.Sent, len(reqs))
	for i, cs := range reqs {
		out[i] = kop.Sent{Partition: 3, Err: f.fail[cs[0].Group]}
	}
	return out
}

func TestCommitsRecordsEachRequest(t *testing.T) {
	sink := &memSink{}
	c := Commits{CommitWriter: fakeCommits{fail: map[string]error{"bad": errors.New("producer closed")}}, Cluster: "wus",
		Topic: "persistent://public/__kafka/__consumer_offsets", Reason: "failover: translated offsets", Sink: sink}
	sent := c.CommitRequests(context.Background(), [][]kop.OffsetCommit{{
		{Group: "orders", Topic: "persistent://public/default/t", Partition: 0, Offset: 42},
		{Group: "orders", Topic: "persistent://public/default/t", Partition: 1, Offset: 7},
	}, {{Group: "bad"}}})
	if len(sent) != 2 || sent[0].Err != nil || sent[1].Err == nil || len(sink.recs) != 2 {
		t.Fatalf("sent %+v, %d records", sent, len(sink.recs))
	}
	r := sink.recs[0]
	if r.Action != ActionCommit || r.Topic != "persistent://public/__kafka/__consumer_offsets-partition-3" ||
		len(r.Offsets) != 2 || r.Offsets[0].Offset != 42 || strings.Join(r.Groups, ",") != "orders" || r.Reason != "failover: translated offsets" {
		t.Errorf("%+v", r)
	}
	if r := sink.recs[1]; r.Result != ResultError || r.Topic != "" || r.Error != "producer closed" || r.Groups[0] != "bad" {
		t.Errorf("%+v", r)
	}
}

func TestFileAppendsAndReadFilters(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state", "audit.jsonl")
	f := &File{Path: p}
	if err := f.Open(); err != nil {
		t.Fatal(err)
	}
	recs := []Record{
		{Cluster: "wus", Action: ActionUnload, Groups: []string{"orders", "billing"}},
		{Cluster: "scus", Action: ActionUnload, Groups: []string{"orders"}},
		{Cluster: "wus", Action: ActionCommit, Groups: []string{}, Offsets: []Offset{{Group: "payments"}}},
	}
	for i, r := range recs {
		finish(&r, t0, t0.Add(time.Duration(i)*time.Hour), nil)
		if err := f.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// A second process appends to the same file.
	g := &File{Path: p}
	r := Record{Cluster: "wus", Action: ActionLookup}
	finish(&r, t0, t0.Add(5*time.Hour), nil)
	if err := g.Write(r); err != nil {
		t.Fatal(err)
	}
	_ = g.Close()

	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		f    Filter
		want int
	}{
		"all":           {Filter{}, 4},
		"cluster":       {Filter{Clusters: []string{"wus"}}, 3},
		"group":         {Filter{Groups: []string{"orders"}}, 2},
		"group glob":    {Filter{Groups: []string{"pay*"}}, 1},
		"since":         {Filter{Since: t0.Add(90 * time.Minute)}, 2},
		"cluster+group": {Filter{Clusters: []string{"scus"}, Groups: []string{"billing"}}, 0},
	} {
		got, err := Read(bytes.NewReader(b), tc.f)
		if err != nil || len(got) != tc.want {
			t.Errorf("%s: %d records, %v; want %d", name, len(got), err, tc.want)
		}
	}
	if _, err := Read(strings.NewReader("{}\nnot json\n"), Filter{}); !errors.Is(err, ErrBadLine) || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad line: %v", err)
	}
}

func TestOpenFailsEarly(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f := &File{Path: filepath.Join(blocker, "audit.jsonl")}
	if err := f.Open(); err == nil || !strings.Contains(err.Error(), "audit file") {
		t.Errorf("open under a file: %v", err)
	}
}

func TestDefaultFile(t *testing.T) {
	env := map[string]string{"XDG_STATE_HOME": "/state"}
	if got := DefaultFile(func(k string) string { return env[k] }); got != "/state/kop-offsets/audit.jsonl" {
		t.Errorf("%s", got)
	}
	env[EnvFile] = "/var/log/kop.jsonl"
	if got := DefaultFile(func(k string) string { return env[k] }); got != "/var/log/kop.jsonl" {
		t.Errorf("%s", got)
	}
}

func TestSelf(t *testing.T) {
	w := Self()
	if w.PID != os.Getpid() || w.Host == "" || w.Command == "" {
		t.Errorf("%+v", w)
	}
}
