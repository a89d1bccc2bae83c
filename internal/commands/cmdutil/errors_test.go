package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/output"
)

func TestExitCode(t *testing.T) {
	cfgErr := &config.Error{Cluster: "a", Field: "adminURL", Msg: "bad"}
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, 0},
		{"usage", UsageErrorf("bad %s", "flag"), 2},
		{"flag error", FlagErrorf("unknown flag"), 2},
		{"wrapped flag error", fmt.Errorf("x: %w", FlagErrorf("y")), 2},
		{"format", &output.FormatError{Value: "xml", Allowed: output.Standard}, 2},
		{"config error", cfgErr, 2},
		{"config errors", config.Errors{cfgErr}, 2},
		{"unknown cluster", fmt.Errorf("select: %w", &config.Error{Msg: "unknown cluster", Err: config.ErrUnknownCluster}), 2},
		{"cancel", ErrCancel, 2},
		{"drift", DriftError(errors.New("stale")), 1},
		{"unreachable", UnreachableError(errors.New("refused")), 3},
		{"write failed", WriteFailedError(errors.New("still stale")), 4},
		{"silent 1", SilentError(1), 1},
		{"silent 3", SilentError(3), 3},
		{"deadline", fmt.Errorf("lookup: %w", context.DeadlineExceeded), 3},
		{"other", errors.New("boom"), 3},
		{"exit error wins over wrapped config error", UnreachableError(cfgErr), 3},
	}
	for _, tt := range tests {
		if got := ExitCode(tt.err); got != tt.want {
			t.Errorf("%s: ExitCode = %d, want %d", tt.name, got, tt.want)
		}
	}
	if SilentError(0) != nil {
		t.Error("SilentError(0) must be nil")
	}
	if !IsSilent(SilentError(1)) || IsSilent(DriftError(errors.New("x"))) {
		t.Error("IsSilent")
	}
}
