//go:build e2e

package doctor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/kop-offsets/kop-offsets/internal/doctor"
	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
)

// The lab as it is, in either mode. Without KoP (no KOP_NAR) each cluster must have exactly
// the kop-listener error; with KoP there is none. When the lab creates public/__kafka itself,
// before any KoP could, the namespace has none of the policies KoP would set and doctor
// reports the missing retention too; the tests derive that expectation from the namespace's
// own policies rather than assuming it.

func TestMain(m *testing.M) { labtest.Main(m) }

// runDoctor runs `kop-offsets --config <lab> doctor -o json args...` and decodes the result.
func runDoctor(t *testing.T, l *lab.Lab, args ...string) (Result, int) {
	t.Helper()
	f, s := clitest.NewFactory("e2e", false)
	r := clitest.Run(context.Background(), clitest.NewTestRoot(f, NewCmdDoctor(f, nil)), s,
		append([]string{"--config", l.ConfigPath, "--timeout", "10s", "doctor", "-o", "json"}, args...)...)
	code := r.Code
	var res Result
	if jerr := json.Unmarshal([]byte(r.Out), &res); jerr != nil {
		t.Fatalf("exit %d, err %v, stderr %s: %v\n%s", code, r.Err, r.ErrOut, jerr, r.Out)
	}
	if res.ExitCode.ExitCode() != code {
		t.Errorf("exitCode %d in the document, process exit %d", res.ExitCode, code)
	}
	return res, code
}

// labLacksRetention reports whether public/__kafka on c has no retention policy and the
// broker default keeps nothing (the lab's set-up), read with plain HTTP.
func labLacksRetention(t *testing.T, c lab.Cluster) bool {
	t.Helper()
	var ns map[string]any
	labtest.GetJSON(t, c.AdminURL+"/admin/v2/namespaces/public/__kafka", &ns)
	if _, ok := ns["retention_policies"]; ok {
		return false
	}
	var rc map[string]string
	labtest.GetJSON(t, c.AdminURL+"/admin/v2/brokers/configuration/runtime", &rc)
	return rc["defaultRetentionTimeInMinutes"] == "0"
}

type key struct{ check, cluster, peer string }

func errorsOf(res Result) map[key]doctor.Finding {
	m := map[key]doctor.Finding{}
	for _, f := range res.Findings {
		if f.Severity == doctor.SeverityError {
			m[key{f.Check, f.Cluster, f.Peer}] = f
		}
	}
	return m
}

// assertBaseline checks the lab as it is: no error but the expected ones, and exit 1 when
// there are any (always without KoP), else 0.
func assertBaseline(t *testing.T, l *lab.Lab) {
	t.Helper()
	res, code := runDoctor(t, l)
	want := map[key]bool{}
	for _, c := range l.Clusters {
		if !c.KoP {
			want[key{doctor.CheckKoPListener, c.Name, ""}] = true
		}
		if labLacksRetention(t, c) {
			want[key{doctor.CheckOffsetsRetention, c.Name, ""}] = true
		}
	}
	got := errorsOf(res)
	for k, f := range got {
		if !want[k] {
			t.Errorf("unexpected error finding: %+v", f)
		}
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("missing error finding %+v", k)
		}
	}
	for _, c := range l.Clusters {
		if c.KoP {
			continue
		}
		f := got[key{doctor.CheckKoPListener, c.Name, ""}]
		if f.Message != "KoP does not answer at "+c.KafkaBootstrap || f.Evidence["error"] == nil {
			t.Errorf("kop-listener finding: %+v", f)
		}
	}
	wantCode := 0
	if len(want) > 0 {
		wantCode = outcome.Found.ExitCode()
	}
	if code != wantCode || len(res.Unreachable) != 0 {
		t.Errorf("exit %d, want %d (%d expected errors); unreachable %v", code, wantCode, len(want), res.Unreachable)
	}
	for _, c := range res.Clusters {
		if !c.Reachable || c.BrokerVersion != l.State.PulsarVersion || c.OffsetsPartitions == nil || *c.OffsetsPartitions != 8 {
			t.Errorf("cluster %+v", c)
		}
	}
}

func TestDoctorLab(t *testing.T) {
	l := labtest.Lab(t)
	assertBaseline(t, l)
}

func TestDoctorMetadataNamespaceNotReplicated(t *testing.T) {
	l := labtest.Lab(t)
	scus := l.Cluster("scus")
	a := labtest.Admin(t, scus)
	ctx := context.Background()
	if err := a.Namespaces().SetNamespaceReplicationClustersWithContext(ctx, "public/__kafka", []string{"scus"}); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore := func() {
		if restored {
			return
		}
		if err := a.Namespaces().SetNamespaceReplicationClustersWithContext(ctx, "public/__kafka", []string{"scus", "wus"}); err != nil {
			t.Errorf("restore public/__kafka replication on scus: %v", err)
		}
		restored = true
	}
	t.Cleanup(restore)

	res, code := runDoctor(t, l)
	f, ok := errorsOf(res)[key{doctor.CheckMetadataNamespace, "scus", "wus"}]
	if !ok || code != outcome.Found.ExitCode() {
		t.Fatalf("exit %d, findings %+v", code, res.Findings)
	}
	if f.Fix != "pulsar-admin --admin-url "+scus.AdminURL+" namespaces set-clusters public/__kafka --clusters scus,wus" {
		t.Errorf("fix %q", f.Fix)
	}
	if !strings.Contains(f.Message, "does not replicate to wus") {
		t.Errorf("message %q", f.Message)
	}
	restore()
	waitBaseline(t, l)
}

