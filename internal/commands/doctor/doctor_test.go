package doctor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/doctor"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

func TestNewCmdDoctorFlags(t *testing.T) {
	tests := []clitest.FlagCase[Options]{
		{Args: nil, Want: Options{Format: output.Table, OffsetsRetention: 72 * time.Hour, KafkaTimeout: 5 * time.Second}},
		{Args: []string{"--topic", "topic-1", "--topic", "public/x/y,z", "--group", "g1", "-o", "json"},
			Want: Options{Format: output.JSON, Topics: []string{"topic-1", "public/x/y,z"}, Groups: []string{"g1"}, OffsetsRetention: 72 * time.Hour, KafkaTimeout: 5 * time.Second}},
		{Args: []string{"-o", "yaml", "--offsets-retention", "168h", "--kafka-timeout", "2s"}, Want: Options{Format: output.YAML, OffsetsRetention: 168 * time.Hour, KafkaTimeout: 2 * time.Second}},
		{Args: []string{"-o", "ndjson"}, Err: `invalid output format "ndjson"`},
		{Args: []string{"extra"}, Err: `unexpected argument "extra"`},
		{Args: []string{"--offsets-retention", "0s"}, Err: "--offsets-retention must be positive"},
		{Args: []string{"--topic", ""}, Err: `invalid argument "" for "--topic" flag: empty`},
		{Args: []string{"--group", "orders-*"}, Err: "a name, not a glob: doctor reads the partition one name hashes to"},
	}
	clitest.CheckFlags(t, NewCmdDoctor, tests, func(got, want *Options) bool {
		return got.Format == want.Format && strings.Join(got.Topics, "|") == strings.Join(want.Topics, "|") &&
			strings.Join(got.Groups, "|") == strings.Join(want.Groups, "|") && got.OffsetsRetention == want.OffsetsRetention &&
			got.KafkaTimeout == want.KafkaTimeout && got.Build != nil && got.Kafka != nil && got.GroupTopics != nil && got.Timeout == 15*time.Second
	})
}

// labAdmin answers like one cluster of the lab: Pulsar 4.0.8, KoP not loaded, public/__kafka
// replicated both ways with no retention or compaction policies, 8 offsets partitions.
type labAdmin struct{ *fakes.Admin }

func newLabAdmin(name string) labAdmin {
	peer := map[string]string{"scus": "wus", "wus": "scus"}[name]
	both := []string{"scus", "wus"}
	a := &fakes.Admin{Name: name, Version: "4.0.8", OffsetsPartitions: 8, ClusterNames: both,
		Runtime: map[string]string{"clusterName": name, "messagingProtocols": "[]", "defaultRetentionTimeInMinutes": "0",
			"defaultRetentionSizeInMB": "0", "brokerServiceCompactionThresholdInBytes": "0", "ttlDurationDefaultInSeconds": "0"},
		NamespaceRepl: map[string][]string{}, Policies: map[string]pulsarx.NamespacePolicy{},
		Tenants: map[string][]string{"public": both}, Topics: map[string]int32{}, Repl: map[string]map[string]pulsarx.Replication{}}
	for _, ns := range []string{"public/__kafka", "public/default"} {
		a.NamespaceRepl[ns] = both
		a.Policies[ns] = pulsarx.NamespacePolicy{ReplicationClusters: both}
	}
	for p := range int32(8) {
		topic := pulsarx.PartitionTopic("persistent://public/__kafka/__consumer_offsets", p)
		a.Topics[topic] = 1
		a.Repl[topic] = map[string]pulsarx.Replication{peer: {Connected: peer != "wus" || !wusDown}}
	}
	if name == "wus" && wusDown {
		a.Down = true
		a.DownErr = &pulsarx.AdminError{Cluster: name, Op: "get broker version", Err: errors.New("dial tcp 127.0.0.1:28080: connect: connection refused")}
	}
	return labAdmin{a}
}

func (a labAdmin) TopicActivity(ctx context.Context, topic string) (doctor.TopicActivity, error) {
	return doctor.TopicActivity{}, a.Call(ctx, "TopicActivity "+topic)
}

var wusDown bool

type refusedKafka struct{}

func (refusedKafka) Probe(_ context.Context, cl doctor.Cluster) (doctor.KafkaProbe, error) {
	a := cl.KafkaBootstrap[0]
	msg := "dial tcp " + a + ": connect: connection refused"
	return doctor.KafkaProbe{}, &doctor.KafkaProbeError{Stage: "dial", Dial: map[string]string{a: msg}, Err: errors.New(msg)}
}

func labOpts(ios *iostreams.IOStreams, format output.Format) *Options {
	cs := []config.Cluster{
		{Name: "scus", AdminURL: "http://127.0.0.1:18080", ServiceURL: "pulsar://127.0.0.1:16650", KafkaBootstrap: []string{"127.0.0.1:19092"}, Tenant: "public", MetadataNamespace: "__kafka", KafkaNamespace: "public/default"},
		{Name: "wus", AdminURL: "http://127.0.0.1:28080", ServiceURL: "pulsar://127.0.0.1:26650", KafkaBootstrap: []string{"127.0.0.1:29092"}, Tenant: "public", MetadataNamespace: "__kafka", KafkaNamespace: "public/default"},
	}
	return &Options{IO: ios, Format: format, Clusters: func() ([]config.Cluster, error) { return cs, nil },
		OffsetsRetention: doctor.DefaultOffsetsRetention, KafkaTimeout: time.Second, ReplicatorSettle: -1,
		Kafka: refusedKafka{},
		Build: func(cl config.Cluster) (*doctor.Cluster, error) {
			dc, err := BuildCluster(cl, time.Second)
			if err != nil {
				return nil, err
			}
			dc.Admin = newLabAdmin(cl.Name)
			return dc, nil
		}}
}

