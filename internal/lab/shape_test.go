package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/config"
)

var testShapes = []Shape{{2, 1}, {2, 2}, {3, 1}, {3, 2}, {3, MaxBrokers}}

// TestPortLayoutOfEveryShape: no port is used twice within a lab of any shape, nor by two labs
// whose KOP_LAB_PORT_OFFSET differs by 10; the offset moves every port; broker i listens on
// broker 0's ports plus i; a standalone has no ZooKeeper port.
func TestPortLayoutOfEveryShape(t *testing.T) {
	for _, sh := range testShapes {
		t.Run(fmt.Sprintf("%dx%d", sh.Clusters, sh.Brokers), func(t *testing.T) {
			t.Setenv("KOP_LAB_PORT_OFFSET", "")
			base := ClustersFor(sh)
			t.Setenv("KOP_LAB_PORT_OFFSET", "100")
			moved := ClustersFor(sh)
			t.Setenv("KOP_LAB_PORT_OFFSET", "110")
			next := ClustersFor(sh)
			if got := strings.Join(ClusterNames(moved), ","); got != strings.Join([]string{"scus", "wus", "eus"}[:sh.Clusters], ",") {
				t.Fatalf("clusters %s", got)
			}
			seen := map[int]string{}
			for ci, c := range moved {
				if c.BrokerCount() != sh.Brokers || ShapeOf(moved) != sh {
					t.Fatalf("%s: %d brokers, shape %v", c.Name, c.BrokerCount(), ShapeOf(moved))
				}
				if (c.Ports.ZooKeeper == 0) != sh.Standalone() {
					t.Errorf("%s: ZooKeeper port %d in shape %v", c.Name, c.Ports.ZooKeeper, sh)
				}
				ports := c.AllPorts()
				want := 1 + 3*sh.Brokers
				if !sh.Standalone() {
					want++
				}
				if len(ports) != want {
					t.Errorf("%s: %d ports %v, want %d", c.Name, len(ports), ports, want)
				}
				for k, port := range ports {
					if b := base[ci].AllPorts()[k]; port != b+100 {
						t.Errorf("%s: port %d with offset 100, %d without", c.Name, port, b)
					}
					if other, dup := seen[port]; dup {
						t.Errorf("port %d used by %s and %s", port, other, c.Name)
					}
					seen[port] = c.Name
				}
				for i := 0; i < c.BrokerCount(); i++ {
					b := c.Broker(i)
					if b.Ports.Web != c.Ports.Web+i || b.Ports.Broker != c.Ports.Broker+i || b.Ports.Kafka != c.Ports.Kafka+i ||
						b.AdminURL != fmt.Sprintf("http://127.0.0.1:%d", c.Ports.Web+i) || b.KafkaBootstrap != fmt.Sprintf("127.0.0.1:%d", c.Ports.Kafka+i) ||
						b.ServiceURL != fmt.Sprintf("pulsar://127.0.0.1:%d", c.Ports.Broker+i) || b.Ports.Bookie != c.Ports.Bookie {
						t.Errorf("%s broker %d: %+v", c.Name, i, b)
					}
				}
			}
			for _, c := range next {
				for _, port := range c.AllPorts() {
					if other, dup := seen[port]; dup {
						t.Errorf("port %d of offset 110's %s is offset 100's %s", port, c.Name, other)
					}
				}
			}
		})
	}
}