// waitBaseline retries the baseline a few times: replicators restarted by a restore need a
// moment to connect.
func waitBaseline(t *testing.T, l *lab.Lab) {
	t.Helper()
	for i := 0; ; i++ {
		res, _ := runDoctor(t, l)
		extra := false
		for k := range errorsOf(res) {
			if k.check != doctor.CheckKoPListener && k.check != doctor.CheckOffsetsRetention {
				extra = true
			}
		}
		if !extra || i == 10 {
			break
		}
		time.Sleep(2 * time.Second)
	}
	assertBaseline(t, l)
}

func TestDoctorTopicPartitionMismatch(t *testing.T) {
	l := labtest.Lab(t)
	ctx := context.Background()
	var b [4]byte
	_, _ = rand.Read(b[:])
	topic := "persistent://public/default/doctor-e2e-" + hex.EncodeToString(b[:])
	tn, err := utils.GetTopicName(topic)
	if err != nil {
		t.Fatal(err)
	}
	sa, wa := labtest.Admin(t, l.Cluster("scus")), labtest.Admin(t, l.Cluster("wus"))
	if err := sa.Topics().CreateWithContext(ctx, *tn, 2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, a := range []pulsaradmin.Client{sa, wa} {
			for i := 0; i < 5; i++ {
				err := a.Topics().DeleteWithContext(ctx, *tn, true, false)
				if err == nil || strings.Contains(err.Error(), "404") {
					break
				}
				time.Sleep(time.Second)
			}
		}
	})
	// Pulsar 4.0 creates the partitioned metadata on the remote clusters of a replicated
	// namespace too, asynchronously: wait for wus to have 2 partitions, then grow wus alone
	// to 3.
	for i := 0; ; i++ {
		md, err := wa.Topics().GetMetadataWithContext(ctx, *tn)
		if err == nil && md.Partitions == 2 {
			break
		}
		if i == 50 {
			t.Fatalf("wus never got the partitioned topic: %v %+v", err, md)
		}
		time.Sleep(200 * time.Millisecond)
	}
	url := l.Cluster("wus").AdminURL + "/admin/v2/persistent/public/default/" + tn.GetLocalName() + "/partitions?updateLocalTopicOnly=true"
	resp, err := http.Post(url, "application/json", strings.NewReader("3"))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("grow the topic on wus: %s", resp.Status)
	}
	short := strings.TrimPrefix(topic, "persistent://public/default/")
	res, code := runDoctor(t, l, "--topic", short)
	f, ok := errorsOf(res)[key{doctor.CheckTopicPartitions, "scus", ""}]
	if !ok || code != outcome.Found.ExitCode() {
		t.Fatalf("exit %d, findings %+v", code, res.Findings)
	}
	if f.Fix != "pulsar-admin --admin-url "+l.Cluster("scus").AdminURL+" topics update-partitioned-topic "+topic+" --partitions 3" {
		t.Errorf("fix %q", f.Fix)
	}
	if f.Subject != topic || !strings.Contains(f.Message, "2 partitions on scus but 3") {
		t.Errorf("%+v", f)
	}
	for k := range errorsOf(res) {
		if k.check != doctor.CheckKoPListener && k.check != doctor.CheckOffsetsRetention && k.check != doctor.CheckTopicPartitions {
			t.Errorf("unexpected error %v", k)
		}
	}
	var warned bool
	for _, f := range res.Findings {
		warned = warned || (f.Check == doctor.CheckTopicOffsetAlignment && f.Subject == topic && f.Severity == doctor.SeverityWarning)
	}
	if !warned {
		t.Error("no offsets-alignment warning for a topic on both clusters")
	}
}

func TestDoctorWusStopped(t *testing.T) {
	l := labtest.Lab(t)
	st, err := lab.ReadState(l.Paths.StateFile())
	if err != nil || st == nil {
		t.Fatalf("state: %v", err)
	}
	var pid int
	for _, c := range st.Clusters {
		if c.Name == "wus" {
			pid = c.PID
		}
	}
	if !lab.IsLabJVM(pid, "wus") {
		t.Fatalf("pid %d is not the lab's wus", pid)
	}
	keep := st.Keep
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		// Up sees wus dead and restarts the lab (both JVMs), then configures it again.
		if _, err := lab.Up(ctx, lab.Options{Keep: keep}); err != nil {
			t.Errorf("bring the lab back: %v", err)
			return
		}
		waitBaseline(t, l)
	})
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for lab.IsLabJVM(pid, "wus") {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(500 * time.Millisecond)
	}

	res, code := runDoctor(t, l)
	if code != outcome.Unreachable.ExitCode() || !slices.Equal(res.Unreachable, []string{"wus"}) {
		t.Fatalf("exit %d, unreachable %v", code, res.Unreachable)
	}
	errs := errorsOf(res)
	if f, ok := errs[key{doctor.CheckAdminReachable, "wus", ""}]; !ok || !strings.Contains(f.Fix, "wus") {
		t.Errorf("admin-reachable: %+v", f)
	}
	f, ok := errs[key{doctor.CheckOffsetsReplicator, "scus", "wus"}]
	if !ok || !strings.Contains(f.Message, "disconnected") || !strings.Contains(f.Fix, "bring wus back") {
		t.Errorf("replicator: %+v (all: %+v)", f, res.Findings)
	}
}
