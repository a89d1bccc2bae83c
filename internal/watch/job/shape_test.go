package job

import (
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/testsupport/shape"
)

func TestShape(t *testing.T) { shape.Check(t, ".", shape.Default) }
