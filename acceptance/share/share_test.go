//go:build e2e

package share

import (
	"context"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/lab"
)

func TestMain(m *testing.M) { lab.Main(m) }

func TestSecondPackageSharesLab(t *testing.T) {
	ctx := context.Background()
	l, err := lab.Ensure(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("started by this package: %v; owner (go test) pid %d; kept %v", l.Started, l.State.Owner, l.State.Keep)
	if again, err := lab.Ensure(ctx); err != nil || again != l {
		t.Fatalf("second Ensure in one process: %v %v", again, err)
	}
	for _, c := range l.Clusters {
		if err := lab.CheckHealth(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
}
