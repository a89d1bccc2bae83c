package survey

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// statsServer is a Pulsar admin API whose topic stats list one replicator, keyed by the
// remote's Pulsar name, with backlog.
func statsServer(t *testing.T, remote string, backlog int64) *pulsarx.Admin {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/stats") {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"replication": map[string]any{
			remote: map[string]any{"replicationBacklog": backlog, "connected": true}}})
	}))
	t.Cleanup(srv.Close)
	a, err := pulsarx.NewAdminWithTransport("east", srv.URL, http.DefaultTransport)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestReplicationLagUnderPulsarNames: the config calls the clusters east and west, Pulsar
// scus and wus; east's replicator toward wus has a backlog. The stats are keyed by Pulsar's
// name, the engine looks them up by the config's: without the translation (Names) the backlog
// is not found and the lag reads as diverged.
func TestReplicationLagUnderPulsarNames(t *testing.T) {
	p := loader.PartitionFor("g", 8)
	east := fakes.NewMemReader(8).Commit(commit("g", 0, 20))
	west := fakes.NewMemReader(8).Commit(commit("g", 0, 10))
	names := map[string]string{"scus": "east", "wus": "west"}
	src := AdminReplication{Admin: statsServer(t, "wus", 4), OffsetsTopic: pulsarx.OffsetsTopic("public", "__kafka"), Names: names}
	st, err := src.OutboundReplication(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if st["west"] != (verdict.Inbound{Backlog: 4, Connected: true}) || len(st) != 1 {
		t.Fatalf("stats under config names: %+v", st)
	}
	rep, err := Run(context.Background(), []Cluster{
		{Name: "east", Reader: east, Replication: src},
		{Name: "west", Reader: west, Replication: StaticReplication{}},
	}, Options{Now: testNow, Source: "east"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 1 || rep.Rows[0].Status != verdict.StatusReplicationLag || rep.Rows[0].Cell("west").Status != verdict.StatusReplicationLag {
		t.Errorf("want replication_lag: %+v", rep.Rows)
	}
}

func TestConfigName(t *testing.T) {
	names := map[string]string{"scus": "east"}
	if ConfigName(names, "scus") != "east" || ConfigName(names, "other") != "other" || ConfigName(nil, "x") != "x" {
		t.Error("ConfigName")
	}
}
