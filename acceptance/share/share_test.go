//go:build e2e

package share

import (
	"context"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest/labrun"
)

func TestMain(m *testing.M) { labrun.Main(m) }

func TestSecondPackageSharesLab(t *testing.T) {
	ctx := context.Background()
	l, err := labrun.Ensure(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("started by this package: %v; owner (go test) pid %d; kept %v", l.Started, l.State.Owner, l.State.Keep)
	if again, err := labrun.Ensure(ctx); err != nil || again != l {
		t.Fatalf("second Ensure in one process: %v %v", again, err)
	}
	for _, c := range l.Clusters {
		if err := lab.CheckHealth(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
}
