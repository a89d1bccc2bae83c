// Package lab starts, checks and stops the project's lab: real Apache Pulsar clusters (scus and
// wus, and eus with three) on 127.0.0.1, geo-replicated in a full mesh, each a standalone or
// (Shape.Brokers >= 2) a ZooKeeper, a bookie and several brokers, with the KoP protocol
// handler wired in and switched on when a KoP NAR is brought (KOP_NAR) or resolves from Maven.
//
// The artifacts come from lab/pom.xml (Maven, into ~/.m2), the broker configuration from
// lab/conf/broker.conf.tmpl, and everything a run creates lives under lab/run/ (git-ignored):
//
//	lab/run/dist/apache-pulsar-<v>/   the unpacked distribution (+ .version marker)
//	lab/run/protocols/                the KoP NAR when Maven resolves it, and the probe result
//	lab/run/protocols/byo/            the NAR brought with KOP_NAR (a link or a copy)
//	lab/run/<cluster>/conf/           rendered broker.conf (standalone), or zookeeper.conf,
//	                                  bookie.conf and broker-<i>.conf (several brokers)
//	lab/run/<cluster>/data/           RocksDB metadata store and bookie data, or zookeeper/ and
//	                                  bookie/; the layout marker and metadata-initialized
//	lab/run/<cluster>/logs/           broker.log, or one <process>.log each: stdout and stderr
//	lab/run/<cluster>/tmp/            java.io.tmpdir (RocksDB JNI, NAR extraction), per process
//	lab/run/state.json                pids and what was started
//	lab/run/config.yaml               a kop-offsets config for both clusters
//	lab/run/lab.lock, users.lock      flock files (one start per go test run)
package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Versions the lab defaults to. DefaultPulsarVersion must match lab/pom.xml's pulsar.version;
// PULSAR_VERSION picks another served version of org.apache.pulsar:pulsar-server-distribution
// (a KoP NAR is built for one Pulsar line).
const (
	DefaultPulsarVersion = "4.0.8"
	DefaultKoPVersion    = "4.0.6.5"
	ModulePath           = "github.com/kop-offsets/kop-offsets"
)

// Names of the things the lab creates on both clusters.
const (
	Tenant                 = "public"
	MetadataNamespace      = "public/__kafka"
	DefaultNamespace       = "public/default"
	OffsetsTopic           = "persistent://public/__kafka/__consumer_offsets"
	OffsetsTopicPartitions = 8
	MetadataBundles        = 4
	// KoP's defaults for the metadata namespace it creates: offsetsRetentionMinutes (3 days)
	// with no size limit, and a 100 MB compaction threshold.
	MetadataRetentionMinutes    = 3 * 24 * 60
	MetadataCompactionThreshold = int64(100 * 1024 * 1024)
	MetadataMessageTTLSeconds   = 3 * 24 * 3600 // offsetsMessageTTL
	Topic1                      = "persistent://public/default/topic-1"
	Topic1Partitions            = 1
)

// Ports of one cluster; all listen on 127.0.0.1 (the bookie too: its configuration pins it to
// the loopback interface with listeningInterface=lo). Web, Broker and Kafka are broker 0's;
// broker i of a multi-broker cluster listens on each plus i (Cluster.Brokers).
type Ports struct {
	Web    int `json:"web"`    // HTTP: admin REST API (webServicePort)
	Broker int `json:"broker"` // Pulsar binary protocol (brokerServicePort)
	Bookie int `json:"bookie"` // the bookie (standalone: in-process, --bookkeeper-port)
	Kafka  int `json:"kafka"`  // KoP listener; only bound when KoP is on
	// ZooKeeper is the metadata store's client port of a multi-broker cluster; 0 for a
	// standalone (RocksDB metadata store inside the standalone JVM).
	ZooKeeper int `json:"zookeeper,omitempty"`
}

