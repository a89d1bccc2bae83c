package lab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Role is what one lab JVM is.
type Role string

// Roles of lab JVMs. A standalone cluster has one JVM; a multi-broker cluster a ZooKeeper, a
// bookie and its brokers.
const (
	RoleStandalone Role = "standalone"
	RoleZooKeeper  Role = "zookeeper"
	RoleBookie     Role = "bookie"
	RoleBroker     Role = "broker"
)

// ProcessState is one started JVM of a cluster, as state.json records it.
type ProcessState struct {
	Role         Role      `json:"role"`
	Index        int       `json:"index"` // the broker's index; 0 for the other roles
	PID          int       `json:"pid"`
	Ports        []int     `json:"ports"`
	StartedAt    time.Time `json:"startedAt"`
	ReadySeconds float64   `json:"readySeconds,omitempty"` // JVM start to healthy (brokers, standalones)
	ConfPath     string    `json:"confPath"`
	LogPath      string    `json:"logPath"`
	// Stopped is set by StopBroker: the broker was stopped on purpose and StartBroker brings
	// it back. A lab with a stopped broker is not reused by Up (it is restarted).
	Stopped bool `json:"stopped,omitempty"`
}

// ID names the process within its cluster: "standalone", "zookeeper", "bookie", "broker-1".
func (ps ProcessState) ID() string { return processID(ps.Role, ps.Index) }

func processID(r Role, i int) string {
	if r == RoleBroker {
		return fmt.Sprintf("broker-%d", i)
	}
	return string(r)
}

// servesBroker reports whether the process answers the broker's admin and binary protocols.
func (ps ProcessState) servesBroker() bool { return ps.Role == RoleStandalone || ps.Role == RoleBroker }

// processMarker names cluster and process on the JVM's command line, next to ProcessMarker:
// StopBroker signals only a pid that carries the marker of the broker it was asked to stop.
func processMarker(cluster, id string) string { return "-Dkop.lab.process=" + cluster + "/" + id }

// isLabProcess reports whether pid is the live lab JVM id of cluster.
func isLabProcess(pid int, cluster, id string) bool {
	return IsLabJVM(pid, cluster) && hasArg(pid, processMarker(cluster, id))
}

func hasArg(pid int, arg string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	for _, a := range strings.Split(string(b), "\x00") {
		if a == arg {
			return true
		}
	}
	return false
}

// startJava starts java with args in dir, in its own process group (so that it outlives the
// caller and ^C in a terminal does not reach it), stdout and stderr appended to logPath. what
// names the process in errors and in the log's header.
func startJava(dir, logPath, what string, args []string) (int, error) {
	for _, d := range []string{dir, filepath.Dir(logPath)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return 0, err
		}
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer func() { _ = logf.Close() }()
	fmt.Fprintf(logf, "\n=== kop-lab: starting %s at %s\n=== %s %s\n", what,
		time.Now().UTC().Format(time.RFC3339), javaBinary(), strings.Join(args, " "))
	cmd := exec.Command(javaBinary(), args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("lab: start %s: %w", what, err)
	}
	done := make(chan struct{})
	reaped.Store(cmd.Process.Pid, done)
	go func() { _ = cmd.Wait(); close(done) }()
	return cmd.Process.Pid, nil
}
