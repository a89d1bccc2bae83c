package commands

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/kop-offsets/kop-offsets/internal/commands/factory"
	"github.com/kop-offsets/kop-offsets/internal/commands/root"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/kop"
)

// TestEveryCommand runs every command of the tree (issue 32, item 6) three ways: with an
// unknown flag, against clusters whose every endpoint is a closed 127.0.0.1 port, and with a
// malformed input of its own. Each run must not panic nor hang, must end with the contract's
// code, and its message must name what broke: the flag, the cluster and its endpoint, the
// input. A command added to the tree without a row here fails the test.
func TestEveryCommand(t *testing.T) {
	cfg, ports := closedClusters(t)
	endpoints := map[string][]string{"scus": ports[0:3], "wus": ports[3:6]}
	malformed := writeConfig(t, "clusters: [\n")
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.json")
	notJSON := filepath.Join(dir, "not.json")
	if err := os.WriteFile(notJSON, []byte("not json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, _ := kop.Encode(kop.OffsetCommit{Group: "G", Topic: "t", Offset: 1, CommitTime: time.Unix(1, 0)})
	key := base64.StdEncoding.EncodeToString(k)
	lock := []string{"--lock-file", filepath.Join(dir, "repair.lock")}

	// reach is one more run against the unreachable clusters and its code.
	type reach struct {
		args []string
		code int
	}
	// bad is one malformed input and what its message must name.
	type bad struct {
		args []string
		want string
	}
	// What each command does against the unreachable clusters: reach are its arguments;
	// code is its exit code (the contract's); contacts says it contacts the clusters
	// (named in its message with an endpoint); names are the clusters it selects (default
	// both). Every command that contacts a cluster is also run with a malformed config.
	tests := map[string]struct {
		reach    []string
		code     int
		contacts bool
		names    []string
		stop     time.Duration // a long-running command is stopped (as by SIGINT) after this
		also     []reach       // more runs against the unreachable clusters
		bad      []bad
	}{
		"": {code: 0, bad: []bad{{[]string{"bogus"}, `unknown command "bogus"`}}},
		"check": {contacts: true, code: 3, bad: []bad{
			{[]string{"--group", "["}, "--group"},
			{[]string{"--coordinator-wait", "soon"}, "--coordinator-wait"},
		}},
		"completion":   {reach: []string{"bash"}, code: 0, bad: []bad{{[]string{"tcsh"}, "tcsh"}}},
		"config":       {code: 0, bad: []bad{{[]string{"bogus"}, `unknown command "bogus"`}}},
		"config check": {contacts: true, code: 3},
		"config view":  {code: 0},
		"decode": {reach: []string{"--key", key}, code: 0, bad: []bad{
			{[]string{"--input", missing}, missing},
			{[]string{"--input", notJSON}, "line 1"},
		}},
		"doctor": {contacts: true, code: 3, bad: []bad{
			{[]string{"--group", "a*"}, "--group"},
			{[]string{"--kafka-timeout", "soon"}, "--kafka-timeout"},
		}},
		"dump": {contacts: true, code: 3, bad: []bad{
			{[]string{"--group", "["}, "--group"},
			{[]string{"--from", "yesterday"}, "--from"},
		}},
		"failover": {reach: []string{"--from", "scus", "--to", "wus", "--group", "g1", "--yes"}, contacts: true, code: 3, bad: []bad{
			{[]string{"--to", "wus", "--group", "["}, "--group"},
			{[]string{"--to", "wus", "--lease-wait", "soon"}, "--lease-wait"},
		}},
		"groups": {contacts: true, code: 3, bad: []bad{{[]string{"--group", "["}, "--group"}}},
		"help":   {code: 0, bad: []bad{{[]string{"bogus"}, `unknown command "bogus"`}}},
		"history": {code: 0, bad: []bad{
			{[]string{"--file", missing}, missing},
			{[]string{"--file", notJSON}, notJSON},
			{[]string{"--group", "["}, "--group"},
		}},
		"locate": {reach: []string{"g1"}, contacts: true, code: 3, bad: []bad{{[]string{"--partitions", "x", "g1"}, "--partitions"}}},
		"reload": {reach: []string{"--cluster", "scus", "--group", "g1", "--yes"}, contacts: true, names: []string{"scus"}, code: 3, bad: []bad{
			{[]string{"--cluster", "scus", "--group", "["}, "--group"},
			{[]string{"--cluster", "scus", "--yes", "--from-check", missing}, missing},
			{[]string{"--cluster", "scus", "--yes", "--from-check", notJSON}, notJSON},
			{[]string{"--cluster", "scus", "--wait", "soon"}, "--wait"},
		}},
		"repair": {reach: append([]string{"--yes"}, lock...), contacts: true, code: 3, bad: []bad{
			{[]string{"--group", "["}, "--group"},
			{[]string{"--wait", "soon"}, "--wait"},
		}},
		"sync": {code: 0, bad: []bad{{[]string{"bogus"}, `unknown command "bogus"`}}},
		"sync setup": {reach: []string{"--yes"}, contacts: true, code: 3, also: []reach{{[]string{"--dry-run"}, 3}}, bad: []bad{
			{[]string{"--group", "["}, "--group"},
			{[]string{"--verify", "soon"}, "--verify"},
		}},
		// watch runs until stopped: with every cluster down it still serves (they are
		// reported down and retried), and a stop is 0.
		// --sync reads where each offsets topic replicates before it starts: unknown is 3.
		"watch": {reach: []string{"--listen", "127.0.0.1:0"}, contacts: true, code: 0, stop: 300 * time.Millisecond,
			also: []reach{{[]string{"--sync", "--listen", "127.0.0.1:0"}, 3}}, bad: []bad{
				{[]string{"--group", "["}, "--group"},
				{[]string{"--interval", "soon"}, "--interval"},
				{[]string{"--listen", "127.0.0.1:99999"}, "127.0.0.1:99999"},
			}},
		"version": {code: 0, bad: []bad{{[]string{"-o", "xml"}, "xml"}}},
	}

	paths := commandPaths()
	for _, p := range paths {
		if _, ok := tests[p]; !ok {
			t.Errorf("command %q has no row in TestEveryCommand", p)
		}
	}
	for p := range tests {
		if !slices.Contains(paths, p) {
			t.Errorf("row %q names no command", p)
		}
	}

	global := []string{"--config", cfg, "--timeout", "500ms"}
	env := map[string]string{"XDG_STATE_HOME": t.TempDir()}
	for _, p := range paths {
		tt := tests[p]
		name := p
		if name == "" {
			name = "root"
		}
		path := strings.Fields(p)
		t.Run(name, func(t *testing.T) {
			// (a) An unknown flag: 2, naming it.
			r := runBounded(t, env, 0, append(path, "--no-such-flag")...)
			if r.code != 2 || !strings.Contains(r.errOut, "--no-such-flag") {
				t.Errorf("unknown flag: exit %d, want 2 naming it\nstderr: %s", r.code, r.errOut)
			}

			// (b) The clusters unreachable.
			for i, rc := range append([]reach{{tt.reach, tt.code}}, tt.also...) {
				stop := tt.stop
				if i > 0 {
					stop = 0 // the other runs end by themselves
				}
				args := append(append(slices.Clone(global), path...), rc.args...)
				r = runBounded(t, env, stop, args...)
				for _, p := range styleProblems(r.out+r.errOut, []string{"scus", "wus"}) {
					t.Errorf("unreachable %v: %s", rc.args, p)
				}
				if stop == 0 {
					checkJSONDoc(t, env, p, args, rc.code)
				}
				if r.code != rc.code {
					t.Errorf("unreachable %v: exit %d, want %d\nstdout: %s\nstderr: %s", rc.args, r.code, rc.code, r.out, r.errOut)
				}
				if !tt.contacts {
					continue
				}
				names := tt.names
				if names == nil {
					names = []string{"scus", "wus"}
				}
				all := r.out + r.errOut
				for _, n := range names {
					if !strings.Contains(all, n) || !slices.ContainsFunc(endpoints[n], func(e string) bool { return strings.Contains(all, e) }) {
						t.Errorf("unreachable %v: the message does not name cluster %s and one of its endpoints %v\nstdout: %s\nstderr: %s", rc.args, n, endpoints[n], r.out, r.errOut)
					}
				}
			}

			// (c) Malformed input: 2, naming what broke.
			bads := tt.bad
			if tt.contacts || p == "config view" {
				bads = append(bads, bad{[]string{"--config", malformed}, malformed})
			}
			if len(bads) == 0 {
				t.Fatal("no malformed input for this command")
			}
			for _, b := range bads {
				args := append(slices.Clone(global), path...)
				if b.args[0] == "--config" {
					args = append(append(slices.Clone(b.args), "--timeout", "500ms"), append(path, tt.reach...)...)
				} else {
					args = append(args, b.args...)
				}
				r := runBounded(t, env, 0, args...)
				for _, p := range styleProblems(r.out+r.errOut, []string{"scus", "wus"}) {
					t.Errorf("%v: %s", b.args, p)
				}
				checkJSONDoc(t, env, p, args, 2)
				if r.code != 2 || !strings.Contains(r.errOut, b.want) {
					t.Errorf("%v: exit %d, want 2 naming %q\nstdout: %s\nstderr: %s", b.args, r.code, b.want, r.out, r.errOut)
				}
			}
		})
	}
}

// commandPaths is every command of the tree but the hidden ones, by path after the root's
// name ("" for the root).
func commandPaths() []string {
	ios, _, _, _ := iostreams.Test()
	f := factory.NewWithEnv("x", ios, func(string) string { return "" })
	var out []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		out = append(out, strings.TrimSpace(strings.TrimPrefix(c.CommandPath(), c.Root().Name())))
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root.NewCmdRoot(f))
	return out
}

// runBounded is run with a bound: a run that panics or takes more than a few seconds
// fails the test, naming the command. With stop > 0 the run's context is cancelled after
// stop, as SIGINT does.
func runBounded(t *testing.T, env map[string]string, stop time.Duration, args ...string) result {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	full := map[string]string{"XDG_CONFIG_HOME": t.TempDir()}
	for k, v := range env {
		full[k] = v
	}
	f := factory.NewWithEnv("1.2.3", ios, func(k string) string { return full[k] })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if stop > 0 {
		time.AfterFunc(stop, cancel)
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{code: -1, errOut: fmt.Sprintf("panic: %v", p)}
			}
		}()
		code := Run(ctx, f, root.NewCmdRoot(f), args)
		done <- result{code, out.String(), errOut.String()}
	}()
	select {
	case r := <-done:
		if r.code == -1 {
			t.Errorf("kop-offsets %s: %s", strings.Join(args, " "), r.errOut)
		}
		return r
	case <-time.After(stop + 5*time.Second):
		t.Errorf("kop-offsets %s: no end within %s", strings.Join(args, " "), stop+5*time.Second)
		return result{code: -1}
	}
}
