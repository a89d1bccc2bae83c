package labtest

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/lab"
)

// PauseCluster stops every process of cluster c by its pid with SIGSTOP, as a cut link to a
// region looks from outside (connections open, nothing answers), and returns the function
// that resumes them (SIGCONT); the test's end resumes them too, before the cleanups
// registered earlier (Settle) run.
//
// On Pulsar 2.x the standalone keeps its metadata in an embedded ZooKeeper that is stopped
// with it: resumed after more than the session timeout (30 s), ZooKeeper expires the broker's
// and the bookie's sessions before they can ping, and the standalone is left without bundle
// owners or bookies for good. A real region's ZooKeeper keeps talking to its brokers through
// a cut link, so this is the lab's artefact: resume restarts such a standalone (its data kept)
// and says so.
func PauseCluster(t testing.TB, l *lab.Lab, c string) (resume func()) {
	t.Helper()
	refreshState(t, l) // an earlier test may have restarted a broker: its pid is new
	var procs []lab.ProcessState
	for _, cs := range l.State.Clusters {
		if cs.Name != c {
			continue
		}
		for _, ps := range cs.Processes {
			if !lab.IsLabJVM(ps.PID, c) {
				t.Fatalf("%s: pid %d (%s) is not the lab's JVM", c, ps.PID, ps.ID())
			}
			procs = append(procs, ps)
		}
	}
	if len(procs) == 0 {
		t.Fatalf("no process of cluster %s in the lab's state", c)
	}
	pids := make([]int, len(procs))
	logAt := make([]int64, len(procs))
	for i, ps := range procs {
		pids[i] = ps.PID
		if fi, err := os.Stat(ps.LogPath); err == nil {
			logAt[i] = fi.Size()
		}
	}
	signal := func(sig syscall.Signal) {
		for _, pid := range pids {
			if err := syscall.Kill(pid, sig); err != nil {
				t.Errorf("%s: %v pid %d: %v", c, sig, pid, err)
			}
		}
	}
	signal(syscall.SIGSTOP)
	t.Logf("%s: SIGSTOP sent to pids %v", c, pids)
	var once sync.Once
	resume = func() {
		once.Do(func() {
			signal(syscall.SIGCONT)
			t.Logf("%s: SIGCONT sent to pids %v", c, pids)
			if zkStandalone(l, procs) {
				restartIfSessionExpired(t, l, c, procs[0], logAt[0])
			}
		})
	}
	t.Cleanup(resume)
	return resume
}

// zkStandalone: a standalone whose metadata lives in an embedded ZooKeeper (its Pulsar line's
// StandaloneZooKeeper, the lab's own knowledge of the line).
func zkStandalone(l *lab.Lab, procs []lab.ProcessState) bool {
	line, err := lab.LineOf(l.State.PulsarVersion)
	return err == nil && line.StandaloneZooKeeper && len(procs) == 1 && procs[0].Role == lab.RoleStandalone
}

// sessionExpired is what Pulsar 2.x's ZooKeeper client logs when its session was expired.
var sessionExpired = []byte("SessionExpiredException")

// restartIfSessionExpired waits a few seconds for the resumed standalone's ZooKeeper client to
// reconnect and, when its log since the pause (from offset at) shows the session expired,
// restarts the standalone by its pid and waits until it is healthy again.
func restartIfSessionExpired(t testing.TB, l *lab.Lab, c string, ps lab.ProcessState, at int64) {
	t.Helper()
	time.Sleep(5 * time.Second)
	if !logHas(ps.LogPath, at, sessionExpired) {
		return
	}
	t.Logf("%s: Pulsar %s's embedded ZooKeeper expired the standalone's sessions during the pause (a lab artefact, see PauseCluster): restarting it", c, l.State.PulsarVersion)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), StartBudget()+2*time.Minute)
	defer cancel()
	if err := l.StopBroker(ctx, c, ps.Index); err != nil {
		t.Errorf("%s: stop the standalone after its sessions expired: %v", c, err)
		return
	}
	// The stopped JVM's ports can stay bound a few seconds after it exits.
	err := l.StartBroker(ctx, c, ps.Index)
	for i := 0; err != nil && strings.Contains(err.Error(), "still in use") && i < 10; i++ {
		time.Sleep(3 * time.Second)
		err = l.StartBroker(ctx, c, ps.Index)
	}
	if err != nil {
		t.Errorf("%s: start the standalone after its sessions expired: %v", c, err)
		return
	}
	refreshState(t, l) // later tests find the standalone by its new pid
	t.Logf("%s: standalone restarted and healthy in %s", c, time.Since(start).Round(100*time.Millisecond))
}

// logHas reports whether the file at path holds needle after offset at.
func logHas(path string, at int64, needle []byte) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(at, io.SeekStart); err != nil {
		return false
	}
	b, err := io.ReadAll(f)
	return err == nil && bytes.Contains(b, needle)
}

// refreshState reads the lab's state file again into l.State: a broker started again
// (StartBroker, a restart after a pause) runs under a new pid.
func refreshState(t testing.TB, l *lab.Lab) {
	t.Helper()
	st, err := lab.ReadState(l.Paths.StateFile())
	if err != nil || st == nil {
		t.Errorf("read the lab's state %s: %v", l.Paths.StateFile(), err)
		return
	}
	*l.State = *st
}
