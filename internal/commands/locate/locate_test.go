package locate

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
)

func TestNewCmdLocateFlags(t *testing.T) {
	tests := []clitest.FlagCase[Options]{
		{Args: []string{"G"}, Want: Options{Groups: []string{"G"}, Format: output.Table}},
		{Args: []string{"G", "H", "--partitions", "50", "-o", "json"}, Want: Options{Groups: []string{"G", "H"}, Offline: 50, Format: output.JSON}},
		{Args: nil, Err: "give at least one group"},
		{Args: []string{"G", "--partitions", "0"}, Err: "--partitions must be at least 1"},
		{Args: []string{"G", "--partitions", "8", "--cluster", "scus"}, Err: "cannot be combined with --cluster"},
		{Args: []string{"G", "-o", "ndjson"}, Err: `invalid output format "ndjson"`},
		// --group's grammar: a legal group name with * ? or [ is written escaped, as a glob
		// would match it; an unescaped glob matches many names and is refused.
		{Args: []string{`a\*b`, "--group", `c\?\[d`}, Want: Options{Groups: []string{"a*b", "c?[d"}, Format: output.Table}},
		{Args: []string{"orders-*"}, Err: "a name, not a glob"},
		{Args: []string{"--group", "orders-*"}, Err: "a name, not a glob"},
		{Args: []string{"a["}, Err: "unterminated ["},
	}
	clitest.CheckFlags(t, NewCmdLocate, tests, func(got, want *Options) bool {
		return slices.Equal(got.Groups, want.Groups) && got.Offline == want.Offline && got.Format == want.Format && got.Admin != nil
	})
}

// TestOfflineVectors checks Offline against the vectors computed with Java's String.hashCode
// (internal/loader/testdata/partition_vectors.tsv), negative hash codes included.
func TestOfflineVectors(t *testing.T) {
	f, err := os.Open("../../loader/testdata/partition_vectors.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	unescape := strings.NewReplacer(`\\`, `\`, `\t`, "\t", `\n`, "\n", `\0`, "\x00") // as the file's own test
	sc := bufio.NewScanner(f)
	n, negative := 0, 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		cols := strings.Split(line, "\t")
		group := unescape.Replace(cols[0])
		hash, _ := strconv.ParseInt(cols[1], 10, 32)
		p8, _ := strconv.Atoi(cols[2])
		p50, _ := strconv.Atoi(cols[3])
		for _, c := range []struct{ n, want int }{{8, p8}, {50, p50}} {
			l := Offline(group, int32(c.n))
			if int64(l.JavaHashCode) != hash || *l.OffsetsPartition != int32(c.want) || *l.Partitions != int32(c.n) ||
				l.PartitionTopic != "persistent://public/__kafka/__consumer_offsets-partition-"+strconv.Itoa(c.want) {
				t.Errorf("%q n=%d: %+v, want hash %d partition %d", group, c.n, l, hash, c.want)
			}
		}
		if hash < 0 {
			negative++
		}
		n++
	}
	if n < 5 || negative == 0 {
		t.Fatalf("%d vectors, %d negative", n, negative)
	}
}

func TestLocateOffline(t *testing.T) {
	for _, f := range []output.Format{output.Table, output.JSON} {
		ios, _, out, _ := iostreams.Test()
		ios.SetStdoutTTY(true)
		// kop-offsets: hash -341220097, signSafeMod 8 = 7 (Kafka's abs%8 would say 1).
		err := locateRun(context.Background(), &Options{IO: ios, Format: f, Offline: 8, Groups: []string{"G", "kop-offsets", "zzzzzzzzzz"}})
		if err != nil {
			t.Fatal(err)
		}
		clitest.Golden(t, "testdata/offline."+string(f)+".golden", out.Bytes())
	}
}

// adminServer serves the captured answers of the lab's scus (Pulsar 4.0.8).
type adminServer struct {
	t        *testing.T
	brokers  []string          // the active brokers; nil: brokers.json (one broker)
	redirect map[string]string // broker -> the URL its own requests are redirected to
	owned    map[string]any
	bundles  map[string]string // partition -> broker's bundle
	mu       sync.Mutex
	requests []string
}

