// Package lab starts, checks and stops the project's lab: two real Apache Pulsar standalone
// clusters (scus and wus) on 127.0.0.1, geo-replicated both ways, with the KoP protocol
// handler wired in and switched on when a KoP NAR is brought (KOP_NAR) or resolves from Maven.
//
// The artifacts come from lab/pom.xml (Maven, into ~/.m2), the broker configuration from
// lab/conf/broker.conf.tmpl, and everything a run creates lives under lab/run/ (git-ignored):
//
//	lab/run/dist/apache-pulsar-<v>/   the unpacked distribution (+ .version marker)
//	lab/run/protocols/                the KoP NAR when Maven resolves it, and the probe result
//	lab/run/protocols/byo/            the NAR brought with KOP_NAR (a link or a copy)
//	lab/run/<cluster>/conf/           rendered broker.conf
//	lab/run/<cluster>/data/           RocksDB metadata store and bookie data
//	lab/run/<cluster>/logs/broker.log the JVM's stdout and stderr
//	lab/run/<cluster>/tmp/            java.io.tmpdir (RocksDB JNI, NAR extraction)
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
	Topic1                      = "persistent://public/default/topic-1"
	Topic1Partitions            = 1
)

// Ports of one cluster; all listen on 127.0.0.1 (the bookie too: broker.conf pins it to the
// loopback interface with listeningInterface=lo).
type Ports struct {
	Web    int `json:"web"`    // HTTP: admin REST API (webServicePort)
	Broker int `json:"broker"` // Pulsar binary protocol (brokerServicePort)
	Bookie int `json:"bookie"` // in-process bookie (--bookkeeper-port)
	Kafka  int `json:"kafka"`  // KoP listener; only bound when KoP is on
}

// Cluster is one standalone cluster of the lab.
type Cluster struct {
	Name           string `json:"name"`
	Ports          Ports  `json:"ports"`
	AdminURL       string `json:"adminURL"`       // http://127.0.0.1:<web>
	ServiceURL     string `json:"serviceURL"`     // pulsar://127.0.0.1:<broker>
	KafkaBootstrap string `json:"kafkaBootstrap"` // 127.0.0.1:<kafka>
	KoP            bool   `json:"kop"`            // KoP handler loaded in this cluster
	// Auth is set on a lab with auth (KOP_LAB_AUTH=token): TLS endpoints and token files.
	Auth *ClusterAuth `json:"auth,omitempty"`
}

// Host is the only address the lab uses.
const Host = "127.0.0.1"

// NewCluster builds a Cluster with URLs derived from its ports.
func NewCluster(name string, p Ports) Cluster {
	return Cluster{
		Name:           name,
		Ports:          p,
		AdminURL:       fmt.Sprintf("http://%s:%d", Host, p.Web),
		ServiceURL:     fmt.Sprintf("pulsar://%s:%d", Host, p.Broker),
		KafkaBootstrap: fmt.Sprintf("%s:%d", Host, p.Kafka),
	}
}

// DefaultClusters is the lab's port layout: scus in 1xxxx, wus in 2xxxx, each port moved by
// $KOP_LAB_PORT_OFFSET (default 0) so that a second checkout can run its own lab beside this
// one (the two still share the machine's 2 cores).
func DefaultClusters() []Cluster {
	off := PortOffset()
	at := func(p Ports) Ports {
		return Ports{Web: p.Web + off, Broker: p.Broker + off, Bookie: p.Bookie + off, Kafka: p.Kafka + off}
	}
	return []Cluster{
		NewCluster("scus", at(Ports{Web: 18080, Broker: 16650, Bookie: 13181, Kafka: 19092})),
		NewCluster("wus", at(Ports{Web: 28080, Broker: 26650, Bookie: 23181, Kafka: 29092})),
	}
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
