package pulsarx

import (
	"context"
	"errors"
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

	"github.com/apache/pulsar-client-go/pulsaradmin"
)

// fixtureServer answers GETs with the answers recorded from the lab's Pulsar 4.0.8 broker
// (testdata/admin/NAME.meta holds "STATUS PATH", NAME.body the body) and records writes.
type fixtureServer struct {
	*httptest.Server
	mu     sync.Mutex
	writes []string
}

func newFixtureServer(t *testing.T) *fixtureServer {
	t.Helper()
	metas, err := filepath.Glob("testdata/admin/*.meta")
	if err != nil || len(metas) == 0 {
		t.Fatalf("fixtures: %v", err)
	}
	type answer struct {
		code int
		body []byte
	}
	answers := map[string]answer{}
	for _, m := range metas {
		meta, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		code, path, _ := strings.Cut(strings.TrimSpace(string(meta)), " ")
		c, _ := strconv.Atoi(code)
		body, err := os.ReadFile(strings.TrimSuffix(m, ".meta") + ".body")
		if err != nil {
			t.Fatal(err)
		}
		answers[path] = answer{c, body}
	}
	fs := &fixtureServer{}
	fs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			fs.mu.Lock()
			fs.writes = append(fs.writes, r.Method+" "+r.URL.EscapedPath())
			fs.mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
			return
		}
		a, ok := answers[r.URL.EscapedPath()]
		if !ok {
			// Jetty's answer for an unknown resource.
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte("<html><body><h2>HTTP ERROR 404 Not Found</h2></body></html>"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.code)
		_, _ = w.Write(a.body)
	}))
	t.Cleanup(fs.Close)
	return fs
}

