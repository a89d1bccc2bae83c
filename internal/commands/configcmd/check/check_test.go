package check

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
)

func TestNewCmdCheckFlags(t *testing.T) {
	tests := []clitest.FlagCase[Options]{
		{Args: nil, Want: Options{Format: output.Table, Timeout: 15 * time.Second}},
		{Args: []string{"-o", "json", "--timeout", "3s"}, Want: Options{Format: output.JSON, Timeout: 3 * time.Second}},
		{Args: []string{"--output=yaml"}, TTY: true, Want: Options{Format: output.YAML, Timeout: 15 * time.Second}},
		{Args: []string{"-o", "ndjson"}, Err: `invalid output format "ndjson"`},
		{Args: []string{"extra"}, Err: `unexpected argument "extra"`},
	}
	clitest.CheckFlags(t, NewCmdCheck, tests, func(got, want *Options) bool {
		return got.Format == want.Format && got.Timeout == want.Timeout && got.Prober != nil
	})
}

type fakeProber struct {
	fail  map[string]error // "cluster/endpoint" -> error
	slow  map[string]bool
	calls atomic.Int32
}

func (p *fakeProber) probe(ctx context.Context, cl config.Cluster, kind, detail string) (string, error) {
	p.calls.Add(1)
	key := cl.Name + "/" + kind
	if p.slow[key] {
		<-ctx.Done() // a probe that ignores nothing but its context
		time.Sleep(10 * time.Millisecond)
		return "", ctx.Err()
	}
	if err := p.fail[key]; err != nil {
		return "", err
	}
	return detail, nil
}

func (p *fakeProber) Admin(ctx context.Context, cl config.Cluster) (string, error) {
	return p.probe(ctx, cl, EndpointAdmin, "pulsar clusters: scus,wus")
}
func (p *fakeProber) Pulsar(ctx context.Context, cl config.Cluster) (string, error) {
	return p.probe(ctx, cl, EndpointPulsar, "offsets topic: 8 partitions")
}
func (p *fakeProber) Kafka(ctx context.Context, cl config.Cluster) (string, error) {
	return p.probe(ctx, cl, EndpointKafka, "1 brokers")
}

func clusters() []config.Cluster {
	return []config.Cluster{
		{Name: "scus", AdminURL: "http://127.0.0.1:18080", ServiceURL: "pulsar://127.0.0.1:16650", KafkaBootstrap: []string{"127.0.0.1:19092"}},
		{Name: "wus", AdminURL: "http://127.0.0.1:28080", ServiceURL: "pulsar://127.0.0.1:26650"},
	}
}

func opts(ios *iostreams.IOStreams, f output.Format, p Prober, cs []config.Cluster) *Options {
	return &Options{IO: ios, Format: f, Prober: p, Timeout: 200 * time.Millisecond,
		Clusters: func() ([]config.Cluster, error) { return cs, nil }, ConfigPath: func() string { return "/c.yaml" }}
}

var latencyRE = regexp.MustCompile(`\d+\.\dms`)

func TestCheckRunTable(t *testing.T) {
	ios, _, out, errOut := iostreams.Test()
	ios.SetStdoutTTY(true)
	p := &fakeProber{fail: map[string]error{"wus/pulsar": errors.New("dial tcp 127.0.0.1:26650: connect: connection refused")},
		slow: map[string]bool{"wus/admin": true}}
	err := checkRun(context.Background(), opts(ios, output.Table, p, clusters()))
	if cmdutil.ExitCode(err) != 3 || !cmdutil.IsSilent(err) {
		t.Fatalf("err %v", err)
	}
	if p.calls.Load() != 5 {
		t.Errorf("%d probes, want 5 (wus has no kafka)", p.calls.Load())
	}
	got := latencyRE.ReplaceAllString(out.String(), "N.Nms")
	clitest.Golden(t, "testdata/check.tty.golden", []byte(got))
	if errOut.String() != "2 of 5 endpoints failed\n" {
		t.Errorf("stderr %q", errOut)
	}
}

func TestCheckRunAllOK(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	err := checkRun(context.Background(), opts(ios, output.YAML, &fakeProber{}, clusters()[:1]))
	if err != nil {
		t.Fatal(err)
	}
	got := regexp.MustCompile(`latencyMs: [\d.]+`).ReplaceAllString(out.String(), "latencyMs: N")
	clitest.Golden(t, "testdata/check-ok.yaml.golden", []byte(got))
}

func TestCheckRunPreflightContactsNothing(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	p := &fakeProber{}
	cs := clusters()
	cs[1].PulsarAuth = &config.PulsarAuth{Token: "env:KOP_T_NOT_SET_ANYWHERE"}
	err := checkRun(context.Background(), opts(ios, output.JSON, p, cs))
	if cmdutil.ExitCode(err) != 2 || !strings.Contains(err.Error(), `cluster "wus": pulsarAuth.token`) {
		t.Fatalf("err %v", err)
	}
	if p.calls.Load() != 0 || out.Len() != 0 {
		t.Errorf("contacted %d endpoints / printed %q despite a config error", p.calls.Load(), out)
	}
}
