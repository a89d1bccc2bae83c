//go:build windows

package repair

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// lock takes an exclusive LockFileEx lock on path without waiting; Windows releases it when
// the process dies.
func lock(path string) (func(), error) {
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock file %s: %w", path, err)
	}
	h := windows.Handle(fh.Fd())
	ol := new(windows.Overlapped)
	if err := windows.LockFileEx(h, windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol); err != nil {
		_ = fh.Close()
		if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
			return nil, fmt.Errorf("%w: %s is locked; nothing was done", ErrLocked, path)
		}
		return nil, fmt.Errorf("lock file %s: %w", path, err)
	}
	writePID(fh)
	return func() {
		_ = windows.UnlockFileEx(h, 0, 1, 0, ol)
		_ = fh.Close()
	}, nil
}
