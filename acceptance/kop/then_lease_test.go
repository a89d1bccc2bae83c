//go:build kop

package kop

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/audit"
	"github.com/kop-offsets/kop-offsets/internal/lease"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
)

// TestWatchAndRepairOneWriterAtATime: the user's story with `watch --repair` and a cron
// `repair` running at once on wus, each a process of its own on its own config file. While
// another process holds wus's writer lease, watch refuses to reload (lease_held) and repair
// waits (--lease-wait); once it is free, one of them reloads the story's bundle, KoP on wus
// serves 10900, and the audit trail names exactly which process wrote, with no two writers'
// unloads overlapping.
func TestWatchAndRepairOneWriterAtATime(t *testing.T) {
	topic, group, part := labtest.StoryAt500(t, theLab, "lease")

	bin := labtest.Binary(t)
	dir := t.TempDir()
	trail := filepath.Join(dir, "audit.jsonl")

	// An operator's run holds wus's lease (this process, as a reload would).
	wus := theLab.Cluster("wus")
	held := &lease.Lease{Cluster: "wus", Topic: lease.DefaultTopic("public"), Broker: lease.Pulsar{Client: labtest.Pulsar(t, wus), Admin: labtest.PulsarxAdmin(t, wus)},
		Self: audit.Who{Host: "operator-laptop", User: "alice", PID: 99999, Command: "kop-offsets reload --cluster wus --group other --yes"}}
	if err := held.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer held.Release()

	listen := labtest.FreeListen(t)
	w := startProcess(t, bin, "watch", labtest.ConfigCopy(t, theLab, "watch"), "--timeout", "10s", "watch", "--repair", "--interval", "2s", "--cooldown", "5s",
		"--listen", listen, "--group", group, "--audit-file", trail)
	labtest.WaitReady(t, "http://"+listen+"/readyz", nil)

	labtest.Commit(t, theLab, "scus", group, topic, 10900)
	labtest.WaitReplicated(t, theLab, "scus", "wus", part)
	// watch sees the stale row and is refused the lease: nothing written, wus still stale.
	refused := regexp.MustCompile(`(?m)^kop_offsets_watch_reloads_refused_total\{cluster="wus",reason="lease_held"\} [1-9]`)
	for deadline := time.Now().Add(60 * time.Second); !refused.MatchString(labtest.Get(t, "http://"+listen+"/metrics")); {
		if time.Now().After(deadline) {
			t.Fatalf("watch never refused for lease_held:\n%s", labtest.Tail(w.stderr(), 20))
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !strings.Contains(w.stderr(), `held by \"kop-offsets reload --cluster wus --group other --yes\" (pid 99999, user alice, host operator-laptop)`) {
		t.Errorf("watch's refusal does not name the holder:\n%s", labtest.Tail(w.stderr(), 10))
	}
	labtest.WantServed(t, theLab, "wus", group, topic, "500", "wus serves %s while the lease is held elsewhere, want the stale 500")
	if n := len(labtest.ReadTrail(t, trail)); n != 0 {
		t.Fatalf("%d writes recorded while the lease was held elsewhere", n)
	}

	// The cron repair starts and waits for the lease; then the operator's run ends.
	r := startProcess(t, bin, "repair", labtest.ConfigCopy(t, theLab, "cron"), "--timeout", "10s", "repair", "--cluster", "wus", "--group", group,
		"--yes", "--lease-wait", "3m", "--lock-file", filepath.Join(dir, "repair.lock"), "--audit-file", trail)
	time.Sleep(5 * time.Second)
	released := time.Now()
	held.Release()

	code := r.wait(t, 4*time.Minute)
	t.Logf("repair exit %d:\n%s", code, labtest.Tail(r.stderr(), 15))
	if code != 0 {
		t.Errorf("repair exit %d, want 0", code)
	}
	for start := time.Now(); labtest.Served(t, theLab, "wus", group, topic) != "10900"; time.Sleep(500 * time.Millisecond) {
		if time.Since(start) > time.Minute {
			t.Fatalf("wus serves %s, want 10900", labtest.Served(t, theLab, "wus", group, topic))
		}
	}

	// The trail: who wrote, and never two at once.
	recs := labtest.ReadTrail(t, trail)
	writers := map[int]string{}
	type span struct {
		pid        int
		start, end time.Time
	}
	var unloads []span
	for _, rec := range recs {
		t.Logf("trail: %s %s %s %s%s %s groups=%v pid=%d %q", rec.Time.Format(time.RFC3339Nano), rec.Cluster, rec.Action, rec.Bundle, rec.Topic,
			rec.Result, rec.Groups, rec.Who.PID, rec.Who.Command)
		if rec.Who.PID != w.pid() && rec.Who.PID != r.pid() {
			t.Errorf("a write by pid %d, neither watch (%d) nor repair (%d)", rec.Who.PID, w.pid(), r.pid())
		}
		writers[rec.Who.PID] = rec.Who.Command
		if rec.Cluster != "wus" || rec.Time.Before(released) {
			t.Errorf("record %+v: not on wus, or before the lease was free", rec)
		}
		if rec.Action == audit.ActionUnload {
			unloads = append(unloads, span{rec.Who.PID, rec.Time.Add(-time.Duration(rec.DurationMs) * time.Millisecond), rec.Time.Time})
			if !strings.Contains(strings.Join(rec.Groups, ","), group) {
				t.Errorf("unload of %s does not name %s: %v", rec.Bundle, group, rec.Groups)
			}
		}
	}
	if len(unloads) == 0 {
		t.Fatal("no unload recorded")
	}
	for i := 1; i < len(unloads); i++ {
		if unloads[i].pid != unloads[i-1].pid && unloads[i].start.Before(unloads[i-1].end) {
			t.Errorf("unloads of pid %d and %d overlap", unloads[i-1].pid, unloads[i].pid)
		}
	}
	for pid, cmd := range writers {
		t.Logf("wrote: pid %d: %s", pid, cmd)
	}
	hist := exec.Command(bin, "--no-headers", "history", "--audit-file", trail, "--cluster", "wus", "--group", group)
	out, err := hist.CombinedOutput()
	t.Logf("$ kop-offsets history --cluster wus --group %s\n%s", group, out)
	if err != nil || len(strings.Split(strings.TrimSpace(string(out)), "\n")) != len(recs) {
		t.Errorf("history: %v, want %d lines", err, len(recs))
	}
}

// process is a kop-offsets process of the test.
type process struct {
	cmd  *exec.Cmd
	errb *syncBuffer
	done chan int
}

func (p *process) pid() int       { return p.cmd.Process.Pid }
func (p *process) stderr() string { return p.errb.String() }

func (p *process) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case code := <-p.done:
		return code
	case <-time.After(limit):
		t.Fatalf("%s still running after %s", p.cmd.Args, limit)
		return -1
	}
}

// startProcess starts the kop-offsets binary with --config cfg and args; it is stopped
// (SIGTERM, then killed) at the end of the test.
func startProcess(t *testing.T, bin, name, cfg string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, append([]string{"--config", cfg}, args...)...), errb: newSyncBuffer(), done: make(chan int, 1)}
	p.cmd.Stderr = p.errb
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: pid %d: %s", name, p.cmd.Process.Pid, strings.Join(p.cmd.Args, " "))
	go func() {
		err := p.cmd.Wait()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		p.done <- code
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
		}
	})
	return p
}

// syncBuffer is a strings.Builder the process writes and the test reads.
type syncBuffer struct {
	mu strings.Builder
	ch chan struct{}
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{ch: make(chan struct{}, 1)} }

func (s *syncBuffer) lock() { s.ch <- struct{}{} }

func (s *syncBuffer) Write(b []byte) (int, error) {
	s.lock()
	defer func() { <-s.ch }()
	return s.mu.Write(b)
}

func (s *syncBuffer) String() string {
	s.lock()
	defer func() { <-s.ch }()
	return s.mu.String()
}
