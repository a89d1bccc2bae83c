package lab

import (
	"strings"
	"testing"
)

// A standalone's broker 0 is its one JVM (stop-broker/start-broker restart the whole
// cluster); it has no other broker.
func TestBrokerProcessStandalone(t *testing.T) {
	p := Paths{Root: t.TempDir()}
	st := &State{PulsarVersion: DefaultPulsarVersion}
	for _, c := range DefaultClusters() {
		st.Clusters = append(st.Clusters, ClusterState{Cluster: c, PID: 4242,
			Processes: []ProcessState{{Role: RoleStandalone, PID: 4242, LogPath: p.LogFile(c.Name)}}})
	}
	if err := WriteState(p.StateFile(), st); err != nil {
		t.Fatal(err)
	}
	_, ps, err := brokerProcess(p, "wus", 0)
	if err != nil || ps.Role != RoleStandalone || ps.PID != 4242 {
		t.Fatalf("wus broker 0: %+v %v", ps, err)
	}
	if _, _, err := brokerProcess(p, "wus", 1); err == nil || !strings.Contains(err.Error(), "standalone") {
		t.Errorf("wus broker 1 of a standalone: %v", err)
	}
	if ps.alive("wus") {
		t.Error("pid 4242 taken for the lab's JVM")
	}
}