// Broker is one broker of a cluster: its own web, binary and Kafka ports.
type Broker struct {
	Index          int    `json:"index"`
	Web            int    `json:"web"`
	Service        int    `json:"service"`
	Kafka          int    `json:"kafka"`
	AdminURL       string `json:"adminURL"`
	ServiceURL     string `json:"serviceURL"`
	KafkaBootstrap string `json:"kafkaBootstrap"`
	// WebTLS and ServiceTLS are the broker's TLS ports on an auth lab (withAuth), 0 without.
	WebTLS     int `json:"webTls,omitempty"`
	ServiceTLS int `json:"serviceTls,omitempty"`
}

// Cluster is one cluster of the lab: a standalone, or (Brokers longer than 1) a ZooKeeper, a
// bookie and several brokers. AdminURL, ServiceURL and KafkaBootstrap are broker 0's.
type Cluster struct {
	Name           string   `json:"name"`
	Ports          Ports    `json:"ports"`
	AdminURL       string   `json:"adminURL"`       // http://127.0.0.1:<web>
	ServiceURL     string   `json:"serviceURL"`     // pulsar://127.0.0.1:<broker>
	KafkaBootstrap string   `json:"kafkaBootstrap"` // 127.0.0.1:<kafka>
	KoP            bool     `json:"kop"`            // KoP handler loaded in this cluster
	Brokers        []Broker `json:"brokers,omitempty"`
	// Auth is set on a lab with auth (KOP_LAB_AUTH=token): TLS endpoints and token files.
	Auth *ClusterAuth `json:"auth,omitempty"`
}

// Host is the only address the lab uses.
const Host = "127.0.0.1"

// NewCluster builds a one-broker (standalone) Cluster with URLs derived from its ports.
func NewCluster(name string, p Ports) Cluster { return newCluster(name, p, 1) }

// newCluster builds a Cluster of n brokers: broker i listens on p.Web+i, p.Broker+i and
// p.Kafka+i.
func newCluster(name string, p Ports, n int) Cluster {
	c := Cluster{
		Name:           name,
		Ports:          p,
		AdminURL:       fmt.Sprintf("http://%s:%d", Host, p.Web),
		ServiceURL:     fmt.Sprintf("pulsar://%s:%d", Host, p.Broker),
		KafkaBootstrap: fmt.Sprintf("%s:%d", Host, p.Kafka),
	}
	for i := 0; i < n; i++ {
		b := Broker{Index: i, Web: p.Web + i, Service: p.Broker + i, Kafka: p.Kafka + i}
		b.AdminURL = fmt.Sprintf("http://%s:%d", Host, b.Web)
		b.ServiceURL = fmt.Sprintf("pulsar://%s:%d", Host, b.Service)
		b.KafkaBootstrap = fmt.Sprintf("%s:%d", Host, b.Kafka)
		c.Brokers = append(c.Brokers, b)
	}
	return c
}

// Standalone reports whether the cluster runs as one standalone JVM (one broker, in-process
// bookie, RocksDB metadata store).
func (c Cluster) Standalone() bool { return len(c.Brokers) <= 1 }

// BrokerCount is the number of brokers (1 for a standalone).
func (c Cluster) BrokerCount() int { return max(len(c.Brokers), 1) }

// Broker returns a view of the cluster through broker i alone: AdminURL, ServiceURL,
// KafkaBootstrap and the web, binary and Kafka ports are that broker's. CheckHealth and the
// Kafka helpers take it to talk to one broker.
func (c Cluster) Broker(i int) Cluster {
	if i == 0 && len(c.Brokers) == 0 {
		return c
	}
	b := c.Brokers[i]
	v := c
	v.Ports.Web, v.Ports.Broker, v.Ports.Kafka = b.Web, b.Service, b.Kafka
	v.AdminURL, v.ServiceURL, v.KafkaBootstrap = b.AdminURL, b.ServiceURL, b.KafkaBootstrap
	if c.Auth != nil {
		v.Auth = c.Auth.forBroker(b)
	}
	return v
}

