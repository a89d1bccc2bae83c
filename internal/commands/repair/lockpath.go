package repair

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The lock file lives in a directory of the user's own, never in the shared /tmp: there
// another user could create it first (and hold every repair off) or make it a symlink to a
// file of the user's that the lock would truncate. Runs of two users on one host are not
// kept apart by it; the cluster's writer lease keeps every writer apart, across hosts and
// users. The file stays for what the lease does not do: turn an overlapping cron run away
// before it reads anything, and keep two runs apart under --no-lease.

// DefaultLockFileHelp is the default of --lock-file as --help shows it.
const DefaultLockFileHelp = "$XDG_RUNTIME_DIR/kop-offsets-repair.lock, else kop-offsets/repair.lock in the user's cache directory"

// DefaultLockFile is $XDG_RUNTIME_DIR/kop-offsets-repair.lock (a directory only the user
// can enter), else kop-offsets/repair.lock in os.UserCacheDir; "" when there is neither.
func DefaultLockFile() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "kop-offsets-repair.lock")
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "kop-offsets", "repair.lock")
	}
	return ""
}

// errNoLockDir is the usage error of a run with no --lock-file and no directory for one.
var errNoLockDir = errors.New("no directory of the user's for the repair lock ($XDG_RUNTIME_DIR and $HOME unset): give --lock-file PATH, or --lock-file '' to rely on the clusters' writer lease alone")

// takeLock takes the lock at path, creating its directory (0700: the user's alone) when
// missing. An empty path is no lock: the writer lease alone keeps writers apart.
func takeLock(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("lock file %s: %w", path, err)
	}
	return lock(path)
}
