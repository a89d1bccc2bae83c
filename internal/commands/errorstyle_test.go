package commands

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// maxLine is the longest line an error or result may print (issue 48, item 2): longer than
// this and a terminal wraps it into something nobody reads.
const maxLine = 200

// rawText is library text that must not reach a user without --verbose: Go's dial errors and
// net/http's request errors say nothing the cause and fix do not say better.
var rawText = regexp.MustCompile(`dial tcp|Get "http|Post "http|Put "http|Delete "http`)

// styleProblems lists what breaks the one error style in text, the output of one run: a
// line over maxLine, a cluster named twice in one line, a raw library text.
func styleProblems(text string, clusters []string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if n := len([]rune(l)); n > maxLine {
			out = append(out, fmt.Sprintf("line of %d characters: %s", n, l))
		}
		for _, c := range clusters {
			if n := len(regexp.MustCompile(`\b`+regexp.QuoteMeta(c)+`\b`).FindAllStringIndex(l, -1)); n > 1 {
				out = append(out, fmt.Sprintf("cluster %s named %d times: %s", c, n, l))
			}
		}
		if rawText.MatchString(l) {
			out = append(out, "raw library text: "+l)
		}
	}
	return out
}

var dumpMu sync.Mutex

func dumpRun(args []string, r result) {
	p := os.Getenv("KOP_STYLE_DUMP")
	if p == "" {
		return
	}
	dumpMu.Lock()
	defer dumpMu.Unlock()
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	defer f.Close()
	fmt.Fprintf(f, "### %s (exit %d)\n--- stdout\n%s--- stderr\n%s", strings.Join(args, " "), r.code, r.out, r.errOut)
}

func TestStyleProblems(t *testing.T) {
	if p := styleProblems("Error: cluster scus: admin 127.0.0.1:1: connection refused\n", []string{"scus"}); len(p) != 0 {
		t.Errorf("a good line is refused: %v", p)
	}
	bad := map[string]string{
		"long":     strings.Repeat("x", maxLine+1),
		"twice":    "cluster scus: cluster scus: refused",
		"dial":     "refused: dial tcp 127.0.0.1:1: connect: connection refused",
		"url text": `unreachable: Get "http://127.0.0.1:1/admin/v2"`,
	}
	for name, l := range bad {
		if p := styleProblems(l, []string{"scus"}); len(p) != 1 {
			t.Errorf("%s: %v, want one problem", name, p)
		}
	}
}
