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

// brokerConfData is what lab/conf/broker.conf.tmpl sees.
type brokerConfData struct {
	Name             string
	Ports            Ports
	PulsarVersion    string
	KoP              bool
	KoPVersion       string
	ProtocolsDir     string
	NarExtractionDir string
	// KafkaProtocol is the KoP listener's security protocol; Auth the auth block (auth.go),
	// nil without auth.
	KafkaProtocol string
	Auth          *brokerAuthConf
}

// RenderBrokerConf renders the broker configuration template tmpl for cluster c on Pulsar
// pulsarVersion; the KoP block (when c.KoP) loads handlers from kop.HandlerDir.
func RenderBrokerConf(tmpl string, p Paths, c Cluster, pulsarVersion string, kop KoPStatus) ([]byte, error) {
	dir := kop.HandlerDir
	if dir == "" {
		dir = p.ProtocolsDir()
	}
	t, err := template.New("broker.conf").Option("missingkey=error").Parse(tmpl)
	if err != nil {
		return nil, fmt.Errorf("lab: parse broker.conf template: %w", err)
	}
	var b bytes.Buffer
	err = t.Execute(&b, brokerConfData{
		Name:             c.Name,
		Ports:            c.Ports,
		PulsarVersion:    pulsarVersion,
		KoP:              c.KoP,
		KoPVersion:       kop.Version,
		ProtocolsDir:     dir,
		NarExtractionDir: p.NarExtractionDir(c.Name),
		KafkaProtocol:    kafkaSecurityProtocol(c),
		Auth:             brokerAuth(c),
	})
	if err != nil {
		return nil, fmt.Errorf("lab: render broker.conf for %s: %w", c.Name, err)
	}
	return b.Bytes(), nil
}

// writeBrokerConf renders the template from lab/conf and writes lab/run/<c>/conf/broker.conf.
func writeBrokerConf(p Paths, c Cluster, pulsarVersion string, kop KoPStatus) (string, error) {
	tmpl, err := os.ReadFile(p.ConfTemplate())
	if err != nil {
		return "", err
	}
	out, err := RenderBrokerConf(string(tmpl), p, c, pulsarVersion, kop)
	if err != nil {
		return "", err
	}
	path := p.BrokerConf(c.Name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, out, 0o644)
}

// JVMMemory is the JVM memory of each cluster, sized for a 2-core, 24 GiB machine: two of them
// fit with room to spare.
var JVMMemory = []string{"-Xms256m", "-Xmx1g", "-XX:MaxDirectMemorySize=512m"}

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
// standalone of Pulsar pulsarVersion: broker, one in-process bookie, RocksDB metadata store, no
// functions worker, no stream storage.
func JavaArgs(p Paths, c Cluster, pulsarVersion string) []string {
	args := append([]string{}, JVMMemory...)
	args = append(args,
		"-XX:+UseG1GC",
		// C1 only: on 2 busy cores the C2 compiler's start-up work doubles the time to healthy
		// (measured 28-30 s vs 11-13 s for one standalone at load average 19); the lab's
		// workloads are small, so C2's peak throughput is not needed.
		"-XX:TieredStopAtLevel=1",
		ProcessMarker(c.Name),
		"-Djava.io.tmpdir="+p.TmpDir(c.Name),
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
	args = append(args, "--enable-native-access=ALL-UNNAMED",
		"-cp", filepath.Join(p.Dist(pulsarVersion), "lib")+"/*",
		"org.apache.pulsar.PulsarStandaloneStarter",
		"-c", p.BrokerConf(c.Name),
		"-nfw", "-nss",
		"--metadata-dir", filepath.Join(p.DataDir(c.Name), "metadata"),
		"--bookkeeper-dir", filepath.Join(p.DataDir(c.Name), "bookkeeper"),
		"--bookkeeper-port", fmt.Sprint(c.Ports.Bookie),
	)
	return args
}

// cliConfig mirrors the subset of docs/config.md the lab fills in.
type cliConfig struct {
	Clusters []cliCluster `yaml:"clusters"`
}

type cliCluster struct {
	Name              string   `yaml:"name"`
	AdminURL          string   `yaml:"adminURL"`
	ServiceURL        string   `yaml:"serviceURL"`
	KafkaBootstrap    []string `yaml:"kafkaBootstrap"`
	Tenant            string   `yaml:"tenant"`
	MetadataNamespace string   `yaml:"metadataNamespace"`
	KafkaNamespace    string   `yaml:"kafkaNamespace"`
	// Set on an auth lab only (Cluster.Config).
	PulsarAuth *config.PulsarAuth `yaml:"pulsarAuth,omitempty"`
	KafkaAuth  *config.KafkaAuth  `yaml:"kafkaAuth,omitempty"`
}

// RenderCLIConfig renders a kop-offsets configuration (docs/config.md) for the clusters.
func RenderCLIConfig(cs []Cluster, pulsarVersion string, kop KoPStatus) ([]byte, error) {
	cfg := cliConfig{}
	for _, c := range cs {
		cc := c.Config()
		cfg.Clusters = append(cfg.Clusters, cliCluster{
			Name:              cc.Name,
			AdminURL:          cc.AdminURL,
			ServiceURL:        cc.ServiceURL,
			KafkaBootstrap:    cc.KafkaBootstrap,
			Tenant:            cc.Tenant,
			MetadataNamespace: cc.MetadataNamespace,
			KafkaNamespace:    cc.KafkaNamespace,
			PulsarAuth:        cc.PulsarAuth,
			KafkaAuth:         cc.KafkaAuth,
		})
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
	fmt.Fprintf(&b, "# Apache Pulsar %s standalone clusters on %s.\n", pulsarVersion, Host)
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
	b.Write(body.Bytes())
	return b.Bytes(), nil
}
