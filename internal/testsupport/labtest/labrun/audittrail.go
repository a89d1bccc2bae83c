package labrun

import (
	"fmt"
	"os"
	"path/filepath"
)

// auditFileEnv is auditFileEnv, spelled out: the lab must not import the product's
// packages (pulsarx's tests import the lab). TestIsolateAuditTrail checks they agree.
const auditFileEnv = "KOP_OFFSETS_AUDIT_FILE"

// IsolateAuditTrail points the default audit trail ($KOP_OFFSETS_AUDIT_FILE) of this process
// and of the commands it starts at a file in a fresh temporary directory, so that tests that
// run writing commands never append to the operator's own trail. The returned func restores
// the variable and removes the directory. Product defaults are unchanged: only the
// environment of the test process is.
func IsolateAuditTrail() (restore func()) {
	dir, err := os.MkdirTemp("", "kop-offsets-audit-")
	if err != nil {
		// Without a temp dir there is nowhere safe to write: no trail rather than the user's.
		dir = ""
	}
	old, had := os.LookupEnv(auditFileEnv)
	p := os.DevNull
	if dir != "" {
		p = filepath.Join(dir, "audit.jsonl")
	}
	if err := os.Setenv(auditFileEnv, p); err != nil {
		fmt.Fprintln(os.Stderr, "lab: audit trail:", err)
	}
	return func() {
		if had {
			_ = os.Setenv(auditFileEnv, old)
		} else {
			_ = os.Unsetenv(auditFileEnv)
		}
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	}
}

// MainWithoutLab runs the tests of a package that runs writing commands without the lab,
// with the audit trail in a temporary file (IsolateAuditTrail):
//
//	func TestMain(m *testing.M) { labrun.MainWithoutLab(m) }
func MainWithoutLab(m interface{ Run() int }) {
	restore := IsolateAuditTrail()
	code := m.Run()
	restore()
	os.Exit(code)
}
