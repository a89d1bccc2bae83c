// Command docgen writes the kop-offsets CLI reference from the command tree: Markdown
// pages (committed under docs/cli; a test fails when they are stale) and man pages (built
// for releases and packages). Run it from the repository root:
//
//	go run ./cmd/docgen -markdown docs/cli -man man
//
// An empty directory flag skips that format. Set SOURCE_DATE_EPOCH for a reproducible
// man page date.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/kop-offsets/kop-offsets/internal/commands/docgen"
)

func main() {
	markdown := flag.String("markdown", "docs/cli", "directory for the Markdown pages (empty: skip)")
	man := flag.String("man", "", "directory for the man pages (empty: skip)")
	version := flag.String("version", "", "version for the man pages' header (e.g. v1.2.3)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "docgen: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	if err := run(*markdown, *man, *version); err != nil {
		fmt.Fprintln(os.Stderr, "docgen:", err)
		os.Exit(1)
	}
}

func run(markdown, man, version string) error {
	if markdown != "" {
		if err := docgen.WriteMarkdown(markdown); err != nil {
			return err
		}
	}
	if man != "" {
		if err := docgen.WriteMan(man, version); err != nil {
			return err
		}
	}
	return nil
}
