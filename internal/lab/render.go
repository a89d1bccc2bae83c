package lab

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	"go.yaml.in/yaml/v3"

	"github.com/kop-offsets/kop-offsets/internal/config"
)

// confData is what the templates of lab/conf see.
type confData struct {
	Name             string
	Standalone       bool
	Ports            Ports // the broker's own web, binary and Kafka ports (Cluster.Broker)
	DataDir          string
	PulsarVersion    string
	KoP              bool
	KoPVersion       string
	ProtocolsDir     string
	NarExtractionDir string
	// KafkaProtocol is the KoP listener's security protocol; Auth the auth block (auth.go),
	// nil without auth.
	KafkaProtocol string
	Auth          *brokerAuthConf
	// BrokerDeduplication is brokerDeduplicationEnabled with KoP: off on a line whose
	// deduplication drops KoP's replicated entries (PulsarLine.DedupDropsKoPReplicas).
	BrokerDeduplication bool
	// TransactionCoordinator is transactionCoordinatorEnabled: on with KoP on a line whose
	// brokers refuse replicated transactional messages without it
	// (PulsarLine.ReplicatedTxnNeedsBuffer).
	TransactionCoordinator bool
	// ReplicationPolicyCheckSeconds is replicationPolicyCheckDurationSeconds, 0 to leave
	// Pulsar's default (PulsarLine.LazyReplicators).
	ReplicationPolicyCheckSeconds int
}

// RenderBrokerConf renders the broker configuration template tmpl for cluster c (a
// standalone, or broker 0 of a multi-broker cluster) on Pulsar pulsarVersion; the KoP block
// (when c.KoP) loads handlers from kop.HandlerDir.
func RenderBrokerConf(tmpl string, p Paths, c Cluster, pulsarVersion string, kop KoPStatus) ([]byte, error) {
	return RenderBrokerConfFor(tmpl, p, c, 0, pulsarVersion, kop)
}

// RenderBrokerConfFor renders the configuration of broker i of cluster c: its own web, binary
// and Kafka ports and NAR extraction directory.
func RenderBrokerConfFor(tmpl string, p Paths, c Cluster, i int, pulsarVersion string, kop KoPStatus) ([]byte, error) {
	dir := kop.HandlerDir
	if dir == "" {
		dir = p.ProtocolsDir()
	}
	nar := p.NarExtractionDir(c.Name)
	if !c.Standalone() {
		nar = filepath.Join(p.ProcessTmp(c.Name, processID(RoleBroker, i)), "nar")
	}
	b := c.Broker(i)
	line, _ := LineOf(pulsarVersion) // refused by Options.resolve when unknown
	return renderConf(tmpl, processID(RoleBroker, i), confData{
		BrokerDeduplication:           !line.DedupDropsKoPReplicas,
		TransactionCoordinator:        c.KoP && line.ReplicatedTxnNeedsBuffer,
		ReplicationPolicyCheckSeconds: line.replicationPolicyCheckSeconds(),
		Name:                          c.Name,
		Standalone:                    c.Standalone(),
		Ports:                         b.Ports,
		PulsarVersion:                 pulsarVersion,
		KoP:                           c.KoP,
		KoPVersion:                    kop.Version,
		ProtocolsDir:                  dir,
		NarExtractionDir:              nar,
		KafkaProtocol:                 kafkaSecurityProtocol(c),
		Auth:                          brokerAuth(b),
	}, c.Name)
}

// RenderServiceConf renders the template of a multi-broker cluster's ZooKeeper or bookie
// (role RoleZooKeeper or RoleBookie), with that process's data directory.
func RenderServiceConf(tmpl string, p Paths, c Cluster, role Role) ([]byte, error) {
	return renderConf(tmpl, string(role), confData{Name: c.Name, Ports: c.Ports,
		DataDir: p.ProcessData(c.Name, string(role))}, c.Name)
}

