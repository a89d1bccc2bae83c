package lab

import (
	"context"
	"io"
)

// A lab shared by several processes (the test processes of one `go test` run) is started,
// adopted and stopped under lab/run/lab.lock, and used under a shared users.lock. The test
// harness that does so (internal/testsupport/labtest/labrun) is built on these pieces, so
// that the lab's own binaries carry no test lifecycle.

// FileLock is an flock(2) held on a file of lab/run.
type FileLock struct{ l *fileLock }

// LockFile takes an flock of the given kind (syscall.LOCK_EX or LOCK_SH) on path, waiting until
// ctx ends.
func LockFile(ctx context.Context, path string, how int) (*FileLock, error) {
	l, err := lock(ctx, path, how)
	if err != nil {
		return nil, err
	}
	return &FileLock{l}, nil
}

// TryLockFile takes the lock only if it is free right now.
func TryLockFile(path string, how int) (*FileLock, bool, error) {
	l, ok, err := tryLock(path, how)
	if err != nil || !ok {
		return nil, ok, err
	}
	return &FileLock{l}, true, nil
}

// Unlock releases the lock; a nil lock is a no-op.
func (f *FileLock) Unlock() {
	if f != nil {
		f.l.unlock()
	}
}

// Resolve fills the zero fields of o from the environment and defaults, as Up does.
func (o Options) Resolve() (Options, error) { return o.resolve() }

// UpLocked is Up for a caller that holds lab/run/lab.lock exclusively, with o resolved.
func UpLocked(ctx context.Context, o Options, p Paths) (*Lab, error) { return up(ctx, o, p) }

// DownLocked is Down for a caller that holds lab/run/lab.lock exclusively.
func DownLocked(ctx context.Context, p Paths, log io.Writer) error { return down(ctx, p, log) }
