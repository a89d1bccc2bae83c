package planrun

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
)

// ErrNeedConfirmation means a writing command has neither --yes nor a terminal to ask on.
var ErrNeedConfirmation = errors.New("this command writes to the clusters (its plan says what): pass --yes to confirm, or --dry-run to only see the plan (stdin/stdout are not a terminal, so it cannot ask)")

// CheckConfirmable fails with a usage error (exit 2) before anything is contacted when a
// write would need a confirmation nobody can give.
func CheckConfirmable(ios *iostreams.IOStreams, dryRun, yes bool) error {
	if dryRun || yes || ios.CanPrompt() {
		return nil
	}
	return cmdutil.UsageError(ErrNeedConfirmation)
}

// Confirm asks question on the terminal (stderr) and reads the answer from stdin: only
// "y" or "yes" confirms.
func Confirm(ios *iostreams.IOStreams, question string) (bool, error) {
	fmt.Fprintf(ios.ErrOut, "%s [y/N] ", question)
	var line strings.Builder
	buf := make([]byte, 1)
	for {
		n, err := ios.In.Read(buf)
		if n > 0 {
			if buf[0] == '\n' {
				break
			}
			line.WriteByte(buf[0])
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return false, err
		}
	}
	a := strings.ToLower(strings.TrimSpace(line.String()))
	return a == "y" || a == "yes", nil
}
