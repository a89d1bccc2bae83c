package lab

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
	"go.yaml.in/yaml/v3"
)

func repoPaths(t *testing.T) Paths {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if !isRoot(root) {
		t.Fatalf("%s is not the repository root", root)
	}
	return Paths{Root: root}
}

func TestDefaultPortLayout(t *testing.T) {
	t.Setenv("KOP_LAB_PORT_OFFSET", "")
	cs := DefaultClusters()
	if got := ClusterNames(cs); strings.Join(got, ",") != "scus,wus" {
		t.Fatalf("clusters %v, want scus,wus", got)
	}
	want := map[string]Ports{
		"scus": {Web: 18080, Broker: 16650, Bookie: 13181, Kafka: 19092},
		"wus":  {Web: 28080, Broker: 26650, Bookie: 23181, Kafka: 29092},
	}
	seen := map[int]string{}
	for _, c := range cs {
		if c.Ports != want[c.Name] {
			t.Errorf("%s ports %+v, want %+v", c.Name, c.Ports, want[c.Name])
		}
		for _, p := range []int{c.Ports.Web, c.Ports.Broker, c.Ports.Bookie, c.Ports.Kafka} {
			if other, dup := seen[p]; dup {
				t.Errorf("port %d used by %s and %s", p, other, c.Name)
			}
			seen[p] = c.Name
		}
		if c.KoP {
			t.Errorf("%s: KoP on by default", c.Name)
		}
	}
	scus := cs[0]
	if scus.AdminURL != "http://127.0.0.1:18080" || scus.ServiceURL != "pulsar://127.0.0.1:16650" ||
		scus.KafkaBootstrap != "127.0.0.1:19092" {
		t.Errorf("scus URLs %q %q %q", scus.AdminURL, scus.ServiceURL, scus.KafkaBootstrap)
	}
}

// parseConf reads key=value lines and fails on a key set twice.
func parseConf(t *testing.T, b []byte) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("not key=value: %q", line)
		}
		if _, dup := m[k]; dup {
			t.Fatalf("key %s set twice", k)
		}
		m[k] = v
	}
	return m
}

func TestRenderBrokerConf(t *testing.T) {
	t.Setenv("KOP_LAB_PORT_OFFSET", "") // the fixed layout below
	p := repoPaths(t)
	tmpl := readTemplate(t, p.ConfTemplate())
	wus := DefaultClusters()[1]
	out, err := RenderBrokerConf(tmpl, p, wus, DefaultPulsarVersion, KoPStatus{Version: "4.0.6.5"})
	if err != nil {
		t.Fatal(err)
	}
	m := parseConf(t, out)
	for k, v := range map[string]string{
		"clusterName": "wus", "bindAddress": "127.0.0.1", "advertisedAddress": "127.0.0.1",
		"webServicePort": "28080", "brokerServicePort": "26650",
		"loadManagerClassName":             "org.apache.pulsar.broker.loadbalance.NoopLoadManager",
		"managedLedgerDefaultEnsembleSize": "1", "managedLedgerDefaultWriteQuorum": "1",
		"managedLedgerDefaultAckQuorum": "1", "journalSyncData": "false",
		"brokerEntryMetadataInterceptors":   "org.apache.pulsar.common.intercept.AppendIndexMetadataInterceptor",
		"allowAutoTopicCreationType":        "partitioned",
		"brokerDeleteInactiveTopicsEnabled": "false", "defaultNumberOfNamespaceBundles": "4",
		"replicationStartAt": "earliest", "functionsWorkerEnabled": "false",
		"allowEphemeralPorts": "true", "dbStorage_writeCacheMaxSizeMb": "32",
	} {
		if m[k] != v {
			t.Errorf("%s=%q, want %q", k, m[k], v)
		}
	}
	for _, k := range []string{"messagingProtocols", "kafkaListeners", "offsetsTopicNumPartitions", "brokerDeduplicationEnabled"} {
		if _, ok := m[k]; ok {
			t.Errorf("KoP off but %s is set", k)
		}
	}

	wus.KoP = true
	out, err = RenderBrokerConf(tmpl, p, wus, DefaultPulsarVersion, KoPStatus{Version: "4.0.6.5"})
	if err != nil {
		t.Fatal(err)
	}
	m = parseConf(t, out)
	for k, v := range map[string]string{
		"messagingProtocols":                 "kafka",
		"protocolHandlerDirectory":           p.ProtocolsDir(),
		"narExtractionDirectory":             p.NarExtractionDir("wus"),
		"kafkaListeners":                     "PLAINTEXT://127.0.0.1:29092",
		"kafkaAdvertisedListeners":           "PLAINTEXT://127.0.0.1:29092",
		"offsetsTopicNumPartitions":          "8",
		"kafkaTransactionCoordinatorEnabled": "true",
		"brokerDeduplicationEnabled":         "true",
		"kafkaMetadataNamespace":             "__kafka",
	} {
		if m[k] != v {
			t.Errorf("KoP on: %s=%q, want %q", k, m[k], v)
		}
	}
}