func TestDefaultClustersAreTheDefaultShape(t *testing.T) {
	t.Setenv("KOP_LAB_PORT_OFFSET", "")
	cs := DefaultClusters()
	if ShapeOf(cs) != DefaultShape || !cs[0].Standalone() || cs[0].Ports.ZooKeeper != 0 {
		t.Fatalf("default clusters %+v", cs)
	}
	if cs[1].AdminURLs() != "http://127.0.0.1:28080" || cs[1].ServiceURLs() != "pulsar://127.0.0.1:26650" {
		t.Errorf("a standalone's multi-host URLs %s %s", cs[1].AdminURLs(), cs[1].ServiceURLs())
	}
	two := ClustersFor(Shape{Clusters: 2, Brokers: 2})
	if two[0].AdminURLs() != "http://127.0.0.1:18080,127.0.0.1:18081" || two[0].ServiceURLs() != "pulsar://127.0.0.1:16650,127.0.0.1:16651" ||
		strings.Join(two[0].KafkaBootstraps(), ",") != "127.0.0.1:19092,127.0.0.1:19093" {
		t.Errorf("scus of 2 brokers: %s %s %v", two[0].AdminURLs(), two[0].ServiceURLs(), two[0].KafkaBootstraps())
	}
}

func TestShapeFromEnv(t *testing.T) {
	for _, tc := range []struct {
		clusters, brokers string
		in, want          Shape
		bad               bool
	}{
		{"", "", Shape{}, DefaultShape, false},
		{"3", "2", Shape{}, Shape{3, 2}, false},
		{"3", "2", Shape{Clusters: 2}, Shape{2, 2}, false}, // a flag wins over the environment
		{"", "", Shape{Brokers: 4}, Shape{2, 4}, false},
		{"4", "", Shape{}, Shape{}, true},
		{"1", "", Shape{}, Shape{}, true},
		{"", "0x", Shape{}, Shape{}, true},
		{"", "11", Shape{}, Shape{}, true},
	} {
		t.Setenv("KOP_LAB_CLUSTERS", tc.clusters)
		t.Setenv("KOP_LAB_BROKERS", tc.brokers)
		got, err := shapeFromEnv(tc.in)
		if tc.bad != (err != nil) || !tc.bad && got != tc.want {
			t.Errorf("KOP_LAB_CLUSTERS=%q KOP_LAB_BROKERS=%q %+v: %+v %v", tc.clusters, tc.brokers, tc.in, got, err)
		}
	}
	t.Setenv("KOP_LAB_CLUSTERS", "3")
	t.Setenv("KOP_LAB_BROKERS", "2")
	t.Setenv("KOP_LAB_START_TIMEOUT", "") // the default is asserted, not the caller's setting
	o, err := Options{Root: t.TempDir()}.resolve()
	if err != nil || o.Shape != (Shape{3, 2}) || len(o.Clusters) != 3 || o.Clusters[2].BrokerCount() != 2 || o.StartTimeout != DefaultMultiStartTimeout {
		t.Errorf("resolved %+v %v", o, err)
	}
}