// KafkaBootstraps lists every broker's Kafka listener.
func (c Cluster) KafkaBootstraps() []string {
	if len(c.Brokers) == 0 {
		return []string{c.KafkaBootstrap}
	}
	out := make([]string, len(c.Brokers))
	for i, b := range c.Brokers {
		out[i] = b.KafkaBootstrap
	}
	return out
}

// AdminURLs is every broker's web service as one multi-host URL (http://h:p1,h:p2), the form
// Pulsar takes for a cluster's serviceUrl; ServiceURLs is the same for the binary protocol.
// Other clusters' replicators and lookups then reach this cluster while any broker is up.
func (c Cluster) AdminURLs() string { return multiHost("http", c, func(b Broker) int { return b.Web }) }

// ServiceURLs is every broker's binary protocol as one multi-host URL (see AdminURLs).
func (c Cluster) ServiceURLs() string {
	return multiHost("pulsar", c, func(b Broker) int { return b.Service })
}

func multiHost(scheme string, c Cluster, port func(Broker) int) string {
	bs := c.Brokers
	if len(bs) == 0 {
		bs = []Broker{{Web: c.Ports.Web, Service: c.Ports.Broker}}
	}
	hosts := make([]string, len(bs))
	for i, b := range bs {
		hosts[i] = fmt.Sprintf("%s:%d", Host, port(b))
	}
	return scheme + "://" + strings.Join(hosts, ",")
}

// DefaultClusters is the lab's default port layout: two standalones, scus in 1xxxx and wus in
// 2xxxx, each port moved by $KOP_LAB_PORT_OFFSET (default 0) so that a second checkout can
// run its own lab beside this one (the two still share the machine's 2 cores).
func DefaultClusters() []Cluster { return ClustersFor(Shape{Clusters: 2, Brokers: 1}) }

// clusterBases are the ports of each cluster's first broker before the offset: the cluster's
// digit leads every port (scus 1xxxx, wus 2xxxx, eus 3xxxx). Broker i adds i; the offset is a
// multiple of 10 and MaxBrokers is 10, so two labs of different offsets never share a port.
var clusterBases = []struct {
	name  string
	ports Ports
}{
	{"scus", Ports{Web: 18080, Broker: 16650, Bookie: 13181, Kafka: 19092, ZooKeeper: 12181}},
	{"wus", Ports{Web: 28080, Broker: 26650, Bookie: 23181, Kafka: 29092, ZooKeeper: 22181}},
	{"eus", Ports{Web: 38080, Broker: 36650, Bookie: 33181, Kafka: 39092, ZooKeeper: 32181}},
}

// ClustersFor returns the clusters of shape s (which must be valid): the first s.Clusters of
// scus, wus, eus, each with s.Brokers brokers, ports moved by PortOffset. A standalone has no
// ZooKeeper port.
func ClustersFor(s Shape) []Cluster {
	off := PortOffset()
	var out []Cluster
	for _, b := range clusterBases[:s.Clusters] {
		p := b.ports
		p = Ports{Web: p.Web + off, Broker: p.Broker + off, Bookie: p.Bookie + off, Kafka: p.Kafka + off, ZooKeeper: p.ZooKeeper + off}
		if s.Brokers <= 1 {
			p.ZooKeeper = 0
		}
		out = append(out, newCluster(b.name, p, max(s.Brokers, 1)))
	}
	return out
}

// AllPorts lists every port of the cluster: each broker's web, binary and Kafka port, the
// bookie's and, when it has one, ZooKeeper's.
func (c Cluster) AllPorts() []int {
	ps := []int{c.Ports.Bookie}
	if c.Ports.ZooKeeper != 0 {
		ps = append(ps, c.Ports.ZooKeeper)
	}
	for i := 0; i < c.BrokerCount(); i++ {
		b := c.Broker(i)
		ps = append(ps, b.Ports.Web, b.Ports.Broker, b.Ports.Kafka)
		ps = append(ps, authPorts(b)...)
	}
	return ps
}

