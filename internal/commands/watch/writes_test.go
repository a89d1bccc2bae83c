package watch

import (
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
)

func TestWriteFlags(t *testing.T) {
	f, _ := clitest.NewFactory("test", false)
	o := clitest.ParseFlags(t, f, NewCmdWatch, "", "--repair", "--lease-topic", "persistent://{tenant}/locks/w", "--audit-file", "/data/audit.jsonl")
	if o.Writes.LeaseTopic != "persistent://{tenant}/locks/w" || o.Writes.AuditFile != "/data/audit.jsonl" || o.Writes.NoLease {
		t.Errorf("%+v", o.Writes)
	}
	o = clitest.ParseFlags(t, f, NewCmdWatch, "", "--repair", "--no-lease")
	if !o.Writes.NoLease {
		t.Errorf("%+v", o.Writes)
	}
	// watch never waits for the lease: it tries again next cycle.
	clitest.ParseFlags(t, f, NewCmdWatch, "unknown flag: --lease-wait", "--repair", "--lease-wait", "1m")
	clitest.ParseFlags(t, f, NewCmdWatch, "--no-lease cannot be combined", "--repair", "--no-lease", "--lease-topic", "persistent://t/n/x")
}
