// Package docgen writes the CLI reference from the command tree with cobra's doc
// generator: one Markdown page per command (docs/cli, committed and checked by a test) and
// one man page per command (section 1, built for release archives and packages).
//
// The output depends only on the command tree: no auto-generated date footers, no
// environment, no terminal. The man pages' .TH date is the month of $SOURCE_DATE_EPOCH
// when set (cobra's rule), so release builds are reproducible.
package docgen

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"

	"github.com/kop-offsets/kop-offsets/internal/commands/factory"
	"github.com/kop-offsets/kop-offsets/internal/commands/root"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
)

// Name is the binary name: the first word of every command path and of every generated
// file name.
const Name = "kop-offsets"

// MarkdownHeader starts every generated Markdown page.
const MarkdownHeader = "<!-- Generated from the command tree by `make docs` (cmd/docgen). Do not edit. -->\n\n"

// NewRoot returns the kop-offsets command tree as the binary builds it, with a Factory
// that reads no environment and no terminal, and auto-generated date tags disabled on
// every command.
func NewRoot() *cobra.Command {
	ios, _, _, _ := iostreams.Test()
	f := factory.NewWithEnv("docs", ios, func(string) string { return "" })
	cmd := root.NewCmdRoot(f)
	walk(cmd, func(c *cobra.Command) { c.DisableAutoGenTag = true })
	return cmd
}

// WriteMarkdown writes one Markdown page per available command of the kop-offsets tree
// into dir, named like kop-offsets_config_view.md, after removing the pages of an earlier
// run (so a removed command's page goes too). Other files in dir are left alone.
func WriteMarkdown(dir string) error {
	if err := prepare(dir, ".md"); err != nil {
		return err
	}
	cmd := NewRoot()
	// Short and Long are prose in the page; usage lines and flags go into code blocks.
	walk(cmd, func(c *cobra.Command) {
		c.Short, c.Long = escapeMarkdown(c.Short), helpToMarkdown(c.Long)
	})
	prepend := func(string) string { return MarkdownHeader }
	link := func(s string) string { return s }
	if err := doc.GenMarkdownTreeCustom(cmd, dir, prepend, link); err != nil {
		return fmt.Errorf("write markdown docs to %s: %w", dir, err)
	}
	// The exit-code contract, the table --help's "Exit codes:" sections come from.
	if err := os.WriteFile(filepath.Join(dir, ExitCodesPage), []byte(MarkdownHeader+outcome.Markdown()), 0o644); err != nil {
		return fmt.Errorf("write markdown docs to %s: %w", dir, err)
	}
	return nil
}

// ExitCodesPage is the page of the exit-code contract (outcome.Contract) in docs/cli.
const ExitCodesPage = Name + "_exit-codes.md"

// WriteMan writes one man page (section 1) per available command of the kop-offsets tree
// into dir, named like kop-offsets-config-view.1, after removing the pages of an earlier
// run. version goes into the .TH source field ("kop-offsets VERSION"); may be empty.
func WriteMan(dir, version string) error {
	if err := prepare(dir, ".1"); err != nil {
		return err
	}
	cmd := NewRoot()
	// cobra renders the man page from Markdown (go-md2man): everything but the examples
	// (a fenced block) is Markdown there, including the usage line and the flag usages.
	walk(cmd, func(c *cobra.Command) {
		c.Short, c.Long = escapeMarkdown(c.Short), helpToMarkdown(c.Long)
		c.Use = escapeMarkdown(c.Use)
		c.LocalFlags().VisitAll(func(fl *pflag.Flag) { fl.Usage = escapeMarkdown(fl.Usage) })
	})
	source := Name
	if version != "" {
		source += " " + version
	}
	header := &doc.GenManHeader{Section: "1", Source: source, Manual: Name + " manual"}
	if err := doc.GenManTree(cmd, header, dir); err != nil {
		return fmt.Errorf("write man pages to %s: %w", dir, err)
	}
	return nil
}

// markdownEscaper escapes what Markdown would otherwise take for markup in help text
// written as plain text: persistent://<tenant>/__kafka/__consumer_offsets would lose
// <tenant> (an HTML tag) and turn __kafka/__ bold.
var markdownEscaper = strings.NewReplacer(`\`, `\\`, `*`, `\*`, `_`, `\_`, `<`, `\<`, `>`, `\>`)

func escapeMarkdown(s string) string { return markdownEscaper.Replace(s) }

// helpToMarkdown turns a plain-text help text into Markdown that renders as it reads in
// --help: prose is escaped (escapeMarkdown), and a run of indented lines (aligned flag
// lists, file layouts) becomes a code block, kept verbatim, instead of being reflowed
// into the paragraph around it.
func helpToMarkdown(s string) string {
	lines := strings.Split(s, "\n")
	var out []string
	inBlock := false
	for _, l := range lines {
		indented := strings.HasPrefix(l, "  ") || strings.HasPrefix(l, "\t")
		switch {
		case indented && !inBlock:
			if len(out) > 0 && out[len(out)-1] != "" {
				out = append(out, "")
			}
			inBlock = true
		case !indented && inBlock && l != "":
			out = append(out, "")
			inBlock = false
		}
		if inBlock {
			if l == "" {
				out = append(out, "")
			} else {
				out = append(out, "    "+l)
			}
			continue
		}
		out = append(out, escapeMarkdown(l))
	}
	return strings.Join(out, "\n")
}

// walk calls fn on c and every command below it.
func walk(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		walk(sub, fn)
	}
}

// prepare creates dir and removes the files a previous run generated there (Name*ext).
func prepare(dir, ext string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create docs dir: %w", err)
	}
	old, err := filepath.Glob(filepath.Join(dir, Name+"*"+ext))
	if err != nil {
		return fmt.Errorf("list old docs in %s: %w", dir, err)
	}
	for _, p := range old {
		if !strings.HasSuffix(p, ext) {
			continue
		}
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("remove stale doc: %w", err)
		}
	}
	return nil
}
