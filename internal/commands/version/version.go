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
		line := "kop-offsets version " + opts.Info.Version
		var extra []string
		if opts.Info.Commit != "" {
			extra = append(extra, "commit "+opts.Info.Commit)
		}
		if opts.Info.Date != "" {
			extra = append(extra, "built "+opts.Info.Date)
		}
		if opts.Info.GoVersion != "" {
			extra = append(extra, opts.Info.GoVersion)
		}
		if len(extra) > 0 {
			line += " (" + strings.Join(extra, ", ") + ")"
		}
		_, err := fmt.Fprintln(opts.IO.Out, line)
		return err
	}
	return output.Print(opts.IO, opts.Format, opts.Info, nil)
}
