package clients

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/config"
)

func TestNewAdminAuth(t *testing.T) {
	var auth atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`"4.0.8"`))
	}))
	defer srv.Close()
	tokFile := filepath.Join(t.TempDir(), "tok")
	if err := os.WriteFile(tokFile, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KOP_TEST_TOKEN", "from-env")
	tests := []struct {
		auth *config.PulsarAuth
		want string
	}{
		{nil, ""},
		{&config.PulsarAuth{Token: "literal"}, "Bearer literal"},
		{&config.PulsarAuth{Token: "env:KOP_TEST_TOKEN"}, "Bearer from-env"},
		{&config.PulsarAuth{TokenFile: tokFile}, "Bearer from-file"},
	}
	for _, tt := range tests {
		a, err := NewAdmin(config.Cluster{Name: "c", AdminURL: srv.URL + "/", PulsarAuth: tt.auth}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := a.BrokerVersion(context.Background()); err != nil || v != "4.0.8" {
			t.Errorf("%+v: %q %v", tt.auth, v, err)
		}
		if got, _ := auth.Load().(string); got != tt.want {
			t.Errorf("%+v: Authorization %q, want %q", tt.auth, got, tt.want)
		}
	}
	if _, err := NewAdmin(config.Cluster{Name: "c"}, time.Second); err == nil {
		t.Error("no adminURL: no error")
	}
	if _, err := NewAdmin(config.Cluster{Name: "c", AdminURL: srv.URL, PulsarAuth: &config.PulsarAuth{Token: "env:KOP_TEST_ABSENT"}}, time.Second); err == nil {
		t.Error("absent env secret: no error")
	}
}
