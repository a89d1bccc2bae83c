package iostreams

import (
	"strings"
	"testing"
	"time"
)

func TestTestStreams(t *testing.T) {
	ios, in, out, errOut := Test()
	if ios.IsStdoutTTY() || ios.IsStderrTTY() || ios.IsStdinTTY() || ios.ColorEnabled() || ios.CanPrompt() {
		t.Fatal("test streams must not be terminals")
	}
	in.WriteString("x")
	ios.SetStdoutTTY(true)
	ios.SetStdinTTY(true)
	t.Setenv("NO_COLOR", "")
	if !ios.IsStdoutTTY() || !ios.CanPrompt() {
		t.Fatal("forced TTY ignored")
	}
	if ios.ColorEnabled() {
		t.Error("NO_COLOR set: colour must be off")
	}
	ios.SetColorEnabled(true)
	if got := ios.ColorScheme().Red("x"); got != "\x1b[31mx\x1b[0m" {
		t.Errorf("red %q", got)
	}
	ios.SetColorEnabled(false)
	if got := ios.ColorScheme().Status("failed"); got != "failed" {
		t.Errorf("uncoloured %q", got)
	}
	_, _ = out, errOut
}

func TestProgressOnlyOnTTY(t *testing.T) {
	ios, _, _, errOut := Test()
	p := ios.StartProgress("reading")
	p.Set(1, 2)
	p.Stop()
	if errOut.Len() != 0 {
		t.Fatalf("progress drawn on a non-terminal stderr: %q", errOut)
	}

	ios.SetStderrTTY(true)
	p = ios.StartProgress("reading")
	p.Set(5, 10)
	time.Sleep(150 * time.Millisecond)
	p.Add(5)
	p.Stop()
	p.Stop() // idempotent
	s := errOut.String()
	if !strings.Contains(s, "reading [") || !strings.Contains(s, "/10") {
		t.Fatalf("progress not drawn: %q", s)
	}
	if !strings.HasSuffix(s, "\r") {
		t.Errorf("progress not erased: %q", s)
	}
}