func readTemplate(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// writeTestFile writes content to path (mode 0644); the test stops when it cannot.
func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRenderMultiBrokerConfs: each role's configuration of a 2-broker cluster names its own
// ports and data, the brokers share the cluster's ZooKeeper, balance load, keep the bundles,
// and each KoP listens on its broker's own Kafka port.
func TestRenderMultiBrokerConfs(t *testing.T) {
	t.Setenv("KOP_LAB_PORT_OFFSET", "100")
	p := repoPaths(t)
	wus := ClustersFor(Shape{Clusters: 2, Brokers: 2})[1]
	wus.KoP = true

	zk, err := RenderServiceConf(readTemplate(t, p.ZooKeeperTemplate()), p, wus, RoleZooKeeper)
	if err != nil {
		t.Fatal(err)
	}
	want(t, "zookeeper", parseConf(t, zk), map[string]string{
		"clientPort": "22281", "clientPortAddress": "127.0.0.1", "admin.enableServer": "false",
		"dataDir": p.ProcessData("wus", "zookeeper"),
	})
	bk, err := RenderServiceConf(readTemplate(t, p.BookieTemplate()), p, wus, RoleBookie)
	if err != nil {
		t.Fatal(err)
	}
	want(t, "bookie", parseConf(t, bk), map[string]string{
		"bookiePort": "23281", "metadataServiceUri": "zk://127.0.0.1:22281/ledgers", "listeningInterface": "lo",
		"journalDirectories": p.ProcessData("wus", "bookie") + "/journal", "ledgerDirectories": p.ProcessData("wus", "bookie") + "/ledgers",
		"httpServerEnabled": "false", "dbStorage_writeCacheMaxSizeMb": "32",
	})
	tmpl := readTemplate(t, p.ConfTemplate())
	for i := 0; i < 2; i++ {
		out, err := RenderBrokerConfFor(tmpl, p, wus, i, DefaultPulsarVersion, KoPStatus{Version: "3.1.1.1", HandlerDir: "/nars"})
		if err != nil {
			t.Fatal(err)
		}
		m := parseConf(t, out)
		kafka := fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", 29192+i)
		want(t, fmt.Sprintf("broker-%d", i), m, map[string]string{
			"clusterName": "wus", "webServicePort": fmt.Sprint(28180 + i), "brokerServicePort": fmt.Sprint(26750 + i),
			"metadataStoreUrl": "zk:127.0.0.1:22281", "configurationMetadataStoreUrl": "zk:127.0.0.1:22281",
			"loadBalancerEnabled": "true", "loadBalancerAutoBundleSplitEnabled": "false", "defaultNumberOfNamespaceBundles": "4",
			"kafkaListeners": kafka, "kafkaAdvertisedListeners": kafka, "offsetsTopicNumPartitions": "8",
			"protocolHandlerDirectory": "/nars", "narExtractionDirectory": filepath.Join(p.ProcessTmp("wus", fmt.Sprintf("broker-%d", i)), "nar"),
			"replicationStartAt": "earliest", "managedLedgerDefaultEnsembleSize": "1",
		})
		for _, k := range []string{"loadManagerClassName", "allowEphemeralPorts", "listeningInterface", "dbStorage_writeCacheMaxSizeMb"} {
			if _, ok := m[k]; ok {
				t.Errorf("broker-%d: %s is set (a standalone's key)", i, k)
			}
		}
	}
	// The standalone keeps its layout: no ZooKeeper, the load balancer off, the bookie inside.
	sa := ClustersFor(DefaultShape)[1]
	out, err := RenderBrokerConf(tmpl, p, sa, DefaultPulsarVersion, KoPStatus{})
	if err != nil {
		t.Fatal(err)
	}
	want(t, "standalone", parseConf(t, out), map[string]string{
		"metadataStoreUrl": "", "loadBalancerEnabled": "false", "allowEphemeralPorts": "true", "webServicePort": "28180",
		"loadManagerClassName": "org.apache.pulsar.broker.loadbalance.NoopLoadManager",
	})
}

func want(t *testing.T, what string, m map[string]string, kv map[string]string) {
	t.Helper()
	for k, v := range kv {
		if got, ok := m[k]; !ok || got != v {
			t.Errorf("%s: %s=%q (set %v), want %q", what, k, got, ok, v)
		}
	}
}

func TestProcessArgs(t *testing.T) {
	t.Setenv("KOP_LAB_PORT_OFFSET", "")
	p := Paths{Root: "/repo"}
	scus := ClustersFor(Shape{Clusters: 2, Brokers: 2})[0]
	for _, tc := range []struct {
		role Role
		i    int
		want []string
	}{
		{RoleZooKeeper, 0, []string{"-Xmx128m", "-Dkop.lab.process=scus/zookeeper", "-Djava.io.tmpdir=/repo/lab/run/scus/tmp/zookeeper",
			"org.apache.zookeeper.server.quorum.QuorumPeerMain /repo/lab/run/scus/conf/zookeeper.conf"}},
		{RoleBookie, 0, []string{"-Xmx256m", "-Dkop.lab.process=scus/bookie", "org.apache.bookkeeper.server.Main --conf /repo/lab/run/scus/conf/bookie.conf"}},
		{RoleBroker, 1, []string{"-Xmx768m", "-Dkop.lab.process=scus/broker-1", "-Djava.io.tmpdir=/repo/lab/run/scus/tmp/broker-1",
			"org.apache.pulsar.PulsarBrokerStarter -c /repo/lab/run/scus/conf/broker-1.conf"}},
	} {
		joined := strings.Join(ProcessArgs(p, scus, tc.role, tc.i, "4.0.8"), " ")
		for _, w := range append(tc.want, ProcessMarker("scus"), "-cp /repo/lab/run/dist/apache-pulsar-4.0.8/lib/*") {
			if !strings.Contains(joined, w) {
				t.Errorf("%s %d: args lack %q:\n%s", tc.role, tc.i, w, joined)
			}
		}
	}
	setup := strings.Join(MetadataSetupArgs(p, scus, "4.0.8"), " ")
	for _, w := range []string{"org.apache.pulsar.PulsarClusterMetadataSetup --cluster scus --metadata-store zk:127.0.0.1:12181",
		"--configuration-metadata-store zk:127.0.0.1:12181", "--web-service-url http://127.0.0.1:18080,127.0.0.1:18081",
		"--broker-service-url pulsar://127.0.0.1:16650,127.0.0.1:16651", "--default-namespace-bundle-number 4"} {
		if !strings.Contains(setup, w) {
			t.Errorf("metadata setup lacks %q:\n%s", w, setup)
		}
	}
}

// TestStateRoundTripWithProcesses: the shape and every process survive the state file; a
// state written before processes were recorded reads as one standalone JVM per cluster.
func TestStateRoundTripWithProcesses(t *testing.T) {
	t.Setenv("KOP_LAB_PORT_OFFSET", "")
	path := filepath.Join(t.TempDir(), "state.json")
	sh := Shape{Clusters: 3, Brokers: 2}
	in := &State{PulsarVersion: DefaultPulsarVersion, Shape: sh, StartedAt: time.Unix(1700000000, 0).UTC()}
	for _, c := range ClustersFor(sh) {
		cs := ClusterState{Cluster: c}
		pid := 100
		for _, r := range []Role{RoleZooKeeper, RoleBookie} {
			cs.Processes = append(cs.Processes, ProcessState{Role: r, PID: pid, Ports: processPorts(c, r, 0)})
			pid++
		}
		for i := 0; i < 2; i++ {
			cs.Processes = append(cs.Processes, ProcessState{Role: RoleBroker, Index: i, PID: pid, Ports: processPorts(c, RoleBroker, i), ReadySeconds: 30})
			pid++
		}
		in.Clusters = append(in.Clusters, cs)
	}
	in.Clusters[2].Processes[3].Stopped = true
	if err := WriteState(path, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadState(path)
	if err != nil {
		t.Fatal(err)
	}
	if out.Shape != sh || len(out.Clusters) != 3 || ShapeOf(out.ClusterList()) != sh {
		t.Fatalf("shape %v, clusters %d", out.Shape, len(out.Clusters))
	}
	ps, ok := out.Process("eus", RoleBroker, 1)
	if !ok || !ps.Stopped || ps.PID != 103 || ps.ID() != "broker-1" || fmt.Sprint(ps.Ports) != "[38081 36651 39093]" {
		t.Errorf("eus broker-1: %+v %v", ps, ok)
	}
	if zk, _ := out.Process("wus", RoleZooKeeper, 0); zk == nil || fmt.Sprint(zk.Ports) != "[22181]" {
		t.Errorf("wus zookeeper: %+v", zk)
	}

	old := `{"version": 1, "pulsarVersion": "4.0.8", "clusters": [{"name": "scus", "ports": {"web": 18080, "broker": 16650, "bookie": 13181, "kafka": 19092}, "pid": 42, "logPath": "/l"}]}`
	writeTestFile(t, path, old)
	out, err = ReadState(path)
	if err != nil {
		t.Fatal(err)
	}
	if p := out.Clusters[0].Processes; len(p) != 1 || p[0].Role != RoleStandalone || p[0].PID != 42 || p[0].LogPath != "/l" ||
		out.Shape != (Shape{Clusters: 1, Brokers: 1}) {
		t.Errorf("old state read as %+v, shape %v", p, out.Shape)
	}
}

// TestShapeMismatchRestarts: a running lab is reused only for the shape it was started with;
// another broker count, cluster count, port offset or Pulsar version makes Up restart it.
func TestShapeMismatchRestarts(t *testing.T) {
	t.Setenv("KOP_LAB_PORT_OFFSET", "")
	stateOf := func(sh Shape) *State {
		st := &State{PulsarVersion: DefaultPulsarVersion, Shape: sh}
		for _, c := range ClustersFor(sh) {
			// The test process stands in for every JVM: alive, but not a lab JVM.
			st.Clusters = append(st.Clusters, ClusterState{Cluster: c, Processes: []ProcessState{{Role: RoleBroker, PID: os.Getpid()}}})
		}
		return st
	}
	opts := func(sh Shape) Options {
		return Options{PulsarVersion: DefaultPulsarVersion, KoP: KoPOff, Clusters: ClustersFor(sh)}
	}
	two := Shape{Clusters: 2, Brokers: 2}
	if !sameShape(stateOf(two), opts(two)) {
		t.Fatal("the same shape is not the same")
	}
	for _, other := range []Shape{{2, 1}, {3, 2}, {2, 3}} {
		if sameShape(stateOf(two), opts(other)) || reusable(stateOf(two), opts(other)) {
			t.Errorf("a lab of %v reused for %v", two, other)
		}
	}
	o := opts(two)
	o.PulsarVersion = "3.3.6"
	if sameShape(stateOf(two), o) {
		t.Error("another Pulsar version reused")
	}
	unmoved := stateOf(two)
	t.Setenv("KOP_LAB_PORT_OFFSET", "100")
	if sameShape(unmoved, opts(two)) {
		t.Error("another port offset reused")
	}
	t.Setenv("KOP_LAB_PORT_OFFSET", "")
	// Same shape, but a process is not a live lab JVM (or was stopped by StopBroker): restart.
	if reusable(stateOf(two), opts(two)) {
		t.Error("a lab whose JVMs are not lab JVMs reused")
	}
}

// parsedCLIConfig renders config.yaml of cs with KoP 3.1.1.1 and parses it as kop-offsets
// does; whose names the lab in the failure ("the lab's").
func parsedCLIConfig(t *testing.T, cs []Cluster, whose string) (*config.Config, []byte) {
	t.Helper()
	out, err := RenderCLIConfig(cs, DefaultPulsarVersion, KoPStatus{Enabled: true, Version: "3.1.1.1"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(out, "config.yaml")
	if err != nil {
		t.Fatalf("kop-offsets rejects %s config: %v\n%s", whose, err, out)
	}
	return cfg, out
}

// TestCLIConfigOfMultiBrokerLab: config.yaml of a 2-broker lab lists every broker's Kafka
// listener and binary port, points adminURL at broker 0 (it takes one URL), and passes
// kop-offsets' own validation.
func TestCLIConfigOfMultiBrokerLab(t *testing.T) {
	t.Setenv("KOP_LAB_PORT_OFFSET", "100")
	cs := ClustersFor(Shape{Clusters: 3, Brokers: 2})
	cfg, out := parsedCLIConfig(t, cs, "the lab's")
	if len(cfg.Clusters) != 3 {
		t.Fatalf("%d clusters", len(cfg.Clusters))
	}
	e := cfg.Clusters[2]
	if e.Name != "eus" || e.AdminURL != "http://127.0.0.1:38180" || e.ServiceURL != "pulsar://127.0.0.1:36750,127.0.0.1:36751" ||
		strings.Join(e.KafkaBootstrap, ",") != "127.0.0.1:39192,127.0.0.1:39193" {
		t.Errorf("eus: %+v", e)
	}
	if !strings.Contains(string(out), "adminURL takes one URL: broker 0's") {
		t.Errorf("config.yaml does not say adminURL is broker 0's:\n%s", out)
	}
}
