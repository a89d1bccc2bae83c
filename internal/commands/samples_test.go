package commands

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/shlex"

	"github.com/kop-offsets/kop-offsets/internal/commands/factory"
	"github.com/kop-offsets/kop-offsets/internal/commands/root"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

// The output samples of README and docs/ stay true (issue 48). A fenced block that shows
// "$ kop-offsets ..." is marked on the line before its fence:
//
//	<!-- sample: run -->                  the binary's output, offline or on clusters that do
//	                                      not answer: this test runs it and compares
//	<!-- sample: captured on ... -->      captured where it says (the lab with KoP): this test
//	                                      only refuses text the binary no longer prints
//	<!-- sample: command only -->         a command line without output
//
// go test ./internal/commands -run TestRunSamples -update-samples rewrites the run samples.

var updateSamples = flag.Bool("update-samples", false, "rewrite the run samples of README and docs/ from the binary")

var sampleMarker = regexp.MustCompile(`^<!-- sample: (.+) -->$`)

// staleText is what the binary printed once and prints no more: a sample showing it was
// captured before its message changed.
var staleText = []string{"unable to dial", "separate shard errors", "dial tcp", `Get "http`}

// sample is one fenced block of a page that shows kop-offsets at work.
type sample struct {
	page string
	kind string // the marker's text after "sample: "
	open int    // index of the opening fence line
	body []string
}

func (s sample) String() string { return fmt.Sprintf("%s:%d", s.page, s.open+1) }

// samplesOf returns the samples of page's lines; a block without a marker is an error.
func samplesOf(t *testing.T, page string, lines []string) []sample {
	t.Helper()
	var out []sample
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "```") {
			continue
		}
		end := i + 1
		for end < len(lines) && !strings.HasPrefix(lines[end], "```") {
			end++
		}
		body := lines[i+1 : min(end, len(lines))]
		shows := false
		for _, l := range body {
			shows = shows || strings.HasPrefix(l, "$ kop-offsets ")
		}
		if shows {
			s := sample{page: page, open: i, body: body}
			if m := sampleMarker.FindStringSubmatch(previous(lines, i)); m != nil {
				s.kind = m[1]
			} else {
				t.Errorf("%s: a sample without a <!-- sample: run|captured ...|command only --> line before it", s)
			}
			out = append(out, s)
		}
		i = end
	}
	return out
}

func previous(lines []string, i int) string {
	if i == 0 {
		return ""
	}
	return lines[i-1]
}

func pageLines(t *testing.T, page string) []string {
	t.Helper()
	return strings.Split(readDoc(t, page), "\n")
}

func TestSamplesAreMarkedAndCurrent(t *testing.T) {
	n := 0
	for _, page := range userDocs(t) {
		for _, s := range samplesOf(t, page, pageLines(t, page)) {
			n++
			for _, l := range s.body {
				for _, old := range staleText {
					if strings.Contains(l, old) {
						t.Errorf("%s shows %q, which kop-offsets no longer prints: regenerate the sample", s, old)
					}
				}
			}
		}
	}
	if n < 15 {
		t.Fatalf("found %d samples in README and docs: the parser lost them", n)
	}
}

// sampleEnv stands for the lab: two clusters whose every endpoint is a closed port, shown
// in the samples as the lab's addresses.
type sampleEnv struct {
	config string
	labOf  map[string]string // closed address -> the lab's address it stands for
}

func newSampleEnv(t *testing.T) sampleEnv {
	lab := []string{"127.0.0.1:18080", "127.0.0.1:16650", "127.0.0.1:19092",
		"127.0.0.1:28080", "127.0.0.1:26650", "127.0.0.1:29092"}
	cfg, closed := closedClusters(t)
	e := sampleEnv{config: cfg, labOf: map[string]string{}}
	for i, c := range closed {
		e.labOf[c] = lab[i]
	}
	return e
}