func TestRenderBrokerConfBadTemplate(t *testing.T) {
	t.Setenv("KOP_LAB_PORT_OFFSET", "") // the fixed layout below
	if _, err := RenderBrokerConf("x={{.Nope}}", Paths{Root: "/r"}, DefaultClusters()[0], DefaultPulsarVersion, KoPStatus{}); err == nil {
		t.Fatal("unknown field rendered without error")
	}
}

func TestJavaArgs(t *testing.T) {
	t.Setenv("KOP_LAB_PORT_OFFSET", "") // the fixed layout below
	p := Paths{Root: "/repo"}
	scus := DefaultClusters()[0]
	args := JavaArgs(p, scus, "3.3.6")
	joined := strings.Join(args, " ")
	for _, want := range []string{
		"-Xms256m -Xmx1g -XX:MaxDirectMemorySize=512m",
		ProcessMarker("scus"),
		"-Djava.io.tmpdir=/repo/lab/run/scus/tmp",
		"-Dlog4j2.configurationFile=/repo/lab/conf/log4j2.xml",
		"--add-opens java.base/jdk.internal.misc=ALL-UNNAMED",
		"-cp /repo/lab/run/dist/apache-pulsar-3.3.6/lib/*",
		"org.apache.pulsar.PulsarStandaloneStarter -c /repo/lab/run/scus/conf/broker.conf -nfw -nss",
		"--metadata-dir /repo/lab/run/scus/data/metadata",
		"--bookkeeper-dir /repo/lab/run/scus/data/bookkeeper --bookkeeper-port 13181",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("java args lack %q:\n%s", want, joined)
		}
	}
}

