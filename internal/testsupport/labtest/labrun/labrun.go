// Package labrun starts the lab once per `go test` run and stops it after the run: Ensure and
// Release for the test processes, and the reaper they spawn. It imports only the lab, so that
// every test package (the lab's own, pulsarx's, the commands') can import it; the reaper's
// init() lives here, in test binaries only, never in cmd/kop-lab or tools/benchlab.
package labrun

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/lab"
)

// One start per `go test` run.
//
// `go test ./...` runs each package's test binary as a child of the go command, one after the
// other with -p 1 or several at once. Ensure starts the lab once (lab/run/lab.lock serialises
// the callers) and every test process holds a shared flock on lab/run/users.lock while it uses
// the lab. A lab that tests started (not kept) is stopped after the run:
//
//   - when the test binary's parent is the go command, the state records it as the lab's owner
//     and a reaper is spawned: the same test binary, re-executed with KOP_LAB_REAPER set, which
//     waits for the go command to exit and for users.lock to be free, then stops the JVMs by
//     pid. A later `go test` run that reuses the lab adopts it (becomes the owner, with its own
//     reaper); the old reaper then leaves it alone.
//   - otherwise (a test binary run by hand), the last test process out stops it in Release.
//
// A kept lab (kop-lab up, KOP_LAB_KEEP=1) is never stopped by tests.

const reaperEnv = "KOP_LAB_REAPER"

func init() {
	if v := os.Getenv(reaperEnv); v != "" {
		os.Exit(reap(v))
	}
}

var ensured struct {
	sync.Mutex
	lab   *lab.Lab
	users *lab.FileLock // shared lock on users.lock held while this process uses the lab
}

// KeepFromEnv reports KOP_LAB_KEEP=1.
func KeepFromEnv() bool { return os.Getenv("KOP_LAB_KEEP") == "1" }

// MustEnsure is Ensure within timeout for a test (a *testing.T): when the lab cannot be had,
// the test stops with "lab: " and the error.
func MustEnsure(t interface {
	Helper()
	Fatalf(format string, args ...any)
}, timeout time.Duration) *lab.Lab {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	l, err := Ensure(ctx)
	if err != nil {
		t.Fatalf("lab: %v", err)
	}
	return l
}

// Ensure returns the running lab, starting it if needed, for tests. Several test processes may
// call it at once; the lab starts once per `go test` run. Options come from the environment
// (KOP, KOP_VERSION, KOP_LAB_KEEP, KOP_LAB_START_TIMEOUT). Call Release (or use Main) at the end.
func Ensure(ctx context.Context) (*lab.Lab, error) {
	ensured.Lock()
	defer ensured.Unlock()
	if ensured.lab != nil {
		return ensured.lab, nil
	}
	o, err := lab.Options{Keep: KeepFromEnv(), FreshOnStart: true}.Resolve()
	if err != nil {
		return nil, err
	}
	p := lab.Paths{Root: o.Root}
	lk, err := lab.LockFile(ctx, p.LabLock(), syscall.LOCK_EX)
	if err != nil {
		return nil, err
	}
	defer lk.Unlock()
	l, err := lab.UpLocked(ctx, o, p)
	if err != nil {
		return nil, err
	}
	if !l.State.Keep {
		if owner, start, ok := goTestParent(); ok && (l.State.Owner != owner || l.State.OwnerStart != start) {
			l.State.Owner, l.State.OwnerStart = owner, start
			if err := lab.WriteState(p.StateFile(), l.State); err != nil {
				return nil, err
			}
			if err := spawnReaper(p, owner, start); err != nil {
				fmt.Fprintf(o.Log, "lab: no reaper (%v); the last test process out stops the lab\n", err)
				l.State.Owner, l.State.OwnerStart = 0, ""
				_ = lab.WriteState(p.StateFile(), l.State)
			}
		}
	}
	users, err := lab.LockFile(ctx, p.UsersLock(), syscall.LOCK_SH)
	if err != nil {
		return nil, err
	}
	ensured.lab, ensured.users = l, users
	return l, nil
}

