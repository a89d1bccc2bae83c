package commands

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kop-offsets/kop-offsets/internal/commands/factory"
	"github.com/kop-offsets/kop-offsets/internal/commands/root"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
)

// The claims README and docs/ make about the command tree are checked against it (issue 32,
// issue 48): README's commands table lists every command and nothing else, every command line
// they show uses flags the command has, and every exit code an example shows is one its
// command's contract has.

// repoRoot is the repository's top directory, seen from this package.
const repoRoot = "../.."

// readDoc is the text of a Markdown page, its path from the repository's top.
func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readme(t *testing.T) string { return readDoc(t, "README.md") }

// userDocs are the pages written by hand that show a user commands: README and docs/*.md
// (docs/cli is generated from the tree itself).
func userDocs(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no docs/*.md: %v", err)
	}
	out := []string{"README.md"}
	for _, p := range pages {
		rel, _ := filepath.Rel(repoRoot, p)
		out = append(out, rel)
	}
	return out
}

func tree() *cobra.Command {
	ios, _, _, _ := iostreams.Test()
	return root.NewCmdRoot(factory.NewWithEnv("1.2.3", ios, func(string) string { return "" }))
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// section is md's text from the heading line head to the next heading of its level.
func section(t *testing.T, md, head string) string {
	t.Helper()
	i := strings.Index(md, "\n"+head+"\n")
	if i < 0 {
		t.Fatalf("no %q in the page", head)
	}
	rest := md[i+len(head)+2:]
	level := head[:strings.Index(head, " ")+1]
	if j := strings.Index(rest, "\n"+level); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

func TestReadmeCommandsTable(t *testing.T) {
	rc := tree()
	listed := map[string]bool{}
	for _, line := range strings.Split(section(t, readme(t), "## Commands"), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.Split(line, "|")[1]
		for _, m := range codeSpan.FindAllStringSubmatch(first, -1) {
			path := m[1]
			c, _, err := rc.Find(strings.Fields(path))
			if err != nil || c.CommandPath() != "kop-offsets "+path {
				t.Errorf("README's commands table lists %q: no such command", path)
			}
			listed[path] = true
		}
	}
	// Every command a user runs is listed: itself, or each of its subcommands.
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || !sub.IsAvailableCommand() || sub.Name() == "help" {
				continue
			}
			path := strings.TrimPrefix(sub.CommandPath(), "kop-offsets ")
			if listed[path] {
				continue
			}
			if !sub.HasAvailableSubCommands() {
				t.Errorf("%q is not in README's commands table", path)
				continue
			}
			walk(sub)
		}
	}
	walk(rc)
}

// commandLines are README's command lines: each line of a code block, or each code span,
// that runs kop-offsets (a "$ " prompt and paths before it allowed), cut at a pipe, a
// redirection, a comment or a second command.
func commandLines(md string) []string {
	var out []string
	add := func(s string) {
		i := strings.Index(s, "kop-offsets ")
		if i < 0 || (i > 0 && !strings.ContainsAny(s[i-1:i], " /$(")) {
			return
		}
		s = s[i+len("kop-offsets "):]
		for _, stop := range []string{" | ", " > ", " >> ", " # ", " && ", "; ", " 2>&1", " \\"} {
			if j := strings.Index(s, stop); j >= 0 {
				s = s[:j]
			}
		}
		out = append(out, s)
	}
	inBlock := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inBlock = !inBlock
			continue
		}
		if inBlock {
			add(line)
			continue
		}
		for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
			add(m[1])
		}
	}
	return out
}

// resolve walks args down rc's tree, skipping the values of flags, and returns the command
// they run and the flags they give.
func resolve(rc *cobra.Command, args []string) (*cobra.Command, []string) {
	c := rc
	var flags []string
	lookup := func(name string) *pflag.Flag {
		if f := c.Flags().Lookup(name); f != nil {
			return f
		}
		return c.InheritedFlags().Lookup(name)
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case strings.HasPrefix(a, "--"):
			name, _, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			flags = append(flags, name)
			if f := lookup(name); f != nil && !hasValue && f.NoOptDefVal == "" {
				i++ // its value
			}
		case strings.HasPrefix(a, "-") && len(a) == 2:
			if f := c.Flags().ShorthandLookup(a[1:]); f != nil && f.NoOptDefVal == "" {
				i++
			} else if f := c.InheritedFlags().ShorthandLookup(a[1:]); f != nil && f.NoOptDefVal == "" {
				i++
			}
		default:
			for _, sub := range c.Commands() {
				if sub.Name() == a {
					c = sub
					break
				}
			}
		}
	}
	return c, flags
}

func TestReadmeCommandLinesUseRealFlags(t *testing.T) {
	rc := tree()
	total := 0
	for _, page := range userDocs(t) {
		lines := commandLines(readDoc(t, page))
		total += len(lines)
		for _, l := range lines {
			c, flags := resolve(rc, strings.Fields(l))
			for _, name := range flags {
				if name == "help" { // cobra adds it to every command as it runs
					continue
				}
				if c.Flags().Lookup(name) == nil && c.InheritedFlags().Lookup(name) == nil {
					t.Errorf("%s runs `kop-offsets %s`: %s has no --%s", page, l, c.CommandPath(), name)
				}
			}
		}
	}
	if total < 60 {
		t.Fatalf("found %d command lines in README and docs: the parser lost them", total)
	}
}

var exitShown = regexp.MustCompile(`\(exit (\d)\)`)

// Each "(exit N)" an example prints after "$ kop-offsets CMD" is a code of CMD's contract.
func TestReadmeExampleExitCodesAreInTheContract(t *testing.T) {
	checked := 0
	for _, page := range userDocs(t) {
		checked += exampleExitCodes(t, page)
	}
	if checked < 5 {
		t.Fatalf("%d (exit N) found in the examples of README and docs: the parser lost them", checked)
	}
}

// exampleExitCodes checks the "(exit N)" of page's examples and returns how many it saw.
func exampleExitCodes(t *testing.T, page string) int {
	t.Helper()
	rc := tree()
	var cmd string
	checked := 0
	inBlock := false
	for _, line := range strings.Split(readDoc(t, page), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inBlock, cmd = !inBlock, ""
			continue
		}
		if !inBlock {
			continue
		}
		if strings.HasPrefix(line, "$ kop-offsets ") {
			c, _ := resolve(rc, strings.Fields(strings.TrimPrefix(line, "$ kop-offsets ")))
			cmd = strings.TrimPrefix(c.CommandPath(), "kop-offsets ")
			continue
		}
		for _, m := range exitShown.FindAllStringSubmatch(line, -1) {
			code, _ := strconv.Atoi(m[1])
			var codes []int
			for _, s := range outcome.Of(cmd) {
				codes = append(codes, s.Outcome.ExitCode())
			}
			if !slices.Contains(codes, code) && code != outcome.Usage.ExitCode() {
				t.Errorf("%s shows %q after `kop-offsets %s`: its contract has codes %v", page, line, cmd, codes)
			}
			checked++
		}
	}
	return checked
}

var flagSpan = regexp.MustCompile("^--([a-z][a-z0-9-]*)")

// A bare `--flag` in a command's section of docs/usage.md ("### reload and repair: ...") is a
// flag of one of the commands its heading names (or a global one).
func TestReadmeSectionFlagsExist(t *testing.T) {
	rc := tree()
	var cmds []*cobra.Command
	checked := 0
	for _, line := range strings.Split(section(t, readDoc(t, "docs/usage.md"), "## Commands"), "\n") {
		if strings.HasPrefix(line, "### ") || strings.HasPrefix(line, "#### ") {
			if !strings.HasPrefix(line, "#### ") {
				cmds = nil
				head, _, _ := strings.Cut(strings.TrimLeft(line, "# "), ":")
				for _, name := range strings.FieldsFunc(head, func(r rune) bool { return r == ',' || r == ' ' }) {
					if name == "and" {
						continue
					}
					if c, _, err := rc.Find([]string{name}); err == nil && c != rc {
						cmds = append(cmds, c)
					}
				}
			}
			continue
		}
		if len(cmds) == 0 {
			continue
		}
		for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
			f := flagSpan.FindStringSubmatch(m[1])
			if len(f) < 2 || f[1] == "help" {
				continue
			}
			found := false
			for _, c := range cmds {
				if c.Flags().Lookup(f[1]) != nil || c.InheritedFlags().Lookup(f[1]) != nil || hasSubFlag(c, f[1]) {
					found = true
				}
			}
			if !found {
				t.Errorf("docs/usage.md's section of %v names `%s`: none of them has --%s", names(cmds), m[1], f[1])
			}
			checked++
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d flags in docs/usage.md's command sections: the parser lost them", checked)
	}
}

// hasSubFlag: a subcommand of c has the flag (sync's section names sync setup's flags).
func hasSubFlag(c *cobra.Command, name string) bool {
	for _, sub := range c.Commands() {
		if sub.Flags().Lookup(name) != nil {
			return true
		}
	}
	return false
}

func names(cs []*cobra.Command) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name())
	}
	return out
}
