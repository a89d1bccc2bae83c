package commands

import (
	"strings"
	"testing"
)

// Every command that writes to a cluster takes the same lease and audit flags, so that a
// watch --repair with a custom lease topic and a failover exclude each other (issue 32).
func TestWritingCommandsTakeTheSameLeaseAndAuditFlags(t *testing.T) {
	rc := tree()
	// noWait: these never wait for a held lease, they leave the work to its holder
	// (documented in their help).
	writers := map[string]bool{"repair": false, "reload": false, "failover": false, "watch": true, "sync setup": true}
	for path, noWait := range writers {
		c, _, err := rc.Find(strings.Fields(path))
		if err != nil || c.CommandPath() != "kop-offsets "+path {
			t.Fatalf("%s: not in the command tree (%v)", path, err)
		}
		want := []string{"no-lease", "lease-topic", "audit-file", "audit-topic"}
		if !noWait {
			want = append(want, "lease-wait")
		}
		for _, name := range want {
			if c.Flags().Lookup(name) == nil {
				t.Errorf("%s has no --%s", path, name)
			}
		}
	}
}

func TestSyncSetupRefusesNoLeaseWithLeaseTopic(t *testing.T) {
	cfg := writeConfig(t, twoClusters)
	r := run(t, nil, "--config", cfg, "sync", "setup", "--dry-run", "--no-lease", "--lease-topic", "persistent://public/x/y")
	if r.code != 2 || !strings.Contains(r.errOut, "--no-lease cannot be combined") {
		t.Fatalf("exit %d, stderr %q: want 2 naming --no-lease", r.code, r.errOut)
	}
}
