package lab

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const kopDescriptor = "name: kafka\ndescription: Kafka Protocol Handler\nhandlerClass: io.streamnative.pulsar.handlers.kop.KafkaProtocolHandler\n"

// writeZip writes a zip holding files (name -> content) at dir/name and returns its path.
func writeZip(t *testing.T, dir, name string, files map[string]string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for n, c := range files {
		w, err := zw.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func sha(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestInspectNar(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, file string
		files      map[string]string
		version    string
		from       string
	}{
		{"from the file name", "pulsar-protocol-handler-kafka-3.1.1.1.nar",
			map[string]string{HandlerDescriptor: kopDescriptor}, "3.1.1.1", "file name"},
		{"from the manifest", "kop.nar",
			map[string]string{HandlerDescriptor: kopDescriptor, "META-INF/MANIFEST.MF": "Manifest-Version: 1.0\r\nImplementation-Version: 4.0.6.5\r\n"},
			"4.0.6.5", "META-INF/MANIFEST.MF Implementation-Version"},
		{"from pom.properties", "kop2.nar",
			map[string]string{HandlerDescriptor: kopDescriptor,
				"META-INF/maven/io.streamnative.pulsar.handlers/pulsar-protocol-handler-kafka/pom.properties": "groupId=io.streamnative.pulsar.handlers\nversion=3.3.1.9\n"},
			"3.3.1.9", "pom.properties"},
		{"from the descriptor", "pulsar-protocol-handler-kafka-1.0.nar",
			map[string]string{HandlerDescriptor: kopDescriptor + "version: 9.9.9\n"}, "9.9.9", HandlerDescriptor},
		{"nowhere", "handler.nar", map[string]string{HandlerDescriptor: kopDescriptor}, "unknown", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeZip(t, dir, tc.file, tc.files)
			info, err := InspectNar(path)
			if err != nil {
				t.Fatal(err)
			}
			if info.Version != tc.version || (tc.from != "" && info.VersionFrom != tc.from) ||
				info.HandlerClass != "io.streamnative.pulsar.handlers.kop.KafkaProtocolHandler" || info.Name != "kafka" ||
				info.SHA256 != sha(t, path) || info.Path != path || info.Size == 0 {
				t.Errorf("%+v", info)
			}
		})
	}
}

func TestInspectNarRejects(t *testing.T) {
	dir := t.TempDir()
	notZip := filepath.Join(dir, "pulsar-protocol-handler-kafka-1.nar")
	writeTestFile(t, notZip, "this is not a zip")
	for name, tc := range map[string]struct {
		path string
		want string
	}{
		"missing":       {filepath.Join(dir, "nope.nar"), "no such file"},
		"directory":     {dir, "is a directory"},
		"not a zip":     {notZip, "not a zip archive"},
		"no descriptor": {writeZip(t, dir, "jar.nar", map[string]string{"META-INF/MANIFEST.MF": "Manifest-Version: 1.0\n"}), "no " + HandlerDescriptor},
		"no class":      {writeZip(t, dir, "noclass.nar", map[string]string{HandlerDescriptor: "name: kafka\n"}), "names no handlerClass"},
		"bad yaml":      {writeZip(t, dir, "badyaml.nar", map[string]string{HandlerDescriptor: "name: [kafka\n"}), HandlerDescriptor},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := InspectNar(tc.path)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not name %s or say %q", err, tc.path, tc.want)
			}
		})
	}
}

func TestResolveBYO(t *testing.T) {
	p := Paths{Root: t.TempDir()}
	src := writeZip(t, t.TempDir(), "pulsar-protocol-handler-kafka-3.1.1.1.nar", map[string]string{HandlerDescriptor: kopDescriptor})
	// A stale NAR in the handler directory must not be loaded beside the brought one.
	if err := os.MkdirAll(p.BYONarDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(p.BYONarDir(), "pulsar-protocol-handler-kafka-old.nar"), "old")
	st, err := ResolveBYO(p, KoPAuto, src)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(p.BYONarDir(), "pulsar-protocol-handler-kafka-3.1.1.1.nar")
	if !st.Enabled || st.Nar != want || st.HandlerDir != p.BYONarDir() || st.Source != "KOP_NAR" || st.Origin != src ||
		st.Version != "3.1.1.1" || st.SHA256 != sha(t, src) || !strings.Contains(st.Reason, st.SHA256) || !strings.Contains(st.Reason, src) {
		t.Errorf("%+v", st)
	}
	entries, _ := os.ReadDir(p.BYONarDir())
	if len(entries) != 1 || sha(t, want) != st.SHA256 {
		t.Errorf("handler directory holds %v", entries)
	}
	// Again: kept in place.
	if st2, err := ResolveBYO(p, KoPRequired, src); err != nil || st2.Nar != want {
		t.Errorf("second resolve: %+v %v", st2, err)
	}
	// KOP=off wins and does not read the file.
	if st, err := ResolveBYO(p, KoPOff, "/nonexistent.nar"); err != nil || st.Enabled || !strings.Contains(st.Reason, "KOP=off") {
		t.Errorf("off: %+v %v", st, err)
	}
	// A bad NAR is an error naming it, whatever the mode.
	if _, err := ResolveBYO(p, KoPAuto, "/nonexistent.nar"); err == nil || !strings.Contains(err.Error(), "/nonexistent.nar") {
		t.Errorf("bad NAR: %v", err)
	}
}