func TestDoctorRunLabGolden(t *testing.T) {
	for _, tc := range []struct {
		name   string
		format output.Format
		down   bool
		exit   int
	}{
		{"lab.table", output.Table, false, 1},
		{"lab.json", output.JSON, false, 1},
		{"lab-wus-down.table", output.Table, true, 3},
		{"lab-wus-down.yaml", output.YAML, true, 3},
		{"lab.tty", output.Table, false, 1},
		{"lab-no-headers.tty", output.Table, false, 1},
	} {
		wusDown = tc.down
		ios, _, out, errOut := iostreams.Test()
		if strings.HasSuffix(tc.name, ".tty") {
			ios.SetStdoutTTY(true)
			ios.SetColorEnabled(false) // goldens without escape codes
		}
		ios.SetNoHeaders(strings.Contains(tc.name, "no-headers"))
		err := doctorRun(context.Background(), labOpts(ios, tc.format))
		if cmdutil.ExitCode(err) != tc.exit || (err != nil && !cmdutil.IsSilent(err)) {
			t.Errorf("%s: err %v, want silent exit %d", tc.name, err, tc.exit)
		}
		clitest.Golden(t, "testdata/"+tc.name+".golden", out.Bytes())
		// A table's summary is on stderr, so stdout holds the findings alone.
		if tc.format == output.Table && !strings.Contains(errOut.String(), fmt.Sprintf("(exit %d)", tc.exit)) {
			t.Errorf("%s: stderr %q: want the summary", tc.name, errOut)
		}
	}
	wusDown = false
}

func TestDoctorRunConfigError(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	o := labOpts(ios, output.JSON)
	o.Build = func(cl config.Cluster) (*doctor.Cluster, error) {
		return BuildCluster(config.Cluster{Name: cl.Name}, time.Second)
	}
	err := doctorRun(context.Background(), o)
	if cmdutil.ExitCode(err) != 2 || out.Len() != 0 {
		t.Errorf("err %v, out %q", err, out)
	}
}

func TestAdminConfig(t *testing.T) {
	t.Setenv("KOP_DOCTOR_T", "s3cret")
	var auth, path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, path = r.Header.Get("Authorization"), r.URL.Path
		_, _ = w.Write([]byte("4.0.8"))
	}))
	defer srv.Close()
	dc, err := BuildCluster(config.Cluster{Name: "a", AdminURL: srv.URL + "/", PulsarAuth: &config.PulsarAuth{Token: "env:KOP_DOCTOR_T"}}, time.Second)
	if err != nil || dc.AdminURL != srv.URL {
		t.Fatalf("%+v %v", dc, err)
	}
	if _, err := dc.Admin.(doctor.PulsarAdmin).BrokerVersion(context.Background()); err != nil || auth != "Bearer s3cret" || path != "/admin/v2/brokers/version" {
		t.Errorf("version: %v, Authorization %q, path %q", err, auth, path)
	}
	_, err = BuildCluster(config.Cluster{Name: "a", AdminURL: "http://x", PulsarAuth: &config.PulsarAuth{Token: "env:KOP_DOCTOR_UNSET_X"}}, time.Second)
	if err == nil {
		t.Error("unresolvable secret accepted")
	}
}

type answeringKafka struct{}

func (answeringKafka) Probe(context.Context, doctor.Cluster) (doctor.KafkaProbe, error) {
	return doctor.KafkaProbe{Brokers: 1}, nil
}

// The lab with KoP loaded and answering, and public/__kafka keeping what KoP's offsets
// retention needs: no error finding, exit 0 (info findings printed all the same).
func TestDoctorRunHealthy(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	o := labOpts(ios, output.JSON)
	o.Kafka = answeringKafka{}
	o.Build = func(cl config.Cluster) (*doctor.Cluster, error) {
		dc, err := BuildCluster(cl, time.Second)
		if err != nil {
			return nil, err
		}
		a := newLabAdmin(cl.Name)
		a.Runtime["messagingProtocols"] = "[kafka]"
		retain, size, compact, ttl := 4320, int64(-1), int64(100<<20), 259200
		a.Policies["public/__kafka"] = pulsarx.NamespacePolicy{ReplicationClusters: []string{"scus", "wus"},
			RetentionTimeInMinutes: &retain, RetentionSizeInMB: &size, CompactionThreshold: &compact, MessageTTLInSeconds: &ttl}
		dc.Admin = a
		return dc, nil
	}
	err := doctorRun(context.Background(), o)
	if cmdutil.ExitCode(err) != 0 {
		t.Fatalf("exit %d (%v)\n%s", cmdutil.ExitCode(err), err, out)
	}
	if !strings.Contains(out.String(), `"exitCode": 0`) || !strings.Contains(out.String(), `"severity": "info"`) {
		t.Errorf("document:\n%s", out)
	}
}