func newTestAdmin(t *testing.T, url string) *Admin {
	t.Helper()
	a, err := NewAdmin("scus", pulsaradmin.Config{WebServiceURL: url})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

const offsetsP = "persistent://public/__kafka/__consumer_offsets-partition-"

func TestAdminReads(t *testing.T) {
	fs := newFixtureServer(t)
	a := newTestAdmin(t, fs.URL)
	ctx := context.Background()

	if n, err := a.OffsetsTopicPartitions(ctx, "public", "__kafka"); n != 8 || err != nil {
		t.Errorf("OffsetsTopicPartitions = %d, %v", n, err)
	}
	if n, err := a.PartitionedTopicPartitions(ctx, offsetsP+"0"); n != 0 || err != nil {
		t.Errorf("partitions of a partition = %d, %v", n, err)
	}
	if _, err := a.PartitionedTopicPartitions(ctx, "persistent://public/__kafka/nosuch"); !errors.Is(err, ErrNotFound) {
		t.Errorf("absent topic: %v", err)
	}
	if _, err := a.OffsetsTopicPartitions(ctx, "public", "nosuch"); !errors.Is(err, ErrNotFound) {
		t.Errorf("absent namespace: %v", err)
	}

	for topic, want := range map[string]bool{
		"persistent://public/__kafka/__consumer_offsets": true,
		offsetsP + "3":                       true,
		"persistent://public/__kafka/nosuch": false,
		"persistent://public/nosuch/x":       false,
	} {
		if got, err := a.TopicExists(ctx, topic); got != want || err != nil {
			t.Errorf("TopicExists(%s) = %v, %v", topic, got, err)
		}
	}

	bundles, err := a.Bundles(ctx, "public/__kafka")
	if err != nil || len(bundles) != 4 || bundles[3] != (Bundle{"0xc0000000_0xffffffff", 0xc0000000, 0xffffffff}) {
		t.Errorf("Bundles = %+v, %v", bundles, err)
	}
	if b, err := a.BundleForTopic(ctx, offsetsP+"0"); err != nil || b.Range != "0x00000000_0x40000000" {
		t.Errorf("BundleForTopic = %+v, %v", b, err)
	}
	if b, err := a.BrokerBundleForTopic(ctx, offsetsP+"0"); err != nil || b.Range != "0x00000000_0x40000000" {
		t.Errorf("BrokerBundleForTopic = %+v, %v", b, err)
	}
	if o, err := a.LookupOwner(ctx, offsetsP+"0"); err != nil || o.BrokerURL != "pulsar://127.0.0.1:16650" || o.HTTPURL != "http://127.0.0.1:18080" {
		t.Errorf("LookupOwner = %+v, %v", o, err)
	}
	rs, err := a.ReplicationStats(ctx, offsetsP+"0")
	if err != nil || len(rs) != 1 {
		t.Fatalf("ReplicationStats = %+v, %v", rs, err)
	}
	if w, ok := rs["wus"]; !ok || w.Connected || w.ReplicationBacklog != 0 {
		t.Errorf("ReplicationStats[wus] = %+v", w)
	}
	rs, err = a.ReplicationStats(ctx, offsetsP+"1")
	if w := rs["wus"]; err != nil || !w.Connected || w.ReplicationBacklog != 0 || w.ReplicationDelayInSeconds != 0 ||
		!strings.Contains(w.OutboundConnection, "26650") || w.OutboundConnectedSince == "" {
		t.Errorf("ReplicationStats of a replicating partition = %+v, %v", w, err)
	}
	if _, err := a.ReplicationStats(ctx, "persistent://public/__kafka/nosuch"); !errors.Is(err, ErrNotFound) {
		t.Errorf("stats of absent topic: %v", err)
	}
	if l, e, ok, err := a.CursorMarkDelete(ctx, offsetsP+"0", "pulsar.repl.wus"); !ok || err != nil || l != 53 || e != 9 {
		t.Errorf("CursorMarkDelete = %d:%d %v %v", l, e, ok, err)
	}
	if _, _, ok, err := a.CursorMarkDelete(ctx, offsetsP+"0", "kop-offsets-reader-gone"); ok || err != nil {
		t.Errorf("CursorMarkDelete of absent cursor: %v %v", ok, err)
	}
	if h, err := a.ViewHorizon(ctx, offsetsP+"0"); err != nil || h != "first ledger 76, compacted ledger -1" {
		t.Errorf("ViewHorizon = %q, %v", h, err)
	}
	if cl, err := a.NamespaceReplicationClusters(ctx, "public/__kafka"); err != nil || !slices.Equal(cl, []string{"scus", "wus"}) {
		t.Errorf("NamespaceReplicationClusters = %v, %v", cl, err)
	}
	if cl, err := a.TenantAllowedClusters(ctx, "public"); err != nil || !slices.Equal(cl, []string{"scus", "wus"}) {
		t.Errorf("TenantAllowedClusters = %v, %v", cl, err)
	}
	if _, err := a.TenantAllowedClusters(ctx, "nosuch"); !errors.Is(err, ErrNotFound) {
		t.Errorf("absent tenant: %v", err)
	}
	if cl, err := a.Clusters(ctx); err != nil || !slices.Equal(cl, []string{"scus", "wus"}) {
		t.Errorf("Clusters = %v, %v", cl, err)
	}
	if v, err := a.BrokerVersion(ctx); err != nil || v != "4.0.8" {
		t.Errorf("BrokerVersion = %q, %v", v, err)
	}
	p, err := a.NamespacePolicies(ctx, "public/__kafka")
	if err != nil || !slices.Equal(p.ReplicationClusters, []string{"scus", "wus"}) || p.RetentionTimeInMinutes != nil ||
		p.CompactionThreshold != nil || p.MessageTTLInSeconds != nil || len(p.Bundles) != 4 {
		t.Errorf("NamespacePolicies = %+v, %v", p, err)
	}
	if _, err := a.NamespacePolicies(ctx, "public/nosuch"); !errors.Is(err, ErrNotFound) {
		t.Errorf("policies of absent namespace: %v", err)
	}
	if len(fs.writes) != 0 {
		t.Errorf("reads wrote: %v", fs.writes)
	}
}

func TestAdminWrites(t *testing.T) {
	fs := newFixtureServer(t)
	a := newTestAdmin(t, fs.URL)
	ctx := context.Background()
	if err := a.UnloadBundle(ctx, "public/__kafka", "0x40000000_0x80000000"); err != nil {
		t.Fatal(err)
	}
	if err := a.UnloadTopic(ctx, offsetsP+"5"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"PUT /admin/v2/namespaces/public/__kafka/0x40000000_0x80000000/unload",
		"PUT /admin/v2/persistent/public/__kafka/__consumer_offsets-partition-5/unload",
	}
	if !slices.Equal(fs.writes, want) {
		t.Errorf("writes:\n%v\nwant\n%v", fs.writes, want)
	}
	if err := a.UnloadBundle(ctx, "public/__kafka", "all"); err == nil || len(fs.writes) != 2 {
		t.Errorf("bad range: err=%v writes=%d", err, len(fs.writes))
	}
}

// every Admin call, for the error-classification tables.
var adminCalls = map[string]func(context.Context, *Admin) error{
	"OffsetsTopicPartitions": func(ctx context.Context, a *Admin) error {
		_, err := a.OffsetsTopicPartitions(ctx, "public", "__kafka")
		return err
	},
	"PartitionedTopicPartitions": func(ctx context.Context, a *Admin) error {
		_, err := a.PartitionedTopicPartitions(ctx, offsetsP+"1")
		return err
	},
	"TopicExists": func(ctx context.Context, a *Admin) error {
		_, err := a.TopicExists(ctx, offsetsP+"1")
		return err
	},
	"Bundles": func(ctx context.Context, a *Admin) error {
		_, err := a.Bundles(ctx, "public/__kafka")
		return err
	},
	"BundleForTopic": func(ctx context.Context, a *Admin) error {
		_, err := a.BundleForTopic(ctx, offsetsP+"1")
		return err
	},
	"BrokerBundleForTopic": func(ctx context.Context, a *Admin) error {
		_, err := a.BrokerBundleForTopic(ctx, offsetsP+"1")
		return err
	},
	"LookupOwner": func(ctx context.Context, a *Admin) error {
		_, err := a.LookupOwner(ctx, offsetsP+"1")
		return err
	},
	"UnloadBundle": func(ctx context.Context, a *Admin) error {
		return a.UnloadBundle(ctx, "public/__kafka", "0x00000000_0x40000000")
	},
	"UnloadTopic": func(ctx context.Context, a *Admin) error { return a.UnloadTopic(ctx, offsetsP+"1") },
	"ReplicationStats": func(ctx context.Context, a *Admin) error {
		_, err := a.ReplicationStats(ctx, offsetsP+"1")
		return err
	},
	"CursorMarkDelete": func(ctx context.Context, a *Admin) error {
		_, _, _, err := a.CursorMarkDelete(ctx, offsetsP+"1", "s")
		return err
	},
	"NamespaceReplicationClusters": func(ctx context.Context, a *Admin) error {
		_, err := a.NamespaceReplicationClusters(ctx, "public/__kafka")
		return err
	},
	"TenantAllowedClusters": func(ctx context.Context, a *Admin) error {
		_, err := a.TenantAllowedClusters(ctx, "public")
		return err
	},
	"Clusters": func(ctx context.Context, a *Admin) error {
		_, err := a.Clusters(ctx)
		return err
	},
	"BrokerVersion": func(ctx context.Context, a *Admin) error {
		_, err := a.BrokerVersion(ctx)
		return err
	},
	"NamespacePolicies": func(ctx context.Context, a *Admin) error {
		_, err := a.NamespacePolicies(ctx, "public/__kafka")
		return err
	},
}

func TestAdminErrorClassification(t *testing.T) {
	status := func(code int, body string) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_, _ = w.Write([]byte(body))
		}))
		t.Cleanup(s.Close)
		return s.URL
	}
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()

	for _, tc := range []struct {
		name     string
		url      string
		sentinel error
		status   int
		text     string
	}{
		{"500", status(500, `{"reason":"Internal Server Error"}`), ErrServer, 500, ": http 500: internal server error"},
		{"503 non-json", status(503, `oops`), ErrServer, 503, ": http 503: oops"},
		{"404 jetty html", status(404, `<html><body>HTTP ERROR 404</body></html>`), ErrNotFound, 404, ": http 404: not found"},
		{"401", status(401, `{"reason":"Authentication required"}`), ErrAuth, 401, ": http 401: authentication required"},
		{"403", status(403, `{"reason":"Don't have permission"}`), ErrAuth, 403, ": http 403"},
		{"404", status(404, `{"reason":"Namespace does not exist"}`), ErrNotFound, 404, ": http 404: namespace does not exist"},
		{"unreachable", deadURL, ErrUnreachable, 0, ": unreachable at " + deadURL + ": connection refused"},
	} {
		for name, call := range adminCalls {
			a := newTestAdmin(t, tc.url)
			err := call(context.Background(), a)
			if name == "TopicExists" && tc.status == 404 {
				continue // a missing namespace is (false, nil), tested above
			}
			var ae *AdminError
			if !errors.As(err, &ae) {
				t.Errorf("%s %s: %T %v, want *AdminError", tc.name, name, err, err)
				continue
			}
			if !errors.Is(err, tc.sentinel) || ae.Status != tc.status || ae.Cluster != "scus" {
				t.Errorf("%s %s: %v (status %d)", tc.name, name, err, ae.Status)
			}
			for _, other := range []error{ErrServer, ErrAuth, ErrNotFound, ErrUnreachable} {
				if !errors.Is(other, tc.sentinel) && errors.Is(err, other) {
					t.Errorf("%s %s: also matches %v", tc.name, name, other)
				}
			}
			if !strings.HasPrefix(err.Error(), "cluster scus: ") || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("%s %s: message %q", tc.name, name, err)
			}
		}
	}
}

