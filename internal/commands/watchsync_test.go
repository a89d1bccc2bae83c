package commands

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

// watch --sync refuses to start while the offsets topic replicates between the clusters it
// would sync (1, the refusal printing the fix), before it serves anything.
func TestWatchSyncRefusedWhileReplicated(t *testing.T) {
	admin := func() *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.URL.Path == "/admin/v2/clusters":
				_, _ = w.Write([]byte(`["scus","wus"]`))
			case strings.HasSuffix(r.URL.Path, "/__consumer_offsets/replication"):
				_, _ = w.Write([]byte(`["scus","wus"]`)) // the topic-level policy: both
			default:
				http.NotFound(w, r)
			}
		}))
	}
	scus, wus := admin(), admin()
	defer scus.Close()
	defer wus.Close()
	cfg := writeConfig(t, fmt.Sprintf(`clusters:
  - name: scus
    adminURL: %s
    serviceURL: pulsar://%s
    kafkaBootstrap: [%s]
  - name: wus
    adminURL: %s
    serviceURL: pulsar://%s
    kafkaBootstrap: [%s]
`, scus.URL, fakes.ClosedAddr(t), fakes.ClosedAddr(t), wus.URL, fakes.ClosedAddr(t), fakes.ClosedAddr(t)))
	r := runBounded(t, nil, 0, "--config", cfg, "--timeout", "1s", "watch", "--sync", "--listen", "127.0.0.1:0")
	if r.code != 1 || !strings.Contains(r.errOut, "replicates to wus") || !strings.Contains(r.errOut, "\n  fix: kop-offsets sync setup") {
		t.Errorf("exit %d, want 1 naming the replication and the fix\nstdout: %s\nstderr: %s", r.code, r.out, r.errOut)
	}
}
