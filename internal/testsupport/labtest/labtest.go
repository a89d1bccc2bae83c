// Package labtest is the harness of the tests that run on the lab (the e2e tests and the KoP
// suite): the lab of the run, clients of its clusters that close when the test ends, offset
// commits in KoP's format, names no earlier run used, and a kop-offsets Factory configured for
// the lab. Import it only from tests; a package's TestMain is
//
//	func TestMain(m *testing.M) { labtest.Main(m) }
//
// The lab package's own tests, and pulsarx's (which the lab does not import but this package
// does), start the lab with labrun.Ensure directly.
package labtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kop-offsets/kop-offsets/internal/audit"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/factory"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest/labrun"
)

// StartBudget is how long a test waits for the lab to start, or to be found running: 10
// minutes, or a minute more than KOP_LAB_START_TIMEOUT when that is longer (a 2x2 lab under
// load is given 15 minutes to start, and the test must not give up first).
func StartBudget() time.Duration {
	d := 10 * time.Minute
	if v, err := time.ParseDuration(os.Getenv("KOP_LAB_START_TIMEOUT")); err == nil && v+time.Minute > d {
		d = v + time.Minute
	}
	return d
}

// Main runs a package's tests on the lab and releases it at the end (labrun.Main).
func Main(m *testing.M) { labrun.Main(m) }

// Lab returns the lab of this run, starting it if needed (labrun.Ensure); the test fails when
// the lab cannot start.
func Lab(t testing.TB) *lab.Lab {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), StartBudget())
	defer cancel()
	l, err := labrun.Ensure(ctx)
	if err != nil {
		t.Fatalf("lab: %v", err)
	}
	return l
}

// Name returns prefix-<nanoseconds>: a group, topic or subscription name of this run only.
func Name(prefix string) string { return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()) }

// Pulsar returns a Pulsar client of c (no client log; TLS and the superuser token on an auth
// lab), closed when the test ends.
func Pulsar(t testing.TB, c lab.Cluster) pulsar.Client {
	t.Helper()
	pc, err := lab.NewPulsarClient(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pc.Close)
	return pc
}

// Admin returns a pulsaradmin client of c.
func Admin(t testing.TB, c lab.Cluster) pulsaradmin.Client {
	t.Helper()
	a, err := lab.NewAdmin(c)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// PulsarxAdmin returns the product's admin wrapper of c.
func PulsarxAdmin(t testing.TB, c lab.Cluster) *pulsarx.Admin {
	t.Helper()
	var a *pulsarx.Admin
	var err error
	if c.Auth == nil {
		a, err = pulsarx.NewAdmin(c.Name, pulsaradmin.Config{WebServiceURL: c.AdminURL})
	} else {
		// An auth lab: over https with the lab's CA and the superuser's token.
		rt, url, terr := lab.AdminTransport(c)
		if terr != nil {
			t.Fatal(terr)
		}
		a, err = pulsarx.NewAdminWithTransport(c.Name, url, rt)
	}
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Kafka returns a Kafka client of c's KoP listener with opts, closed when the test ends.
func Kafka(t testing.TB, c lab.Cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return KafkaAs(t, c, "", opts...)
}

// KafkaAs is Kafka authenticated as tenant tn of a multi-tenant lab ("": public).
func KafkaAs(t testing.TB, c lab.Cluster, tn string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := lab.KafkaClientAs(c, tn, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Writer returns a writer of offset commits in KoP's format to c's offsets topic (what KoP
// would write, without KoP), closed when the test ends.
func Writer(t testing.TB, c lab.Cluster) *kop.Writer {
	t.Helper()
	w := kop.NewWriter(Pulsar(t, c), lab.OffsetsTopic, lab.OffsetsTopicPartitions)
	t.Cleanup(w.Close)
	return w
}

// Factory returns kop-offsets' Factory with the lab's config.yaml as KOP_OFFSETS_CONFIG (no
// other environment), and the buffers of its streams.
func Factory(l *lab.Lab) (*cmdutil.Factory, clitest.Streams) {
	ios, in, out, errOut := iostreams.Test()
	f := factory.NewWithEnv("e2e", ios, func(k string) string {
		if k == "KOP_OFFSETS_CONFIG" {
			return l.ConfigPath
		}
		return ""
	})
	return f, clitest.Streams{In: in, Out: out, ErrOut: errOut}
}

// GetJSON decodes the JSON answer of a GET of url (an admin REST call) into v.
func GetJSON(t testing.TB, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// Binary builds bin/kop-offsets into the test's temporary directory, for tests that run it as
// a process of its own (another host's operator, a cron job).
func Binary(t testing.TB) string {
	t.Helper()
	bin, err := lab.BuildKopOffsets(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// ConfigCopy writes l's config to a file of its own named name: another operator's config
// naming the same clusters.
func ConfigCopy(t testing.TB, l *lab.Lab, name string) string {
	t.Helper()
	p, err := l.ConfigCopy(t.TempDir(), name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// StopBroker stops broker i of cluster c by its pid (lab.StopBroker) and starts it again
// when the test ends, unless the test did (StartBroker). On a standalone lab broker 0 is the
// whole cluster (one JVM); another broker fails the test: run it with KOP_LAB_BROKERS=2 (make
// e2e-topology).
func StopBroker(t testing.TB, l *lab.Lab, c string, i int) {
	downBroker(t, l, c, i, "stop", l.StopBroker)
}

// KillBroker is StopBroker with SIGKILL (lab.KillBroker): a crashed broker. It is started
// again when the test ends, unless the test did.
func KillBroker(t testing.TB, l *lab.Lab, c string, i int) {
	downBroker(t, l, c, i, "kill", l.KillBroker)
}

// downBroker takes broker i of c down with down and starts it again when the test ends.
func downBroker(t testing.TB, l *lab.Lab, c string, i int, verb string, down func(context.Context, string, int) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := down(ctx, c, i); err != nil {
		t.Fatalf("%s %s broker-%d: %v", verb, c, i, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), StartBudget())
		defer cancel()
		if err := l.StartBroker(ctx, c, i); err != nil {
			t.Errorf("start %s broker-%d again: %v", c, i, err)
		}
		refreshState(t, l)
	})
}

// StartBroker starts broker i of cluster c again and waits until it is healthy; a broker
// that runs is left alone.
func StartBroker(t testing.TB, l *lab.Lab, c string, i int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), StartBudget())
	defer cancel()
	if err := l.StartBroker(ctx, c, i); err != nil {
		t.Fatalf("start %s broker-%d: %v", c, i, err)
	}
	refreshState(t, l)
}

// ReadTrail is every record of the audit trail file p; the test stops when it cannot be read.
func ReadTrail(t testing.TB, p string) []audit.Record {
	t.Helper()
	recs, err := audit.ReadFile(p, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}