func TestReusableFollowsKOPNAR(t *testing.T) {
	p := Paths{Root: t.TempDir()}
	src := writeZip(t, t.TempDir(), "pulsar-protocol-handler-kafka-3.1.1.1.nar", map[string]string{HandlerDescriptor: kopDescriptor})
	kop, err := ResolveBYO(p, KoPAuto, src)
	if err != nil {
		t.Fatal(err)
	}
	st := &State{PulsarVersion: DefaultPulsarVersion, KoP: kop, StartedAt: time.Now()}
	o := Options{PulsarVersion: DefaultPulsarVersion, KoP: KoPAuto, KoPNar: src}
	// No clusters in either: only the KoP and version rules decide.
	if !reusable(st, o) {
		t.Error("same NAR: not reusable")
	}
	other := writeZip(t, t.TempDir(), "pulsar-protocol-handler-kafka-3.1.1.2.nar", map[string]string{HandlerDescriptor: kopDescriptor + "# other\n"})
	if reusable(st, Options{PulsarVersion: DefaultPulsarVersion, KoP: KoPAuto, KoPNar: other}) {
		t.Error("another NAR: reusable")
	}
	if reusable(&State{PulsarVersion: DefaultPulsarVersion}, o) {
		t.Error("KoP-less lab reused for KOP_NAR")
	}
	if reusable(st, Options{PulsarVersion: "3.3.6", KoP: KoPAuto, KoPNar: src}) {
		t.Error("other Pulsar version: reusable")
	}
	if reusable(st, Options{PulsarVersion: DefaultPulsarVersion, KoP: KoPOff}) {
		t.Error("KOP=off reuses a KoP lab")
	}
}

func TestRenderBrokerConfBYO(t *testing.T) {
	t.Setenv("KOP_LAB_PORT_OFFSET", "") // the fixed layout below
	p := repoPaths(t)
	tmpl := readTemplate(t, p.ConfTemplate())
	c := DefaultClusters()[0]
	c.KoP = true
	out, err := RenderBrokerConf(tmpl, p, c, "3.3.6", KoPStatus{Version: "3.1.1.1", HandlerDir: p.BYONarDir()})
	if err != nil {
		t.Fatal(err)
	}
	m := parseConf(t, out)
	if m["protocolHandlerDirectory"] != p.BYONarDir() || m["messagingProtocols"] != "kafka" {
		t.Errorf("protocolHandlerDirectory=%q", m["protocolHandlerDirectory"])
	}
	if !strings.Contains(string(out), "Pulsar 3.3.6") || !strings.Contains(string(out), "KoP (Kafka-on-Pulsar protocol handler) 3.1.1.1") {
		t.Errorf("versions not rendered:\n%s", out)
	}
}

func TestTopicNames(t *testing.T) {
	for in, want := range map[string]string{
		"topic-1": "persistent://public/default/topic-1", "public/default/topic-1": "persistent://public/default/topic-1",
		"persistent://t/n/x": "persistent://t/n/x", "t/n/x": "persistent://t/n/x",
	} {
		if got := fullTopic(in); got != want {
			t.Errorf("fullTopic(%q) = %q, want %q", in, got, want)
		}
	}
	if KafkaTopic("persistent://public/default/topic-1") != "topic-1" || KafkaTopic("persistent://t/n/x") != "t/n/x" || KafkaTopic("topic-1") != "topic-1" {
		t.Error("KafkaTopic")
	}
}
