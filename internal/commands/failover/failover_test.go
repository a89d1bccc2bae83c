package failover

import (
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/commands/shared"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
)

func TestNewCmdFailoverFlags(t *testing.T) {
	tests := []clitest.FlagCase[Options]{
		{Args: []string{"--to", "wus", "--yes"}, Want: Options{To: "wus", Yes: true}},
		// The writer lease and the audit trail, as for reload and repair.
		{Args: []string{"--to", "wus", "--lease-wait", "30s", "--lease-topic", "persistent://{tenant}/locks/w", "--audit-file", "/tmp/a.jsonl"},
			Want: Options{To: "wus", Writes: shared.Writes{LeaseWait: 30 * time.Second, LeaseTopic: "persistent://{tenant}/locks/w", AuditFile: "/tmp/a.jsonl"}}},
		{Args: []string{"--to", "wus", "--no-lease", "--lease-wait", "1s"}, Err: "--no-lease cannot be combined"},
		{Args: []string{"--to", "wus", "--lease-wait", "-1s"}, Err: "must not be negative"},
		{Args: []string{"--from", "wus", "--to", "wus"}, Err: "name the same cluster"},
		{Args: []string{"--from", "scus"}, Err: "--to names the cluster"},
	}
	clitest.CheckFlags(t, NewCmdFailover, tests, func(got, want *Options) bool {
		if got.To != want.To || got.Yes != want.Yes {
			return false
		}
		// The default audit file depends on the environment: compared when a case names one.
		return want.Writes.AuditFile == "" || got.Writes == want.Writes
	})
}
