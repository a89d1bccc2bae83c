package outcome

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every row of the contract names a test that provokes its situation, and that test
// exists (a renamed or deleted test fails here); every command's codes have a meaning.
func TestContractTestsExist(t *testing.T) {
	root := filepath.Join("..", "..")
	untested := 0
	for _, s := range Contract {
		if _, ok := meaning(s.Outcome); !ok {
			t.Errorf("%s: %q ends with %d, which has no meaning", s.Command, s.When, s.Outcome)
		}
		if s.Test == "" {
			untested++
			continue
		}
		pkg, name, ok := strings.Cut(s.Test, ":")
		top, sub, _ := strings.Cut(name, "/")
		if !ok || !strings.HasPrefix(top, "Test") {
			t.Errorf("%s: test %q is not package:TestName", s.Command, s.Test)
			continue
		}
		if !declares(t, filepath.Join(root, pkg), top, sub) {
			t.Errorf("%s (%d, %q): test %s not found in %s", s.Command, s.Outcome, s.When, name, pkg)
		}
	}
	// Every row has its test (issue 32): a row added without one fails.
	if untested > maxUntested {
		t.Errorf("%d rows without a test, at most %d", untested, maxUntested)
	}
	// The lookup itself can fail.
	if declares(t, filepath.Join(root, "internal", "commands"), "TestExitCodes", "no_such_subtest") ||
		declares(t, filepath.Join(root, "internal", "commands"), "TestNoSuchTest", "") {
		t.Error("declares found a test that does not exist")
	}
}

// maxUntested is how many rows may have no test.
const maxUntested = 0

// declares reports whether a _test.go file of dir declares func name, and, for sub, names
// a subtest whose name (spaces as underscores, as go test prints it) is sub.
func declares(t *testing.T, dir, name, sub string) bool {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	fn := regexp.MustCompile(`(?m)^func ` + regexp.QuoteMeta(name) + `\(`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		loc := fn.FindIndex(b)
		if loc == nil {
			continue
		}
		if sub == "" {
			return true
		}
		body := string(b[loc[0]:])
		if next := regexp.MustCompile(`(?m)^func `).FindAllStringIndex(body, 2); len(next) == 2 {
			body = body[:next[1][0]]
		}
		return strings.Contains(strings.ReplaceAll(body, " ", "_"), `"`+sub+`"`) ||
			strings.Contains(strings.ReplaceAll(body, " ", "_"), `name:_"`+sub+`"`)
	}
	return false
}

func TestHelpAndMarkdown(t *testing.T) {
	h := Help("reload")
	for _, want := range []string{"Exit codes:\n  0  reloaded and verified", "\n  4  the plan was refused"} {
		if !strings.Contains(h, want) {
			t.Errorf("reload's help lacks %q:\n%s", want, h)
		}
	}
	for _, line := range strings.Split(h, "\n") {
		if len(line) > helpWidth && !strings.HasPrefix(line, "Every code of every command") {
			t.Errorf("line longer than %d: %q", helpWidth, line)
		}
	}
	// decode contacts nothing: no 3 unless it names one.
	if strings.Contains(Help("decode"), "\n  3  ") {
		t.Errorf("decode's help names 3:\n%s", Help("decode"))
	}
	if !strings.Contains(Help(""), "\n  4  a write was refused") {
		t.Errorf("root help:\n%s", Help(""))
	}
	txt := Text()
	for _, want := range []string{"  2  not run as asked", "\nrepair\n", "\n*\n"} {
		if !strings.Contains(txt, want) {
			t.Errorf("Text lacks %q:\n%s", want, txt)
		}
	}
	for _, line := range strings.Split(txt, "\n") {
		if len(line) > helpWidth {
			t.Errorf("Text: line longer than %d: %q", helpWidth, line)
		}
	}
	md := Markdown()
	if !strings.Contains(md, "| `repair` | 4 | a cluster's plan was refused") || !strings.Contains(md, "| 3 | a cluster, endpoint or lock") {
		t.Errorf("markdown:\n%s", md)
	}
}
