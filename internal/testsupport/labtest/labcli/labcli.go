// Package labcli runs kop-offsets in-process on the lab for the tagged suites (the KoP suite,
// acceptance/kop; the several-brokers suite, acceptance/topology): check, repair and
// watch --repair with their JSON read back. It is apart from labtest because it imports the
// whole command tree, and the doctor package's own tests import labtest (an import cycle).
// Import it only from tests.
package labcli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/commands"
	"github.com/kop-offsets/kop-offsets/internal/commands/root"
	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// RunCLI runs kop-offsets in-process against l's config.yaml and returns its exit code,
// stdout and stderr. A ctx without a deadline gets 5 minutes.
func RunCLI(ctx context.Context, l *lab.Lab, args ...string) (int, string, string) {
	f, streams := labtest.Factory(l)
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
	}
	code := commands.Run(ctx, f, root.NewCmdRoot(f), args)
	return code, streams.Out.String(), streams.ErrOut.String()
}

// CLI runs kop-offsets on Lab; its check, repair and watch get Timeout as --timeout (a
// several-brokers lab answers slower than two standalones).
type CLI struct {
	Lab     *lab.Lab
	Timeout string
}

// Run runs kop-offsets with args and logs the command, its exit code and its output.
func (c CLI) Run(t testing.TB, args ...string) (int, string) {
	t.Helper()
	start := time.Now()
	code, out, errOut := RunCLI(context.Background(), c.Lab, args...)
	t.Logf("$ kop-offsets %s -> exit %d in %s\n%s%s", strings.Join(args, " "), code, time.Since(start).Round(time.Millisecond), out, errOut)
	return code, out
}

// Check runs `kop-offsets check -o json` and returns the report and the exit code; the
// report's exitCode must be the process's.
func (c CLI) Check(t testing.TB, args ...string) (survey.Report, int) {
	t.Helper()
	code, out := c.Run(t, append([]string{"--timeout", c.Timeout, "check", "-o", "json"}, args...)...)
	var rep survey.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("check: exit %d, not a report: %v", code, err)
	}
	if rep.ExitCode.ExitCode() != code {
		t.Errorf("check: exitCode %d in JSON, process %d", rep.ExitCode, code)
	}
	return rep, code
}

// RepairDoc is the part of `repair -o json` the suites read.
type RepairDoc struct {
	Stale    []RepairRow
	Left     []RepairRow
	Clusters []struct {
		Cluster   string
		Groups    []string
		Refusal   string
		Execution *struct {
			Unloaded []string
			ExitCode int
		}
		ExitCode int
	}
	After *struct {
		Stale    []RepairRow
		Unserved []struct{ Cluster string }
	}
}

// RepairRow is a row of RepairDoc.
type RepairRow struct {
	Cluster, Group, Topic, Status, Reason string
	Partition                             int32
}

// Repair runs `kop-offsets repair -o json` with a lock file of the test's own.
func (c CLI) Repair(t testing.TB, args ...string) (int, RepairDoc) {
	t.Helper()
	lock := filepath.Join(t.TempDir(), "repair.lock")
	code, out := c.Run(t, append([]string{"--timeout", c.Timeout, "repair", "--lock-file", lock, "-o", "json"}, args...)...)
	var d RepairDoc
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("repair: exit %d, not a repair document: %v", code, err)
	}
	return code, d
}

// Row returns the row of group in rep.
func Row(t testing.TB, rep survey.Report, group string) verdict.Row {
	t.Helper()
	for _, r := range rep.Rows {
		if r.Group == group {
			return r
		}
	}
	t.Fatalf("check has no row for %s: %+v", group, rep.Rows)
	return verdict.Row{}
}

// StartWatch runs `watch --repair` (2 s cycles) over groups in the background, listening on
// listen, and waits (3 minutes at most) until it is ready. stop cancels it and returns its
// exit code, stopped false (with an error reported) when it did not end within 30 s; the
// last logLines lines of its stderr are logged.
func (c CLI) StartWatch(t testing.TB, listen string, logLines int, groups ...string) (stop func() (code int, stopped bool)) {
	t.Helper()
	args := []string{"--repair", "--interval", "2s", "--cooldown", "5s", "--max-bundles", "4"}
	for _, g := range groups {
		args = append(args, "--group", g)
	}
	return c.StartWatchArgs(t, listen, logLines, args...)
}

// StartWatchArgs is StartWatch with watch's flags given (--timeout and --listen added).
func (c CLI) StartWatchArgs(t testing.TB, listen string, logLines int, flags ...string) (stop func() (code int, stopped bool)) {
	t.Helper()
	args := append([]string{"--timeout", c.Timeout, "watch", "--listen", listen}, flags...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		code, _, errOut := RunCLI(ctx, c.Lab, args...)
		t.Logf("watch stderr (last lines):\n%s", labtest.Tail(errOut, logLines))
		done <- code
	}()
	var once sync.Once
	var code int
	var stopped bool
	stop = func() (int, bool) {
		once.Do(func() {
			cancel()
			select {
			case code = <-done:
				stopped = true
			case <-time.After(30 * time.Second):
				t.Error("watch did not stop within 30 s")
			}
		})
		return code, stopped
	}
	t.Cleanup(func() { stop() }) // also when the wait below fails the test
	labtest.WaitReady(t, "http://"+listen+"/readyz", func() error {
		select {
		case code := <-done:
			done <- code
			return fmt.Errorf("watch ended (exit %d) before it was ready", code)
		default:
			return nil
		}
	})
	return stop
}