func TestAdminErrorMessage(t *testing.T) {
	fs := newFixtureServer(t)
	_, err := newTestAdmin(t, fs.URL).OffsetsTopicPartitions(context.Background(), "public", "nosuch")
	want := "cluster scus: get partitioned metadata of persistent://public/nosuch/__consumer_offsets: http 404: namespace not found"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant  %s", err, want)
	}
}

func TestAdminTimeoutIsUnreachable(t *testing.T) {
	release := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer s.Close()
	defer close(release)
	a := newTestAdmin(t, s.URL)
	a.SetTimeout(50 * time.Millisecond)
	start := time.Now()
	_, err := a.Clusters(context.Background())
	if !errors.Is(err, ErrUnreachable) || time.Since(start) > 5*time.Second {
		t.Fatalf("err = %v after %v", err, time.Since(start))
	}
}

func TestAdminCallerCancelIsNotAdminError(t *testing.T) {
	fs := newFixtureServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := newTestAdmin(t, fs.URL).Clusters(ctx)
	var ae *AdminError
	if err == nil || errors.As(err, &ae) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestAdminBadNames(t *testing.T) {
	a := newTestAdmin(t, "http://127.0.0.1:1")
	if _, err := a.LookupOwner(context.Background(), "persistent://only-two/parts"); err == nil {
		t.Error("bad topic: no error")
	}
	if _, err := a.Bundles(context.Background(), "no-slash"); err == nil {
		t.Error("bad namespace: no error")
	}
}
