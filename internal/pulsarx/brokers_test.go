package pulsarx

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Two brokers, each its own web server with its own version and a Bearer check: the
// cluster's admin URL lists both; ForBroker asks each at its own address with the same auth.
func TestForBrokerAsksThatBroker(t *testing.T) {
	brokerSrv := func(version string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer tok" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			if r.URL.Path != "/admin/v2/brokers/version" {
				w.WriteHeader(http.StatusNotFound)
				return
			}
			_, _ = w.Write([]byte(version))
		}))
	}
	b1, b2 := brokerSrv("4.0.8"), brokerSrv("4.0.6")
	defer b1.Close()
	defer b2.Close()
	id := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/admin/v2/brokers/scus" {
			_, _ = w.Write([]byte(`["` + id(b2) + `","` + id(b1) + `"]`))
			return
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	defer front.Close()

	a, err := NewAdminWithTransport("scus", front.URL, bearer{"tok"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ids, err := a.ActiveBrokers(ctx, "scus")
	if err != nil || len(ids) != 2 || ids[0] > ids[1] {
		t.Fatalf("brokers %v %v", ids, err)
	}
	for _, c := range []struct {
		srv  *httptest.Server
		want string
	}{{b1, "4.0.8"}, {b2, "4.0.6"}} {
		b, err := a.ForBroker(id(c.srv))
		if err != nil {
			t.Fatal(err)
		}
		if v, err := b.BrokerVersion(ctx); err != nil || v != c.want {
			t.Errorf("broker %s: version %q %v, want %s", id(c.srv), v, err, c.want)
		}
		if b.Cluster() != "scus broker "+id(c.srv) {
			t.Errorf("errors are labelled %q", b.Cluster())
		}
	}
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	b, _ := a.ForBroker(id(dead))
	if _, err := b.BrokerVersion(ctx); !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "scus broker "+id(dead)) {
		t.Errorf("a stopped broker: %v", err)
	}
	if _, err := a.ForBroker("evil/path"); err == nil {
		t.Error("a broker id with a path is accepted")
	}
}

type bearer struct{ tok string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}
