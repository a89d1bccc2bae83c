package commands

import (
	"os"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/lab"
)

// TestMain keeps the audit records of the commands these tests run out of the user's trail.
func TestMain(m *testing.M) {
	restore := lab.IsolateAuditTrail()
	code := m.Run()
	restore()
	os.Exit(code)
}