// PortOffset is $KOP_LAB_PORT_OFFSET: a multiple of 10 from 0 to 990, else 0 with a warning.
func PortOffset() int {
	s := os.Getenv("KOP_LAB_PORT_OFFSET")
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 990 || n%10 != 0 {
		fmt.Fprintf(os.Stderr, "lab: ignoring KOP_LAB_PORT_OFFSET=%q (want a multiple of 10 from 0 to 990)\n", s)
		return 0
	}
	return n
}

// ClusterNames returns the names of cs in order.
func ClusterNames(cs []Cluster) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

// Paths locates the lab's files from the repository root.
type Paths struct {
	Root string // repository root (holds go.mod and lab/)
}

// LabDir is the lab's checked-in directory, lab/.
func (p Paths) LabDir() string { return filepath.Join(p.Root, "lab") }

// Pom is the Maven project that fetches the distribution and the KoP handler.
func (p Paths) Pom() string { return filepath.Join(p.LabDir(), "pom.xml") }

// ConfTemplate is the broker.conf template rendered for each cluster.
func (p Paths) ConfTemplate() string { return filepath.Join(p.LabDir(), "conf", "broker.conf.tmpl") }

// Log4j2 is the logging configuration the brokers start with.
func (p Paths) Log4j2() string { return filepath.Join(p.LabDir(), "conf", "log4j2.xml") }

// RunDir holds everything the lab generates at run time, lab/run/.
func (p Paths) RunDir() string { return filepath.Join(p.LabDir(), "run") }

// DistRoot is where the Pulsar distributions are unpacked.
func (p Paths) DistRoot() string { return filepath.Join(p.RunDir(), "dist") }

// DistMarker says that the distribution of version v was unpacked completely.
func (p Paths) DistMarker(v string) string { return filepath.Join(p.DistRoot(), ".ready-"+v) }

// ProtocolsDir holds the KoP protocol handler NARs.
func (p Paths) ProtocolsDir() string { return filepath.Join(p.RunDir(), "protocols") }

// StateFile is the state of the running lab (state.json).
func (p Paths) StateFile() string { return filepath.Join(p.RunDir(), "state.json") }

// ConfigYAML is the kop-offsets configuration written for the running lab.
func (p Paths) ConfigYAML() string { return filepath.Join(p.RunDir(), "config.yaml") }

// LabLock is the lock file held exclusively while the lab is started or stopped.
func (p Paths) LabLock() string { return filepath.Join(p.RunDir(), "lab.lock") }

// UsersLock is the lock file test processes hold shared while they use the lab.
func (p Paths) UsersLock() string { return filepath.Join(p.RunDir(), "users.lock") }

// Dist is the unpacked distribution of version v.
func (p Paths) Dist(v string) string { return filepath.Join(p.DistRoot(), "apache-pulsar-"+v) }

// KoPNar is where the kop profile of lab/pom.xml copies the handler of version v.
func (p Paths) KoPNar(v string) string {
	return filepath.Join(p.ProtocolsDir(), "pulsar-protocol-handler-kafka-"+v+".nar")
}

// BYONarDir holds the one NAR brought with KOP_NAR (or kop-lab up --kop-nar); the brokers
// then load handlers from this directory only.
func (p Paths) BYONarDir() string { return filepath.Join(p.ProtocolsDir(), "byo") }

// KoPProbe caches the result of the last attempt to resolve KoP version v.
func (p Paths) KoPProbe(v string) string {
	return filepath.Join(p.ProtocolsDir(), "kop-"+v+".probe.json")
}

// ClusterDir holds the run-time files of cluster name.
func (p Paths) ClusterDir(name string) string { return filepath.Join(p.RunDir(), name) }

