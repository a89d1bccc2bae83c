package repair

import (
	"errors"
	"fmt"
	"os"
)

// ErrLocked means another repair holds the lock file.
var ErrLocked = errors.New("another repair is running")

// writePID records the holder of the lock for an operator who finds the file.
func writePID(fh *os.File) {
	_ = fh.Truncate(0)
	_, _ = fmt.Fprintf(fh, "%d\n", os.Getpid())
}
