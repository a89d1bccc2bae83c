// Package version implements `kop-offsets version`.
package version

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kop-offsets/kop-offsets/internal/buildinfo"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/output"
)

// Options of `version`.
type Options struct {
	IO     *iostreams.IOStreams
	Format output.Format
	Info   buildinfo.Info
}

// NewCmdVersion returns `version`. runF replaces the run function in tests.
func NewCmdVersion(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of kop-offsets",
		Long: strings.TrimSpace(`
Print the version, commit and build date of this kop-offsets binary (set at build time).
Reads and writes nothing else; contacts no cluster.`),
		Example: cmdutil.Examples(`
  kop-offsets version
  kop-offsets version -o json`),
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if opts.Format, err = f.OutputFormat(output.StandardSpec); err != nil {
				return err
			}
			opts.Info = buildinfo.Get()
			if runF != nil {
				return runF(opts)
			}
			return versionRun(opts)
		},
	}
	return cmd
}

func versionRun(opts *Options) error {
	if opts.Format == output.Table {
		_, err := fmt.Fprintln(opts.IO.Out, Line(opts.Info))
		return err
	}
	doc := struct {
		SchemaVersion int `json:"schemaVersion"`
		buildinfo.Info
	}{1, opts.Info}
	return output.Print(opts.IO, opts.Format, doc, nil)
}

// Line is the version line `version` and `--version` print.
func Line(info buildinfo.Info) string {
	line := "kop-offsets version " + info.Version
	var extra []string
	if info.Commit != "" {
		extra = append(extra, "commit "+info.Commit)
	}
	if info.Date != "" {
		extra = append(extra, "built "+info.Date)
	}
	if info.GoVersion != "" {
		extra = append(extra, info.GoVersion)
	}
	if len(extra) > 0 {
		line += " (" + strings.Join(extra, ", ") + ")"
	}
	return line
}