func newAdminServer(t *testing.T) *adminServer {
	s := &adminServer{t: t, bundles: map[string]string{}}
	if err := json.Unmarshal(read(t, "owned.json"), &s.owned); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(read(t, "bundles.txt"))), "\n") {
		p, b, _ := strings.Cut(line, " ")
		s.bundles[p] = b
	}
	return s
}

func read(t *testing.T, name string) []byte {
	b, err := os.ReadFile(filepath.Join("testdata", "admin", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (s *adminServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r.Method+" "+r.URL.Path)
	s.mu.Unlock()
	if r.Method != http.MethodGet {
		s.t.Errorf("locate must only read: %s %s", r.Method, r.URL.Path)
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	const lookup = "/lookup/v2/topic/persistent/public/__kafka/__consumer_offsets-partition-"
	switch p := r.URL.Path; {
	case p == "/admin/v2/persistent/public/__kafka/__consumer_offsets/partitions":
		_, _ = w.Write(read(s.t, "partitions.json"))
	case p == "/admin/v2/namespaces/public/__kafka":
		_, _ = w.Write(read(s.t, "policies.json"))
	case p == "/admin/v2/clusters":
		_, _ = w.Write(read(s.t, "clusters.json"))
	case (p == "/admin/v2/brokers/scus" || p == "/admin/v2/brokers/wus") && s.brokers != nil:
		_ = json.NewEncoder(w).Encode(s.brokers)
	case p == "/admin/v2/brokers/scus" || p == "/admin/v2/brokers/wus":
		_, _ = w.Write(read(s.t, "brokers.json"))
	case strings.HasSuffix(p, "/ownedNamespaces") && s.redirect[strings.Split(p, "/")[5]] != "":
		// Pulsar sends a broker's ownership request on to that broker (307).
		http.Redirect(w, r, s.redirect[strings.Split(p, "/")[5]]+p, http.StatusTemporaryRedirect)
	case p == "/admin/v2/brokers/scus/127.0.0.1:18080/ownedNamespaces" || p == "/admin/v2/brokers/wus/127.0.0.1:18080/ownedNamespaces":
		_ = json.NewEncoder(w).Encode(s.owned)
	case strings.HasPrefix(p, lookup) && strings.HasSuffix(p, "/bundle"):
		part := strings.TrimSuffix(strings.TrimPrefix(p, lookup), "/bundle")
		b, ok := s.bundles[part]
		if !ok { // as the broker computes it
			bs, _ := pulsarx.BundlesFromBoundaries([]string{"0x00000000", "0x40000000", "0x80000000", "0xc0000000", "0xffffffff"})
			bb, _ := pulsarx.FindBundle(bs, "persistent://public/__kafka/__consumer_offsets-partition-"+part)
			b = bb.Range
		}
		_, _ = w.Write([]byte(b))
	case strings.HasPrefix(p, "/lookup/"):
		s.t.Errorf("locate must not look a topic up: %s", p)
		w.WriteHeader(http.StatusInternalServerError)
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"reason":"not found"}`))
	}
}

func onlineOpts(ios *iostreams.IOStreams, f output.Format, groups []string, clusters ...config.Cluster) *Options {
	o := &Options{IO: ios, Format: f, Groups: groups,
		Clusters: func() ([]config.Cluster, error) { return clusters, nil }}
	o.Admin = defaultAdmin(5 * time.Second)
	return o
}

func cluster(name, url string) config.Cluster {
	return config.Cluster{Name: name, AdminURL: url, Tenant: "public", MetadataNamespace: "__kafka", KafkaNamespace: "public/default"}
}

func TestLocateOnline(t *testing.T) {
	srv := newAdminServer(t)
	// Bundle 0x40000000_0x80000000 (partitions 1, 5) is not owned by anyone.
	delete(srv.owned, "public/__kafka/0x40000000_0x80000000")
	ts := httptest.NewServer(srv)
	defer ts.Close()
	ios, _, out, errOut := iostreams.Test()
	ios.SetStdoutTTY(true)
	// G: 7; kop-offsets: 7 (negative hash); a: 1 (unowned bundle)
	err := locateRun(context.Background(), onlineOpts(ios, output.JSON, []string{"G", "kop-offsets", "a"}, cluster("scus", ts.URL)))
	if err != nil {
		t.Fatalf("%v %s", err, errOut)
	}
	clitest.Golden(t, "testdata/online.json.golden", out.Bytes())
	var rows []Location
	if err := unmarshalRows(out.Bytes(), &rows); err != nil {
		t.Fatal(err)
	}
	if rows[0].Bundle != "0x80000000_0xc0000000" || rows[0].Owner == nil || *rows[0].Owner != "127.0.0.1:18080" || rows[2].Owner != nil {
		t.Errorf("rows %+v", rows)
	}
	// Ownership is listed once per cluster, not per group.
	n := 0
	for _, r := range srv.requests {
		if strings.HasSuffix(r, "/ownedNamespaces") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d ownership listings: %v", n, srv.requests)
	}

	out.Reset()
	if err := locateRun(context.Background(), onlineOpts(ios, output.Table, []string{"G", "a"}, cluster("scus", ts.URL))); err != nil {
		t.Fatal(err)
	}
	clitest.Golden(t, "testdata/online.table.golden", []byte(strings.ReplaceAll(out.String(), ts.URL, "URL")))
}

func TestLocateBundleMismatchAndUnreachable(t *testing.T) {
	srv := newAdminServer(t)
	srv.bundles["7"] = "0x00000000_0x40000000"
	ts := httptest.NewServer(srv)
	defer ts.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()

	ios, _, out, _ := iostreams.Test()
	err := locateRun(context.Background(), onlineOpts(ios, output.JSON, []string{"G"}, cluster("scus", ts.URL), cluster("wus", dead.URL)))
	if cmdutil.ExitCode(err) != 3 {
		t.Fatalf("exit %d: %v", cmdutil.ExitCode(err), err)
	}
	var rows []Location
	if err := unmarshalRows(out.Bytes(), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Cluster != "scus" || rows[1].Cluster != "wus" {
		t.Fatalf("rows %+v", rows)
	}
	if rows[0].Bundle != "0x00000000_0x40000000" || rows[0].ComputedBundle != "0x80000000_0xc0000000" ||
		!strings.Contains(rows[0].Error, "the broker places the topic in bundle 0x00000000_0x40000000, the computed bundle is 0x80000000_0xc0000000") {
		t.Errorf("mismatch row %+v", rows[0])
	}
	if !strings.HasPrefix(rows[1].Error, "offsets topic: admin http://127.0.0.1:") || !strings.Contains(rows[1].Error, ": connection refused; fix: start its brokers") ||
		strings.Contains(rows[1].Error, "wus") || rows[1].OffsetsPartition != nil {
		t.Errorf("unreachable row %+v", rows[1])
	}
}

func TestLocatePartitionCountsDiffer(t *testing.T) {
	srv := newAdminServer(t)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	ios, _, out, errOut := iostreams.Test()
	o := onlineOpts(ios, output.JSON, []string{"G"}, cluster("scus", ts.URL), cluster("wus", ts.URL))
	base := o.Admin
	o.Admin = func(cl config.Cluster) (Admin, error) {
		a, err := base(cl)
		if cl.Name == "wus" {
			return fiftyPartitions{a}, err
		}
		return a, err
	}
	if err := locateRun(context.Background(), o); err != nil {
		t.Fatal(err, out.String())
	}
	if !strings.Contains(errOut.String(), "different partition counts (scus: 8; wus: 50)") {
		t.Errorf("stderr %q", errOut)
	}
	var rows []Location
	_ = unmarshalRows(out.Bytes(), &rows)
	if *rows[0].OffsetsPartition != 7 || *rows[1].OffsetsPartition != 21 {
		t.Errorf("rows %+v", rows)
	}
}

type fiftyPartitions struct{ Admin }

func (fiftyPartitions) OffsetsTopicPartitions(context.Context, string, string) (int32, error) {
	return 50, nil
}

// One broker of two cannot list its bundles (its address refuses): the rows whose bundle
// the other broker owns are answered (exit 0, a warning names the broker); a row whose
// bundle no answering broker owns names the failing broker (exit 3).
func TestLocateOneBrokerDown(t *testing.T) {
	srv := newAdminServer(t)
	delete(srv.owned, "public/__kafka/0x40000000_0x80000000") // group a's bundle: no answering broker owns it
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	srv.brokers = []string{"127.0.0.1:18080", "127.0.0.1:18081"}
	srv.redirect = map[string]string{"127.0.0.1:18081": dead.URL}
	ts := httptest.NewServer(srv)
	defer ts.Close()

	ios, _, out, errOut := iostreams.Test()
	err := locateRun(context.Background(), onlineOpts(ios, output.JSON, []string{"G"}, cluster("scus", ts.URL)))
	if err != nil {
		t.Fatalf("G is owned by the broker that answered: %v", err)
	}
	var rows []Location
	if err := unmarshalRows(out.Bytes(), &rows); err != nil {
		t.Fatal(err)
	}
	if rows[0].Owner == nil || *rows[0].Owner != "127.0.0.1:18080" || rows[0].Error != "" {
		t.Errorf("G: %+v", rows[0])
	}
	if w := errOut.String(); !strings.Contains(w, "warning: cluster scus: broker 127.0.0.1:18081 did not list its bundles") || !strings.Contains(w, "unreachable") {
		t.Errorf("stderr %q", w)
	}

	ios, _, out, _ = iostreams.Test()
	err = locateRun(context.Background(), onlineOpts(ios, output.JSON, []string{"G", "a"}, cluster("scus", ts.URL)))
	if cmdutil.OutcomeOf(err) != outcome.Unreachable {
		t.Fatalf("exit %d: %v", cmdutil.ExitCode(err), err)
	}
	rows = nil
	if err := unmarshalRows(out.Bytes(), &rows); err != nil {
		t.Fatal(err)
	}
	if rows[0].Owner == nil || rows[0].Error != "" {
		t.Errorf("G: %+v", rows[0])
	}
	if rows[1].Owner != nil || !strings.Contains(rows[1].Error, "owner of public/__kafka/0x40000000_0x80000000 unknown") ||
		!strings.Contains(rows[1].Error, "broker 127.0.0.1:18081") {
		t.Errorf("a: %+v", rows[1])
	}
}

// unmarshalRows reads the locations of a -o json document, which must carry schemaVersion 1.
func unmarshalRows(b []byte, rows *[]Location) error {
	var doc Document
	if err := json.Unmarshal(b, &doc); err != nil {
		return err
	}
	if doc.SchemaVersion != 1 || doc.Errors == nil {
		return fmt.Errorf("not a document with schemaVersion 1 and errors: %s", b)
	}
	*rows = doc.Locations
	return nil
}

// TestLocateDocumentErrors: a cluster down fails every group alike, one error object says so.
func TestLocateDocumentErrors(t *testing.T) {
	down := "offsets topic: admin http://127.0.0.1:1: connection refused; fix: start its brokers"
	doc := document([]Location{{Group: "G", Cluster: "wus", Error: down}, {Group: "a", Cluster: "wus", Error: down}, {Group: "G", Cluster: "scus"}})
	if len(doc.Errors) != 1 {
		t.Fatalf("errors %+v, want one", doc.Errors)
	}
	e := doc.Errors[0]
	if e.Cluster != "wus" || e.Cause != "offsets topic: admin http://127.0.0.1:1: connection refused" || e.Fix != "start its brokers" ||
		e.Error != "cluster wus: "+down {
		t.Errorf("error %+v", e)
	}
	if doc := document(nil); doc.Locations == nil || doc.Errors == nil {
		t.Errorf("no rows: %+v, want empty arrays", doc)
	}
}
