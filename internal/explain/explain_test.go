package explain

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/oauth2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

// adminErr is what pulsarx.Admin returns for the offsets topic's metadata at url.
func adminErr(t *testing.T, url string) error {
	t.Helper()
	a, err := pulsarx.NewAdminWithTransport("scus", url, http.DefaultTransport)
	if err != nil {
		t.Fatal(err)
	}
	a.SetTimeout(2 * time.Second)
	_, err = a.OffsetsTopicPartitions(context.Background(), "public", "__kafka")
	if err == nil {
		t.Fatal("no error")
	}
	return err
}

func TestAdminCauses(t *testing.T) {
	serve := func(code int, body string) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(code)
			_, _ = w.Write([]byte(body))
		}))
		t.Cleanup(s.Close)
		return s.URL
	}
	tests := []struct {
		name, url, cause, fix string
	}{
		{"refused", "http://" + fakes.ClosedAddr(t), CauseRefused, "correct its adminURL"},
		{"html 404", serve(404, "<html><body>Not Found</body></html>"), CauseNotAdminAPI + " (http 404)", "must be Pulsar's web service"},
		{"plain 404", serve(404, "404 page not found"), CauseNotAdminAPI + " (http 404)", "must be Pulsar's web service"},
		{"pulsar's 404", serve(404, `{"reason":"Partitioned Topic not found"}`), CauseNotFound + ": partitioned topic not found", "metadataNamespace"},
		{"401", serve(401, `{"reason":"Unauthorized"}`), CauseAuth + " (http 401)", "check its pulsarAuth"},
		{"500", serve(500, `{"reason":"boom"}`), CauseServer + " (http 500): boom", "read its broker log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Asked as the persisted side (kind pulsar): an admin call is labelled admin.
			e := New("scus", Pulsar, "", adminErr(t, tt.url))
			if e.Endpoint != Admin || e.Cause != tt.cause || !strings.Contains(e.Fix, tt.fix) {
				t.Fatalf("endpoint %s, cause %q, fix %q", e.Endpoint, e.Cause, e.Fix)
			}
			line := e.Error()
			if !strings.HasPrefix(line, "cluster scus: admin: "+tt.cause) || !strings.Contains(line, "(get partitioned metadata of persistent://public/__kafka/__consumer_offsets)") {
				t.Errorf("line %q", line)
			}
			if e.Detail == "" || !errors.Is(e, e.Err) {
				t.Errorf("detail %q, unwrap %v", e.Detail, e.Err)
			}
		})
	}
}

// franz-go's "N separate shard errors" is unwrapped to what each broker answered.
func TestKafkaShardErrors(t *testing.T) {
	addr := fakes.ClosedAddr(t)
	c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = kadm.NewClient(c).ListGroups(context.Background())
	if _, ok := errors.AsType[*kadm.ShardErrors](err); !ok {
		t.Fatalf("not shard errors: %v", err)
	}
	e := New("wus", Kafka, addr, err)
	line := e.Error()
	if e.Cause != CauseRefused || strings.Contains(line, "shard") ||
		line != fmt.Sprintf("cluster wus: kafka %s: connection refused (ListGroups)", addr) || !strings.HasPrefix(e.Fix, "load KoP") {
		t.Errorf("cause %q, line %q", e.Cause, line)
	}
	if !strings.Contains(e.Detail, addr) {
		t.Errorf("detail %q does not name the broker", e.Detail)
	}
}

func TestOtherCauses(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		cause string
		fix   string
	}{
		{"dns", &net.OpError{Op: "dial", Err: &net.DNSError{Name: "nohost.invalid", Err: "no such host"}}, CauseDNS + ": nohost.invalid", "correct the host name in its serviceURL"},
		{"timeout", fmt.Errorf("lookup: %w", context.DeadlineExceeded), CauseTimeout, "raise --timeout"},
		{"pulsar client text", errors.New("connection error: dial tcp 127.0.0.1:1: connect: connection refused"), CauseRefused, "correct its serviceURL"},
		{"oauth2 issuer", fmt.Errorf("get token: %w", &oauth2.TokenError{ErrorCode: "invalid_client", ErrorDescription: "bad secret"}),
			CauseAuth + " by the OAuth2 issuer: bad secret (invalid_client)", "check its pulsarAuth.oauth2"},
		{"unknown", errors.New("something else"), "something else", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := New("wus", Pulsar, "pulsar://h:6650", tt.err)
			if e.Endpoint != Pulsar || e.Cause != tt.cause || !strings.Contains(e.Fix, tt.fix) || (tt.fix == "" && e.Fix != "") {
				t.Errorf("endpoint %s, cause %q, fix %q", e.Endpoint, e.Cause, e.Fix)
			}
			if !strings.HasPrefix(e.Error(), "cluster wus: pulsar pulsar://h:6650: "+tt.cause) {
				t.Errorf("line %q", e.Error())
			}
		})
	}
}