// BrokerConf is the rendered broker.conf of cluster name.
func (p Paths) BrokerConf(name string) string {
	return filepath.Join(p.ClusterDir(name), "conf", "broker.conf")
}

// DataDir holds the metadata and ledger data of cluster name.
func (p Paths) DataDir(name string) string { return filepath.Join(p.ClusterDir(name), "data") }

// TmpDir is the JVM temporary directory of cluster name.
func (p Paths) TmpDir(name string) string { return filepath.Join(p.ClusterDir(name), "tmp") }

// LogFile receives the JVM's stdout and stderr for cluster name.
func (p Paths) LogFile(name string) string {
	return filepath.Join(p.ClusterDir(name), "logs", "broker.log")
}

// NarExtractionDir is where the broker unpacks protocol handler NARs.
func (p Paths) NarExtractionDir(name string) string { return filepath.Join(p.TmpDir(name), "nar") }

// ZooKeeperTemplate and BookieTemplate are the configuration templates of a multi-broker
// cluster's ZooKeeper and bookie (its brokers use ConfTemplate).
func (p Paths) ZooKeeperTemplate() string {
	return filepath.Join(p.LabDir(), "conf", "zookeeper.conf.tmpl")
}

// BookieTemplate is the configuration template of a multi-broker cluster's bookie.
func (p Paths) BookieTemplate() string {
	return filepath.Join(p.LabDir(), "conf", "bookkeeper.conf.tmpl")
}

// ProcessConf is the rendered configuration of process id ("zookeeper", "bookie",
// "broker-1") of a multi-broker cluster.
func (p Paths) ProcessConf(cluster, id string) string {
	return filepath.Join(p.ClusterDir(cluster), "conf", id+".conf")
}

// ProcessLog receives the stdout and stderr of process id of a multi-broker cluster.
func (p Paths) ProcessLog(cluster, id string) string {
	return filepath.Join(p.ClusterDir(cluster), "logs", id+".log")
}

// ProcessData holds the data of process id (ZooKeeper's snapshots, the bookie's journal and
// ledgers) under the cluster's DataDir, so that a fresh start wipes every layout alike.
func (p Paths) ProcessData(cluster, id string) string { return filepath.Join(p.DataDir(cluster), id) }

// ProcessTmp is the JVM temporary directory of process id.
func (p Paths) ProcessTmp(cluster, id string) string { return filepath.Join(p.TmpDir(cluster), id) }

// LayoutMarker records which layout (standalone or zookeeper) wrote the cluster's data: data
// of the other layout is wiped before a start.
func (p Paths) LayoutMarker(cluster string) string {
	return filepath.Join(p.DataDir(cluster), "layout")
}

// MetadataMarker says that PulsarClusterMetadataSetup ran on the cluster's ZooKeeper data.
func (p Paths) MetadataMarker(cluster string) string {
	return filepath.Join(p.DataDir(cluster), "metadata-initialized")
}

// FindRoot returns the repository root: $KOP_LAB_ROOT if set, else the nearest directory
// at or above the working directory whose go.mod declares this module and which has lab/pom.xml.
func FindRoot() (string, error) {
	if r := os.Getenv("KOP_LAB_ROOT"); r != "" {
		return filepath.Abs(r)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if isRoot(dir) {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	return "", errors.New("lab: repository root not found (no go.mod of " + ModulePath +
		" with lab/pom.xml above " + wd + "); set KOP_LAB_ROOT")
}

func isRoot(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	if _, err := os.Stat(filepath.Join(dir, "lab", "pom.xml")); err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "module" && f[1] == ModulePath {
			return true
		}
	}
	return false
}

// DataStamp records which Pulsar version, auth mode and ports wrote the cluster's data: the
// lab refuses to start over data of another lab (stamp.go).
func (p Paths) DataStamp(cluster string) string {
	return filepath.Join(p.DataDir(cluster), "stamp.json")
}
