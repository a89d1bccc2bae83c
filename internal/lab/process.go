package lab

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// reaped tracks JVMs started by this process: their Wait runs in a goroutine so that an exited
// JVM does not linger as a zombie that kill(pid, 0) would still find.
var reaped sync.Map // pid -> chan struct{} closed on exit

func javaBinary() string {
	if h := os.Getenv("JAVA_HOME"); h != "" {
		if _, err := os.Stat(filepath.Join(h, "bin", "java")); err == nil {
			return filepath.Join(h, "bin", "java")
		}
	}
	return "java"
}

// startJVM starts standalone cluster c's JVM with stdout and stderr appended to its
// broker.log. It returns the pid.
func startJVM(p Paths, c Cluster, pulsarVersion string) (int, error) {
	for _, d := range []string{p.DataDir(c.Name), p.TmpDir(c.Name), p.NarExtractionDir(c.Name)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return 0, err
		}
	}
	return startJava(p.ClusterDir(c.Name), p.LogFile(c.Name), c.Name, JavaArgs(p, c, pulsarVersion))
}

// procState returns the state letter of /proc/<pid>/stat ("" when there is no such process).
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// pid (comm) S ...: comm may hold spaces, the state follows the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return ""
	}
	return string(b[i+2])
}

// IsLabJVM reports whether pid is a live (not zombie) JVM of the lab's cluster name: its
// command line must carry ProcessMarker(name). A recycled pid never matches.
func IsLabJVM(pid int, name string) bool {
	if pid <= 0 {
		return false
	}
	if s := procState(pid); s == "" || s == "Z" || s == "X" {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	for _, a := range bytes.Split(b, []byte{0}) {
		if string(a) == ProcessMarker(name) {
			return true
		}
	}
	return false
}

// stopJVM stops one lab JVM by pid: SIGTERM (the standalone's shutdown hook closes broker and
// bookie), wait up to grace, then SIGKILL that pid. Other processes are never signalled.
func stopJVM(ctx context.Context, pid int, name string, grace time.Duration) error {
	if !IsLabJVM(pid, name) {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("lab: SIGTERM %s (pid %d): %w", name, pid, err)
	}
	if waitGone(ctx, pid, name, grace) {
		return nil
	}
	return killJVM(ctx, pid, name)
}

// killJVM sends SIGKILL to a lab JVM (no shutdown hook runs) and waits until it is gone.
func killJVM(ctx context.Context, pid int, name string) error {
	if !IsLabJVM(pid, name) {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && IsLabJVM(pid, name) {
		return fmt.Errorf("lab: SIGKILL %s (pid %d): %w", name, pid, err)
	}
	if !waitGone(ctx, pid, name, 10*time.Second) {
		return fmt.Errorf("lab: %s (pid %d) still running after SIGKILL", name, pid)
	}
	return nil
}

func waitGone(ctx context.Context, pid int, name string, d time.Duration) bool {
	var done chan struct{}
	if v, ok := reaped.Load(pid); ok {
		done = v.(chan struct{})
	}
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if done != nil {
			select {
			case <-done:
				reaped.Delete(pid)
				return true
			default:
			}
		} else if !IsLabJVM(pid, name) {
			return true
		}
		select {
		case <-ctx.Done():
			return !IsLabJVM(pid, name)
		case <-time.After(200 * time.Millisecond):
		}
	}
	return !IsLabJVM(pid, name)
}

// RSSMB returns the resident set size of pid in MiB, from /proc/<pid>/status.
func RSSMB(pid int) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			f := strings.Fields(rest) // "123456 kB"
			if len(f) >= 1 {
				kb, err := strconv.ParseFloat(f[0], 64)
				if err != nil {
					return 0, err
				}
				return kb / 1024, nil
			}
		}
	}
	return 0, fmt.Errorf("lab: no VmRSS for pid %d", pid)
}

// LogTail returns the last n lines of a file (for errors).
func LogTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer func() { _ = f.Close() }()
	const maxRead = 256 << 10 // read at most the last 256 KiB
	fi, err := f.Stat()
	if err != nil {
		return err.Error()
	}
	off := fi.Size() - maxRead
	if off < 0 {
		off = 0
	}
	buf := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil {
		return err.Error()
	}
	return tail(string(buf), n)
}
