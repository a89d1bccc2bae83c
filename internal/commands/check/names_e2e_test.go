//go:build e2e

package check

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// labNames are the config names of the lab's clusters in TestE2EConfigNamesDifferFromPulsar.
var labNames = map[string]string{"scus": "east", "wus": "west"}

// writeNamedConfig writes a config for the lab that calls scus "east" and wus "west";
// mapped adds pulsarCluster: scus / wus.
func (e *e2eLab) writeNamedConfig(t *testing.T, ns string, mapped bool) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("clusters:\n")
	for _, n := range []string{"scus", "wus"} {
		c := e.l.Cluster(n)
		fmt.Fprintf(&b, "  - name: %s\n    adminURL: %s\n    serviceURL: %s\n    kafkaBootstrap: [%q]\n    tenant: public\n    metadataNamespace: %s\n",
			labNames[n], c.AdminURL, c.ServiceURL, c.KafkaBootstrap, ns)
		if mapped {
			fmt.Fprintf(&b, "    pulsarCluster: %s\n", n)
		}
	}
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestE2EConfigNamesDifferFromPulsar: the config calls the lab's clusters east and west,
// Pulsar calls them scus and wus (issue 21). Without pulsarCluster, check refuses the config
// (exit 2) naming both names and the fix. With it, a real replication backlog from scus to
// wus is found under the config's names: the row is replication_lag, not diverged (before
// the mapping, the backlog was looked up as "west" in stats keyed "wus" and not found).
func TestE2EConfigNamesDifferFromPulsar(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	nsLocal, ns, topic := e.ownNamespace(t, "kop-e2e-names")

	f, s := clitest.NewFactory("test", false)
	r := clitest.Run(ctx, clitest.NewTestRoot(f, NewCmdCheck(f, nil)), s,
		"--config", e.writeNamedConfig(t, nsLocal, false), "--timeout", "5s", "check", "--persisted-only", "-o", "json")
	msg := fmt.Sprint(r.Err)
	if r.Code != 2 || !strings.Contains(msg, `Pulsar calls this cluster "scus"`) || !strings.Contains(msg, `expects "east"`) ||
		!strings.Contains(msg, "pulsarCluster: scus") {
		t.Fatalf("unmapped names: exit %d, error %v, stderr %s", r.Code, r.Err, r.ErrOut)
	}
	t.Logf("unmapped: exit %d: %v", r.Code, r.Err)

	group := "renamed-lag-group"
	_, partTopic, w := e.commitOne(t, topic, group, 10)
	e.waitReplicated(t, partTopic, time.Minute)
	cfg := e.writeNamedConfig(t, nsLocal, true)
	rep, code, _ := runCheck(t, cfg, "--persisted-only", "--source", "east")
	if r, _ := cell(t, rep, group, "west"); code != 0 || r.Status != verdict.StatusOK || val(r.Cell("west").Persisted) != "10" {
		t.Fatalf("before: exit %d %+v", code, rep.Rows)
	}

	backlog, _ := e.commitUnderBacklog(t, w, ns, partTopic, group)
	rep, code, _ = runCheck(t, cfg, "--persisted-only", "--source", "east")
	row, east := cell(t, rep, group, "east")
	west := row.Cell("west")
	if code != 1 || row.Status != verdict.StatusReplicationLag || west.Status != verdict.StatusReplicationLag ||
		val(east.Persisted) != "40" || *west.Persisted >= 40 {
		t.Errorf("lag under config names: exit %d row %+v east %+v west %+v (backlog %d)", code, row, east, west, backlog)
	}
	t.Logf("lag: east (scus) persisted %s, west (wus) persisted %s, status %s, backlog %d", val(east.Persisted), val(west.Persisted), row.Status, backlog)
}