// closedClusters writes a config of two clusters, scus and wus, whose every endpoint is a
// 127.0.0.1 port nothing listens on, and returns it with the addresses in the order
// scus admin, pulsar, kafka, then wus's.
func closedClusters(t *testing.T) (string, []string) {
	t.Helper()
	ports := make([]string, 6)
	for i := range ports {
		ports[i] = fakes.ClosedAddr(t)
	}
	cfg := writeConfig(t, fmt.Sprintf(`clusters:
  - name: scus
    adminURL: http://%s
    serviceURL: pulsar://%s
    kafkaBootstrap: [%s]
  - name: wus
    adminURL: http://%s
    serviceURL: pulsar://%s
    kafkaBootstrap: [%s]
`, ports[0], ports[1], ports[2], ports[3], ports[4], ports[5]))
	return cfg, ports
}

// output is what a terminal shows for the sample's commands: each command line as written,
// then its stdout (a terminal: aligned tables), then its stderr.
func (e sampleEnv) output(t *testing.T, s sample) []string {
	var out []string
	for i := 0; i < len(s.body); i++ {
		if !strings.HasPrefix(s.body[i], "$ kop-offsets ") {
			continue
		}
		line := s.body[i]
		out = append(out, line)
		for strings.HasSuffix(line, `\`) && i+1 < len(s.body) {
			i++
			out = append(out, s.body[i])
			line = strings.TrimSuffix(line, `\`) + " " + strings.TrimSpace(s.body[i])
		}
		args, err := shlex.Split(strings.TrimPrefix(line, "$ kop-offsets "))
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		for j, a := range args {
			if a == "lab/run/config.yaml" {
				args[j] = e.config
			}
		}
		stdout, stderr := e.run(t, args)
		for _, text := range []string{stdout, stderr} {
			for addr, lab := range e.labOf {
				text = strings.ReplaceAll(text, addr, lab)
			}
			if text = strings.TrimRight(text, "\n"); text != "" {
				out = append(out, strings.Split(text, "\n")...)
			}
		}
	}
	return out
}

func (e sampleEnv) run(t *testing.T, args []string) (stdout, stderr string) {
	ios, _, out, errOut := iostreams.Test()
	ios.SetStdoutTTY(true)
	ios.SetColorEnabled(false)
	env := map[string]string{"XDG_CONFIG_HOME": t.TempDir(), "KOP_OFFSETS_CONFIG": e.config}
	f := factory.NewWithEnv("1.2.3", ios, func(k string) string { return env[k] })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	Run(ctx, f, root.NewCmdRoot(f), args)
	return out.String(), errOut.String()
}

var (
	durationText = regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|ms|s|m)\b`)
	timeText     = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
)

// normal is a sample's text with what differs from run to run replaced (durations, times)
// and each line's spacing made one space, so a table aligned around a wider latency is the
// same table.
func normal(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		l = timeText.ReplaceAllString(durationText.ReplaceAllString(l, "<d>"), "<t>")
		b.WriteString(strings.Join(strings.Fields(l), " ") + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

func TestRunSamples(t *testing.T) {
	e := newSampleEnv(t)
	ran := 0
	for _, page := range userDocs(t) {
		lines := pageLines(t, page)
		changed := false
		// Backwards, so that a rewritten block does not move the blocks still to come.
		ss := samplesOf(t, page, lines)
		for k := len(ss) - 1; k >= 0; k-- {
			s := ss[k]
			if s.kind != "run" && !strings.HasPrefix(s.kind, "run ") {
				continue
			}
			ran++
			got := e.output(t, s)
			if *updateSamples {
				lines = append(lines[:s.open+1], append(got, lines[s.open+1+len(s.body):]...)...)
				changed = true
				continue
			}
			if normal(got) != normal(s.body) {
				t.Errorf("%s differs from what kop-offsets prints now (rewrite with -update-samples):\n--- now\n%s\n--- page\n%s",
					s, strings.Join(got, "\n"), strings.Join(s.body, "\n"))
			}
		}
		if changed {
			if err := os.WriteFile(filepath.Join(repoRoot, page), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if ran < 3 {
		t.Fatalf("ran %d samples: the parser lost them", ran)
	}
}
