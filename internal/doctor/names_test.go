package doctor

import (
	"context"
	"strings"
	"testing"
)

// The config calls scus "east" and says nothing of Pulsar's name: doctor names both and the
// fix; with pulsarCluster: scus it is quiet.
func TestClusterNameMismatch(t *testing.T) {
	run := func(configPulsarName string) *Report {
		east, wus := cluster(healthy("scus")), cluster(healthy("wus"))
		east.Name, east.ConfigPulsarName = "east", configPulsarName
		wus.ConfigPulsarName = "wus"
		return Run(context.Background(), Options{Clusters: []*Cluster{east, wus}, Kafka: &fakeKafka{}, ReplicatorSettle: -1})
	}
	f := wantOne(t, run("east"), SeverityError, CheckClusterName, "east", "pulsarCluster: scus")
	if !strings.Contains(f.Message, `"scus"`) || !strings.Contains(f.Message, `"east"`) || f.Evidence["clusterName"] != "scus" {
		t.Errorf("%+v", f)
	}
	if fs := only(run("scus"), SeverityError, CheckClusterName); len(fs) != 0 {
		t.Errorf("mapped: %+v", fs)
	}
	if fs := only(run(""), SeverityError, CheckClusterName); len(fs) != 0 {
		t.Errorf("ad hoc: %+v", fs)
	}
}