func renderConf(tmpl, what string, d confData, cluster string) ([]byte, error) {
	t, err := template.New(what).Option("missingkey=error").Parse(tmpl)
	if err != nil {
		return nil, fmt.Errorf("lab: parse %s template: %w", what, err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return nil, fmt.Errorf("lab: render %s configuration for %s: %w", what, cluster, err)
	}
	return b.Bytes(), nil
}

// writeBrokerConf renders the template from lab/conf and writes lab/run/<c>/conf/broker.conf
// of a standalone cluster.
func writeBrokerConf(p Paths, c Cluster, pulsarVersion string, kop KoPStatus) (string, error) {
	tmpl, err := os.ReadFile(p.ConfTemplate())
	if err != nil {
		return "", err
	}
	out, err := RenderBrokerConf(string(tmpl), p, c, pulsarVersion, kop)
	if err != nil {
		return "", err
	}
	return p.BrokerConf(c.Name), writeFile(p.BrokerConf(c.Name), out)
}

// writeClusterConfs writes the configuration of every process of multi-broker cluster c:
// conf/zookeeper.conf, conf/bookie.conf and conf/broker-<i>.conf.
func writeClusterConfs(p Paths, c Cluster, pulsarVersion string, kop KoPStatus) error {
	for _, f := range []struct {
		role Role
		tmpl string
	}{{RoleZooKeeper, p.ZooKeeperTemplate()}, {RoleBookie, p.BookieTemplate()}} {
		tmpl, err := os.ReadFile(f.tmpl)
		if err != nil {
			return err
		}
		out, err := RenderServiceConf(string(tmpl), p, c, f.role)
		if err != nil {
			return err
		}
		if err := writeFile(p.ProcessConf(c.Name, string(f.role)), out); err != nil {
			return err
		}
	}
	tmpl, err := os.ReadFile(p.ConfTemplate())
	if err != nil {
		return err
	}
	for i := range c.Brokers {
		out, err := RenderBrokerConfFor(string(tmpl), p, c, i, pulsarVersion, kop)
		if err != nil {
			return err
		}
		if err := writeFile(p.ProcessConf(c.Name, processID(RoleBroker, i)), out); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// JVMMemory is the JVM memory of each standalone, sized for a 2-core, 24 GiB machine: two of
// them fit with room to spare.
var JVMMemory = []string{"-Xms256m", "-Xmx1g", "-XX:MaxDirectMemorySize=512m"}

// RoleMemory is the JVM memory of each process of a multi-broker cluster: with 3 clusters of
// 2 brokers that is 6 brokers, 3 bookies and 3 ZooKeepers on one 24 GiB machine shared with
// other labs, so each gets less than a standalone (measured RSS in docs/lab.md).
var RoleMemory = map[Role][]string{
	RoleZooKeeper: {"-Xms32m", "-Xmx128m"},
	RoleBookie:    {"-Xms64m", "-Xmx256m", "-XX:MaxDirectMemorySize=256m"},
	RoleBroker:    {"-Xms128m", "-Xmx768m", "-XX:MaxDirectMemorySize=512m"},
}

// addOpens is the --add-opens list of the distribution's bin/pulsar for Java 17, plus the
// java.lang, java.util and sun.net packages named in lab.md.
var addOpens = []string{
	"java.base/java.io", "java.base/java.util.zip", "java.base/java.nio",
	"java.base/jdk.internal.misc", "java.base/jdk.internal.platform", "java.base/sun.net",
	"java.base/java.lang", "java.base/java.util",
	"java.management/sun.management", "jdk.management/com.sun.management.internal",
}

// ProcessMarker is a system property that names the lab cluster on the JVM's command line; it
// is how the lab recognises its own processes (a recycled pid will not carry it).
func ProcessMarker(name string) string { return "-Dkop.lab.cluster=" + name }

// JavaArgs returns the java command line (without the java binary) that starts cluster c as a
// standalone of Pulsar pulsarVersion: broker, one in-process bookie, the metadata store of its
// line (RocksDB, or before 2.11 an embedded ZooKeeper on c.Ports.ZooKeeper), no functions
// worker, no stream storage.
func JavaArgs(p Paths, c Cluster, pulsarVersion string) []string {
	args := jvmArgs(p, c.Name, "", p.TmpDir(c.Name), JVMMemory, pulsarVersion)
	args = append(args, "org.apache.pulsar.PulsarStandaloneStarter", "-c", p.BrokerConf(c.Name), "-nfw", "-nss")
	// An unknown line was refused by Options.resolve; the zero line is 4.0's layout.
	line, _ := LineOf(pulsarVersion)
	args = append(args, line.standaloneMetadataArgs(p.DataDir(c.Name), c.Ports.ZooKeeper)...)
	return append(args,
		"--bookkeeper-dir", filepath.Join(p.DataDir(c.Name), "bookkeeper"),
		"--bookkeeper-port", fmt.Sprint(c.Ports.Bookie),
	)
}

// ProcessArgs returns the java command line of a process of multi-broker cluster c: its
// ZooKeeper (QuorumPeerMain), its bookie (BookKeeper's server Main) or broker i
// (PulsarBrokerStarter), each from the distribution's lib/ and its rendered configuration.
func ProcessArgs(p Paths, c Cluster, role Role, i int, pulsarVersion string) []string {
	id := processID(role, i)
	args := jvmArgs(p, c.Name, id, p.ProcessTmp(c.Name, id), RoleMemory[role], pulsarVersion)
	conf := p.ProcessConf(c.Name, id)
	switch role {
	case RoleZooKeeper:
		return append(args, "org.apache.zookeeper.server.quorum.QuorumPeerMain", conf)
	case RoleBookie:
		return append(args, "org.apache.bookkeeper.server.Main", "--conf", conf)
	}
	return append(args, "org.apache.pulsar.PulsarBrokerStarter", "-c", conf)
}

// MetadataSetupArgs is the java command line that writes cluster c's metadata into its
// ZooKeeper once (org.apache.pulsar.PulsarClusterMetadataSetup, `pulsar
// initialize-cluster-metadata`): the cluster's own registration with every broker in its URLs,
// tenant public, public/default with 4 bundles, and BookKeeper's ledger layout.
func MetadataSetupArgs(p Paths, c Cluster, pulsarVersion string) []string {
	zk := fmt.Sprintf("zk:%s:%d", Host, c.Ports.ZooKeeper)
	args := jvmArgs(p, c.Name, "metadata-setup", p.ProcessTmp(c.Name, "metadata-setup"), []string{"-Xmx256m"}, pulsarVersion)
	args = append(args, "org.apache.pulsar.PulsarClusterMetadataSetup",
		"--cluster", c.Name,
		"--metadata-store", zk,
		"--configuration-metadata-store", zk,
		"--web-service-url", c.AdminURLs(),
		"--broker-service-url", c.ServiceURLs(),
		"--default-namespace-bundle-number", fmt.Sprint(MetadataBundles),
		"--initial-num-transaction-coordinators", "1",
	)
	if c.Auth != nil {
		// The cluster's own registration with every broker's TLS URLs too, as the other
		// clusters register it (clusterData).
		args = append(args, "--web-service-url-tls", c.AdminURLsTLS(), "--broker-service-url-tls", c.ServiceURLsTLS())
	}
	return args
}

// jvmArgs are the JVM options every lab process shares, ending with the classpath: memory,
// the markers that name cluster (and process id, when not empty), tmpdir, logging and the
// module openings of bin/pulsar.
func jvmArgs(p Paths, cluster, id, tmp string, memory []string, pulsarVersion string) []string {
	args := append([]string{}, memory...)
	args = append(args,
		"-XX:+UseG1GC",
		// C1 only: on 2 busy cores the C2 compiler's start-up work doubles the time to healthy
		// (measured 28-30 s vs 11-13 s for one standalone at load average 19); the lab's
		// workloads are small, so C2's peak throughput is not needed.
		"-XX:TieredStopAtLevel=1",
		ProcessMarker(cluster),
	)
	if id != "" {
		args = append(args, processMarker(cluster, id))
	}
	args = append(args,
		"-Djava.io.tmpdir="+tmp,
		"-Djava.net.preferIPv4Stack=true",
		"-Dlog4j2.configurationFile="+p.Log4j2(),
		"-Dlog4j.shutdownHookEnabled=false",
		"-Dlog4j2.is.webapp=false",
		"-Dio.netty.tryReflectionSetAccessible=true",
		"-Dorg.apache.pulsar.shade.io.netty.tryReflectionSetAccessible=true",
		"-Dpulsar.allocator.exit_on_oom=true",
		"-Dbookkeeper.metadata.bookie.drivers=org.apache.pulsar.metadata.bookkeeper.PulsarMetadataBookieDriver",
		"-Dbookkeeper.metadata.client.drivers=org.apache.pulsar.metadata.bookkeeper.PulsarMetadataClientDriver",
	)
	// KOP_LAB_JVM_OPTS: extra JVM options (whitespace-separated), e.g. to re-enable C2 with
	// -XX:TieredStopAtLevel=4 or to attach a profiler.
	args = append(args, strings.Fields(os.Getenv("KOP_LAB_JVM_OPTS"))...)
	for _, o := range addOpens {
		args = append(args, "--add-opens", o+"=ALL-UNNAMED")
	}
	return append(args, "--enable-native-access=ALL-UNNAMED",
		"-cp", filepath.Join(p.Dist(pulsarVersion), "lib")+"/*")
}

// cliConfig mirrors the subset of docs/config.md the lab fills in.
type cliConfig struct {
	Clusters []cliCluster `yaml:"clusters"`
}

type cliCluster struct {
	Name           string   `yaml:"name"`
	AdminURL       string   `yaml:"adminURL"`
	ServiceURL     string   `yaml:"serviceURL"`
	KafkaBootstrap []string `yaml:"kafkaBootstrap"`
	Tenant         string   `yaml:"tenant,omitempty"`
	// Tenants replaces Tenant on a lab with extra tenants (kop-lab up --tenants N).
	Tenants           *config.Tenants `yaml:"tenants,omitempty"`
	MetadataNamespace string          `yaml:"metadataNamespace"`
	KafkaNamespace    string          `yaml:"kafkaNamespace"`
	// Set on an auth lab only (Cluster.Config).
	PulsarAuth *config.PulsarAuth `yaml:"pulsarAuth,omitempty"`
	KafkaAuth  *config.KafkaAuth  `yaml:"kafkaAuth,omitempty"`
}

// configTenants is the tenants: list of cluster c.
func configTenants(c Cluster, tenants []string) *config.Tenants {
	ts := &config.Tenants{}
	for _, t := range tenants {
		ts.List = append(ts.List, c.ConfigTenant(t))
	}
	return ts
}

// RenderCLIConfig renders a kop-offsets configuration (docs/config.md) for the clusters. With
// tenants, every cluster lists them under tenants: (instead of tenant: public), each with its
// Kafka namespace and its own token as Kafka credentials; pulsarAuth stays the superuser's,
// which reads every tenant's offsets topic.
func RenderCLIConfig(cs []Cluster, pulsarVersion string, kop KoPStatus, tenants ...string) ([]byte, error) {
	cfg := cliConfig{}
	for _, c := range cs {
		cc := c.Config()
		// Every broker's Kafka listener, and every broker's binary protocol (pulsar+ssl on an
		// auth lab) in Pulsar's multi-host form; the admin URL stays broker 0's.
		cc.KafkaBootstrap = c.KafkaBootstraps()
		cc.ServiceURL = c.ServiceURLs()
		if c.Auth != nil {
			cc.ServiceURL = c.ServiceURLsTLS()
		}
		out := cliCluster{
			Name:              cc.Name,
			AdminURL:          cc.AdminURL,
			ServiceURL:        cc.ServiceURL,
			KafkaBootstrap:    cc.KafkaBootstrap,
			Tenant:            cc.Tenant,
			MetadataNamespace: cc.MetadataNamespace,
			KafkaNamespace:    cc.KafkaNamespace,
			PulsarAuth:        cc.PulsarAuth,
			KafkaAuth:         cc.KafkaAuth,
		}
		if len(tenants) > 0 {
			out.Tenant, out.Tenants = "", configTenants(c, tenants)
		}
		cfg.Clusters = append(cfg.Clusters, out)
	}
	var body bytes.Buffer
	enc := yaml.NewEncoder(&body)
	enc.SetIndent(2)
	if err := enc.Encode(cfg); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# kop-offsets configuration for the lab, written by internal/lab (kop-lab up).\n")
	if sh := ShapeOf(cs); sh.Standalone() {
		fmt.Fprintf(&b, "# Apache Pulsar %s standalone clusters on %s.\n", pulsarVersion, Host)
	} else {
		fmt.Fprintf(&b, "# Apache Pulsar %s, %d clusters of %d brokers each (ZooKeeper, bookie, brokers) on %s.\n", pulsarVersion, sh.Clusters, sh.Brokers, Host)
		fmt.Fprintf(&b, "# adminURL takes one URL: broker 0's (stopping broker 0 stops admin calls through it);\n")
		fmt.Fprintf(&b, "# serviceURL names every broker (Pulsar's multi-host form); kafkaBootstrap lists every broker.\n")
	}
	if kop.Enabled {
		fmt.Fprintf(&b, "# KoP %s: on (kafkaBootstrap answers).\n", kop.Version)
		if kop.SHA256 != "" {
			fmt.Fprintf(&b, "# KoP NAR %s, sha256 %s.\n", kop.Nar, kop.SHA256)
		}
	} else {
		fmt.Fprintf(&b, "# KoP: off (%s); nothing listens on kafkaBootstrap.\n", oneLine(kop.Reason))
	}
	if len(cs) > 0 && cs[0].Auth != nil {
		fmt.Fprintf(&b, "# Auth: %s. Admin over https and the binary protocol over TLS (CA %s), with\n", cs[0].Auth.Mode, cs[0].Auth.Files.CACert)
		fmt.Fprintf(&b, "# the %s token; KoP with SASL/PLAIN (username the tenant, password token:<jwt>).\n", SuperuserRole)
	}
	if len(tenants) > 0 {
		fmt.Fprintf(&b, "# Tenants %s (kop-lab up --tenants %d): each one's groups in <tenant>/__kafka, its Kafka\n", strings.Join(tenants, ", "), len(tenants))
		fmt.Fprintf(&b, "# clients with its own %s token; pick one with kop-offsets --tenant.\n", TenantRole("<tenant>"))
	}
	b.Write(body.Bytes())
	return b.Bytes(), nil
}
