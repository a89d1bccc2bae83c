package factory

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
)

func factoryFor(t *testing.T, doc string, tenants ...string) *cmdutil.Factory {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	ios, _, _, _ := iostreams.Test()
	f := NewWithEnv("test", ios, func(string) string { return "" })
	f.Flags.ConfigPath = path
	f.Flags.Tenants = tenants
	return f
}

const twoTenants = `clusters:
  - {name: scus, adminURL: "http://127.0.0.1:1", tenants: [acme, billing]}
  - {name: wus, adminURL: "http://127.0.0.1:2", tenants: [acme, billing]}
`

func TestClustersOfOneTenant(t *testing.T) {
	// A command that works on one tenant at a time is refused several, naming them.
	_, err := factoryFor(t, twoTenants).Clusters()
	if cmdutil.OutcomeOf(err) != outcome.Usage || !strings.Contains(err.Error(), "one tenant at a time and the selected clusters have 2 (acme, billing): select one with --tenant") {
		t.Fatalf("err %v", err)
	}
	cls, err := factoryFor(t, twoTenants, "bill*").Clusters()
	if err != nil || strings.Join(config.Names(cls), ",") != "scus,wus" || cls[0].Tenant != "billing" || cls[1].OffsetsTopic() != "persistent://billing/__kafka/__consumer_offsets" {
		t.Fatalf("billing: %v %+v", err, cls)
	}
	_, err = factoryFor(t, twoTenants, "ops").Scopes()
	if cmdutil.OutcomeOf(err) != outcome.Usage || !strings.Contains(err.Error(), "--tenant ops matches no tenant of the selected clusters (tenants: acme, billing)") {
		t.Fatalf("no match: %v", err)
	}
	// A config without tenants: is what it always was.
	cls, err = factoryFor(t, "clusters:\n  - {name: a, adminURL: \"http://127.0.0.1:1\", tenant: acme}\n  - {name: b, adminURL: \"http://127.0.0.1:2\"}\n").Clusters()
	if err != nil || len(cls) != 2 || cls[0].Tenant != "acme" || cls[1].Tenant != "public" {
		t.Fatalf("one-tenant config: %v %+v", err, cls)
	}
}

func TestAutoTenantsUnlistable(t *testing.T) {
	// tenants: auto against a closed port: warned about, and with nothing left exit 3.
	f := factoryFor(t, "clusters:\n  - {name: scus, adminURL: \"http://127.0.0.1:1\", tenants: auto}\n")
	f.Flags.Timeout = 2e9
	_, err := f.Scopes()
	if cmdutil.OutcomeOf(err) != outcome.Unreachable || !strings.Contains(err.Error(), "cluster scus: list its tenants (tenants: auto)") {
		t.Fatalf("err %v", err)
	}
}
