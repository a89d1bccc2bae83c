package commands

import (
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/testsupport/shape"
)

// Every package of the command layer keeps the project's sizes: no function over 80 lines,
// no file over 500 (issue 48).
func TestShape(t *testing.T) { shape.CheckTree(t, ".", shape.Default) }
