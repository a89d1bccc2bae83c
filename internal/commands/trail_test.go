package commands

import (
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest/labrun"
)

// TestMain keeps the audit records of the commands these tests run out of the user's trail.
func TestMain(m *testing.M) { labrun.MainWithoutLab(m) }