func TestRenderCLIConfig(t *testing.T) {
	t.Setenv("KOP_LAB_PORT_OFFSET", "") // the fixed layout below
	cs := DefaultClusters()
	out, err := RenderCLIConfig(cs, DefaultPulsarVersion, KoPStatus{Reason: "KoP 4.0.6.5 not resolvable from Maven: [ERROR] x"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "# KoP: off (KoP 4.0.6.5 not resolvable") {
		t.Errorf("header does not say why KoP is off:\n%s", out)
	}
	var cfg cliConfig
	if err := yaml.Unmarshal(out, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Clusters) != 2 {
		t.Fatalf("%d clusters", len(cfg.Clusters))
	}
	w := cfg.Clusters[1]
	if w.Name != "wus" || w.AdminURL != "http://127.0.0.1:28080" || w.ServiceURL != "pulsar://127.0.0.1:26650" ||
		len(w.KafkaBootstrap) != 1 || w.KafkaBootstrap[0] != "127.0.0.1:29092" ||
		w.Tenant != "public" || w.MetadataNamespace != "__kafka" || w.KafkaNamespace != "public/default" {
		t.Errorf("wus rendered as %+v", w)
	}
	on, err := RenderCLIConfig(cs, DefaultPulsarVersion, KoPStatus{Enabled: true, Version: "4.0.6.5"})
	if err != nil || !strings.Contains(string(on), "# KoP 4.0.6.5: on") {
		t.Errorf("KoP on header missing: %v\n%s", err, on)
	}
}

func TestStateRoundTrip(t *testing.T) {
	t.Setenv("KOP_LAB_PORT_OFFSET", "") // the fixed layout below
	path := filepath.Join(t.TempDir(), "run", "state.json")
	if st, err := ReadState(path); st != nil || err != nil {
		t.Fatalf("missing state: %v %v", st, err)
	}
	in := &State{PulsarVersion: DefaultPulsarVersion, Keep: true, StartedAt: time.Unix(1700000000, 0).UTC(),
		KoP: KoPStatus{Mode: KoPAuto, Version: "4.0.6.5", Reason: "r", MavenError: "[ERROR] e"}}
	for _, c := range DefaultClusters() {
		in.Clusters = append(in.Clusters, ClusterState{Cluster: c, PID: 4242, ReadySeconds: 12.5})
	}
	if err := WriteState(path, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadState(path)
	if err != nil {
		t.Fatal(err)
	}
	wus, ok := out.Cluster("wus")
	if !ok || wus.PID != 4242 || wus.Ports.Web != 28080 || wus.ReadySeconds != 12.5 || !out.Keep ||
		out.KoP.MavenError != "[ERROR] e" || out.Version != StateVersion {
		t.Errorf("round trip: %+v", out)
	}
	writeTestFile(t, path, `{"version": 99}`)
	if _, err := ReadState(path); err == nil {
		t.Error("state of another version accepted")
	}
}

func TestFirstMavenError(t *testing.T) {
	out := "\x1b[0m\x1b[0m[ERROR] Failed to execute goal x: Could not find artifact a:b:jar:1 in central -> [Help 1]\n[ERROR] \n[ERROR] more\n"
	want := "[ERROR] Failed to execute goal x: Could not find artifact a:b:jar:1 in central -> [Help 1]"
	if got := FirstMavenError(out); got != want {
		t.Errorf("got %q", got)
	}
	if got := FirstMavenError("[INFO] ok\n"); got != "" {
		t.Errorf("no error, got %q", got)
	}
}

func TestParseKoPMode(t *testing.T) {
	for in, want := range map[string]KoPMode{"": KoPAuto, "auto": KoPAuto, "off": KoPOff, "required": KoPRequired, "1": KoPRequired} {
		if got, err := ParseKoPMode(in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	if _, err := ParseKoPMode("maybe"); err == nil {
		t.Error("maybe accepted")
	}
}

func TestResolveKoPFromCachedProbe(t *testing.T) {
	t.Setenv("MVN", "/nonexistent/mvn") // any mvn run would show up as a different error
	t.Setenv("KOP_PROBE", "")
	p := Paths{Root: t.TempDir()}
	if err := os.MkdirAll(p.ProtocolsDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	mvnErr := "[ERROR] Failed to execute goal ...: Could not find artifact io.streamnative.pulsar.handlers:pulsar-protocol-handler-kafka:jar:9.9 in central"
	writeProbe(p, "9.9", KoPStatus{Command: "mvn ... -Pkop", MavenError: mvnErr, ProbedAt: time.Now()})
	var log strings.Builder

	st, err := ResolveKoP(context.Background(), p, KoPAuto, "9.9", &log)
	if err != nil || st.Enabled || st.MavenError != mvnErr || !strings.Contains(st.Reason, mvnErr) {
		t.Errorf("auto: %+v %v", st, err)
	}
	if !strings.Contains(log.String(), "carrying on with Pulsar only") {
		t.Errorf("auto mode does not say it carries on: %q", log.String())
	}
	_, err = ResolveKoP(context.Background(), p, KoPRequired, "9.9", &log)
	if !errors.Is(err, ErrKoPRequired) || !strings.Contains(err.Error(), mvnErr) {
		t.Errorf("required: %v", err)
	}
	st, err = ResolveKoP(context.Background(), p, KoPOff, "9.9", &log)
	if err != nil || st.Enabled || st.Reason != "KOP=off" {
		t.Errorf("off: %+v %v", st, err)
	}
	writeTestFile(t, p.KoPNar("9.9"), "nar")
	if _, err = ResolveKoP(context.Background(), p, KoPRequired, "9.9", &log); err == nil || !strings.Contains(err.Error(), p.KoPNar("9.9")) {
		t.Errorf("a NAR that is not a zip: %v", err)
	}
	writeZip(t, p.ProtocolsDir(), filepath.Base(p.KoPNar("9.9")), map[string]string{HandlerDescriptor: kopDescriptor})
	st, err = ResolveKoP(context.Background(), p, KoPRequired, "9.9", &log)
	if err != nil || !st.Enabled || st.Nar != p.KoPNar("9.9") || st.Source != "protocols" || st.SHA256 != sha(t, st.Nar) || st.HandlerDir != p.ProtocolsDir() {
		t.Errorf("with NAR: %+v %v", st, err)
	}
}

func TestResolveKoPRunsMavenWhenProbeIsStale(t *testing.T) {
	t.Setenv("MVN", "/nonexistent/mvn")
	p := Paths{Root: t.TempDir()}
	if err := os.MkdirAll(p.ProtocolsDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	writeProbe(p, "9.9", KoPStatus{MavenError: "[ERROR] old", ProbedAt: time.Now().Add(-2 * KoPProbeTTL)})
	st, err := ResolveKoP(context.Background(), p, KoPAuto, "9.9", &strings.Builder{})
	if err != nil || st.Enabled || st.MavenError == "[ERROR] old" || !strings.Contains(st.Command, "-Pkop") {
		t.Errorf("stale probe reused or mvn not tried: %+v %v", st, err)
	}
}

func TestIsLabJVM(t *testing.T) {
	if IsLabJVM(os.Getpid(), "scus") {
		t.Error("the test process is not a lab JVM")
	}
	if IsLabJVM(0, "scus") || IsLabJVM(-1, "scus") {
		t.Error("pid <= 0")
	}
	if rss, err := RSSMB(os.Getpid()); err != nil || rss <= 0 {
		t.Errorf("RSS of self: %v %v", rss, err)
	}
}

func TestLocks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	ctx := context.Background()
	ex, err := lock(ctx, path, syscall.LOCK_EX)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := tryLock(path, syscall.LOCK_EX); ok || err != nil {
		t.Fatalf("second exclusive lock: %v %v", ok, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := lock(cctx, path, syscall.LOCK_SH); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("shared lock while exclusive held: %v", err)
	}
	ex.unlock()
	a, err := lock(ctx, path, syscall.LOCK_SH)
	if err != nil {
		t.Fatal(err)
	}
	b, ok, err := tryLock(path, syscall.LOCK_SH)
	if !ok || err != nil {
		t.Fatalf("two shared locks: %v %v", ok, err)
	}
	if _, ok, _ := tryLock(path, syscall.LOCK_EX); ok {
		t.Fatal("exclusive lock while shared held")
	}
	a.unlock()
	b.unlock()
	c, ok, err := tryLock(path, syscall.LOCK_EX)
	if !ok || err != nil {
		t.Fatalf("exclusive after release: %v %v", ok, err)
	}
	c.unlock()
}

func TestPortOffsetMovesEveryPort(t *testing.T) {
	t.Setenv("KOP_LAB_PORT_OFFSET", "200")
	wus := DefaultClusters()[1]
	if wus.Ports != (Ports{Web: 28280, Broker: 26850, Bookie: 23381, Kafka: 29292}) || wus.KafkaBootstrap != "127.0.0.1:29292" {
		t.Fatalf("wus with offset 200: %+v", wus)
	}
	for _, bad := range []string{"7", "-10", "1000", "x"} {
		t.Setenv("KOP_LAB_PORT_OFFSET", bad)
		if got := DefaultClusters()[0].Ports.Web; got != 18080 {
			t.Fatalf("offset %q: scus web %d, want the default 18080", bad, got)
		}
	}
}

// The lab's 4 bundles of public/__kafka, or splits of them, are the lab's; any other layout
// is not (a namespace KoP created with its own bundle count).
func TestMetadataBundlesOK(t *testing.T) {
	for _, tc := range []struct {
		b    *utils.BundlesData
		want bool
	}{
		{&utils.BundlesData{NumBundles: 4, Boundaries: []string{"0x00000000", "0x40000000", "0x80000000", "0xc0000000", "0xffffffff"}}, true},
		{&utils.BundlesData{NumBundles: 5, Boundaries: []string{"0x00000000", "0x40000000", "0x80000000", "0xa0000000", "0xc0000000", "0xffffffff"}}, true},
		{&utils.BundlesData{NumBundles: 4, Boundaries: []string{"0x00000000", "0x3fffffff", "0x7ffffffe", "0xbffffffd", "0xffffffff"}}, false},
		{&utils.BundlesData{NumBundles: 2, Boundaries: []string{"0x00000000", "0x80000000", "0xffffffff"}}, false},
		{nil, false},
	} {
		if got := MetadataBundlesOK(tc.b); got != tc.want {
			t.Errorf("%+v: %v, want %v", tc.b, got, tc.want)
		}
	}
}
