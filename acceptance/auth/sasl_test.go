//go:build e2e

package auth

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/config"
)

// TestSCRAMRefusedByKoPNamed: KoP 3.1 offers SASL PLAIN and OAUTHBEARER only. A config that
// asks for SCRAM-SHA-256 gets, from doctor, the listener named as refusing the mechanism (not
// "KoP does not answer", whose fix is about listeners and the NAR), and check exits 3 naming
// the cluster, with the persisted side still read.
func TestSCRAMRefusedByKoPNamed(t *testing.T) {
	l := authLab(t)
	if !l.KoP.Enabled {
		t.Skip("needs KoP (KOP_NAR)")
	}
	path := editedConfig(t, l, filepath.Join(t.TempDir(), "scram.yaml"), func(c *config.Cluster) {
		c.KafkaAuth.SASL.Mechanism = config.MechanismScramSHA256
	})

	code, out, _ := runCLI(t, path, "--timeout", "30s", "--cluster", "scus", "doctor", "-o", "json")
	var doc struct {
		Findings []struct{ Check, Cluster, Severity, Message, Fix string }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("doctor: exit %d, %v", code, err)
	}
	named := false
	for _, f := range doc.Findings {
		if f.Check == "kop-listener" && f.Cluster == "scus" && strings.Contains(f.Message, "does not accept the configured SASL mechanism") {
			named = true
		}
		if strings.Contains(f.Message, "KoP does not answer") {
			t.Errorf("doctor blames the listener for a refused mechanism: %+v", f)
		}
	}
	if !named || code == 0 {
		t.Errorf("doctor with SCRAM: exit %d, no finding naming the refused mechanism: %+v", code, doc.Findings)
	}

	rep, code := checkJSON(t, path, "--cluster", "scus")
	msgs := ""
	for _, e := range rep.Errors {
		msgs += e.Cluster + " " + e.Endpoint + ": " + e.Error + "\n"
	}
	if code != 3 || !strings.Contains(msgs, "scus") || !strings.Contains(msgs, "UNSUPPORTED_SASL_MECHANISM") {
		t.Errorf("check with SCRAM: exit %d, want 3 naming scus and UNSUPPORTED_SASL_MECHANISM; errors:\n%s", code, msgs)
	}
}
