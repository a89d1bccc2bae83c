package commands

import (
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/lab"
)

// TestMain keeps the audit records of the commands these tests run out of the user's trail.
func TestMain(m *testing.M) { lab.MainWithoutLab(m) }
