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

	a, err := NewAdminWithTransport("scus", front.URL, bearer{tok: "tok"})
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

// bearer adds the token to each request, over rt (nil: http.DefaultTransport).
type bearer struct {
	tok string
	rt  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	if b.rt == nil {
		return http.DefaultTransport.RoundTrip(r)
	}
	return b.rt.RoundTrip(r)
}

// Over https a broker id (its plain web host:port) is not where it answers TLS: BrokerAddress
// asks the admin URL for a broker-scoped path with the token, takes the redirect's scheme and
// host without following it, answers the admin URL itself when no redirect comes (that broker
// is the one behind it), and fails on anything else. Over http it is the id, with no call.
func TestBrokerAddressFollowsPulsarsRedirect(t *testing.T) {
	var calls []string
	front := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls = append(calls, r.URL.Path)
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/admin/v2/brokers/scus/127.0.0.1:18081/ownedNamespaces":
			http.Redirect(w, r, "https://127.0.0.1:18078"+r.URL.Path, http.StatusTemporaryRedirect)
		case "/admin/v2/brokers/scus/127.0.0.1:18080/ownedNamespaces":
			_, _ = w.Write([]byte("{}"))
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer front.Close()
	a, err := NewAdminWithTransport("scus", front.URL, bearer{"tok", front.Client().Transport})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for id, want := range map[string]string{"127.0.0.1:18081": "https://127.0.0.1:18078", "127.0.0.1:18080": front.URL} {
		if got, err := a.BrokerAddress(ctx, "scus", id); err != nil || got != want {
			t.Errorf("%s: %q %v, want %s", id, got, err, want)
		}
	}
	if got, err := a.BrokerAddress(ctx, "scus", "127.0.0.1:18082"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("an unknown broker: %q %v", got, err)
	}
	b, err := a.ForBroker("https://127.0.0.1:18078")
	if err != nil || b.baseURL != "https://127.0.0.1:18078" || b.Cluster() != "scus broker 127.0.0.1:18078" {
		t.Errorf("ForBroker of an address: %+v %v", b, err)
	}
	if _, err := a.ForBroker("https://127.0.0.1:18078/admin"); err == nil {
		t.Error("an address with a path is accepted")
	}

	plain, err := NewAdminWithTransport("scus", "http://127.0.0.1:18080", bearer{tok: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	n := len(calls)
	if got, err := plain.BrokerAddress(ctx, "scus", "127.0.0.1:18081"); err != nil || got != "http://127.0.0.1:18081" || len(calls) != n {
		t.Errorf("over http: %q %v, %d calls", got, err, len(calls)-n)
	}
}