// Release ends this process's use of the lab obtained by Ensure. Without a reaper in charge, the
// last process out stops a lab that tests started.
func Release(ctx context.Context) error {
	ensured.Lock()
	defer ensured.Unlock()
	if ensured.lab == nil {
		return nil
	}
	p := ensured.lab.Paths
	lk, err := lab.LockFile(ctx, p.LabLock(), syscall.LOCK_EX)
	if err != nil {
		return err
	}
	defer lk.Unlock()
	ensured.users.Unlock()
	ensured.lab, ensured.users = nil, nil
	st, err := lab.ReadState(p.StateFile())
	if err != nil || st == nil || st.Keep || KeepFromEnv() {
		return err
	}
	if st.Owner != 0 && processStart(st.Owner) == st.OwnerStart {
		return nil // the owner's reaper stops it after the go test run
	}
	last, ok, err := lab.TryLockFile(p.UsersLock(), syscall.LOCK_EX)
	if err != nil || !ok {
		return err // another process still uses the lab
	}
	defer last.Unlock()
	return lab.DownLocked(ctx, p, os.Stderr)
}

// Main runs the tests of a package that uses Ensure, with the audit trail in a temporary
// file (IsolateAuditTrail), then releases the lab:
//
//	func TestMain(m *testing.M) { labrun.Main(m) }
func Main(m interface{ Run() int }) {
	restore := IsolateAuditTrail()
	code := m.Run()
	restore()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	if err := Release(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "lab: release:", err)
		if code == 0 {
			code = 1
		}
	}
	cancel()
	os.Exit(code)
}

// goTestParent returns the parent process when it is the go command (`go test`).
func goTestParent() (int, string, bool) {
	ppid := os.Getppid()
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", ppid))
	if err != nil || strings.TrimSpace(string(comm)) != "go" {
		return 0, "", false
	}
	start := processStart(ppid)
	return ppid, start, start != ""
}

// processStart returns field 22 (starttime) of /proc/<pid>/stat, "" when pid is not running.
func processStart(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return ""
	}
	return f[19]
}

// spawnReaper re-executes this test binary as a detached reaper for the run of owner.
func spawnReaper(p lab.Paths, owner int, start string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	logf, err := os.OpenFile(p.RunDir()+"/reaper.log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = logf.Close() }()
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Dir = p.Root
	cmd.Env = append(os.Environ(), reaperEnv+"="+strconv.Itoa(owner)+":"+start, "KOP_LAB_ROOT="+p.Root)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}

// reap is the reaper's main: wait for the owner to exit and for no test process to use the
// lab, then stop it if it is still this owner's and not kept.
func reap(arg string) int {
	pidS, start, _ := strings.Cut(arg, ":")
	owner, err := strconv.Atoi(pidS)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lab reaper: bad", reaperEnv, arg)
		return 2
	}
	root, err := lab.FindRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "lab reaper:", err)
		return 2
	}
	p := lab.Paths{Root: root}
	logf := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "%s lab reaper[%d] owner %d: %s\n", time.Now().UTC().Format(time.RFC3339), os.Getpid(), owner, fmt.Sprintf(format, a...))
	}
	logf("waiting for the go test run to end")
	for processStart(owner) == start {
		time.Sleep(time.Second)
	}
	ctx := context.Background()
	for {
		lk, err := lab.LockFile(ctx, p.LabLock(), syscall.LOCK_EX)
		if err != nil {
			logf("lock: %v", err)
			return 1
		}
		st, err := lab.ReadState(p.StateFile())
		if err != nil || st == nil || st.Keep || st.Owner != owner || st.OwnerStart != start {
			lk.Unlock()
			logf("nothing to stop (state %v, err %v)", st != nil, err)
			return 0
		}
		users, ok, err := lab.TryLockFile(p.UsersLock(), syscall.LOCK_EX)
		if err == nil && ok {
			err = lab.DownLocked(ctx, p, os.Stderr)
			users.Unlock()
			lk.Unlock()
			if err != nil {
				logf("stop: %v", err)
				return 1
			}
			logf("stopped the lab")
			return 0
		}
		lk.Unlock()
		time.Sleep(2 * time.Second)
	}
}
