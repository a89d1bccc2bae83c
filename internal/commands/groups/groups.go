// Package groups implements `kop-offsets groups`: every group per cluster, with its state
// and members as KoP describes it, and whether it is cached, persisted, or both.
package groups

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/shared"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/survey"
)

// Options of `groups`.
type Options struct {
	IO            *iostreams.IOStreams
	Format        output.Format
	Clusters      func() ([]config.Cluster, error)
	Connect       shared.ConnectFunc
	Groups        []string
	PersistedOnly bool
}

// NewCmdGroups returns `groups`. runF replaces the run function in tests.
func NewCmdGroups(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams, Clusters: f.Clusters}
	cmd := &cobra.Command{
		Use:   "groups",
		Short: "List groups per cluster: state, members, cached and/or persisted",
		Long: strings.TrimSpace(`
List every consumer group on each cluster: the groups KoP knows (ListGroups, then
DescribeGroups for state and member count: the cached side) joined with the groups the
offsets topic holds (replayed as KoP's loader does: the persisted side). WHERE says whether a
group is cached, persisted, or both on that cluster.

Read-only.`),
		Example: cmdutil.Examples(`
  kop-offsets groups
  kop-offsets groups --group 'orders-*' -o json
  kop-offsets groups --persisted-only --cluster wus`),
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if opts.Format, err = f.OutputFormat(output.StandardSpec); err != nil {
				return err
			}
			if opts.Connect == nil {
				opts.Connect = shared.FactoryConnect(f)
			}
			if runF != nil {
				return runF(opts)
			}
			return groupsRun(cmd.Context(), opts)
		},
	}
	cmdutil.PatternsVar(cmd.Flags(), &opts.Groups, "group", "group name or glob, repeatable (default: every group)")
	cmd.Flags().BoolVar(&opts.PersistedOnly, "persisted-only", false, "do not ask KoP: list the offsets topics' groups only")
	return cmd
}

func groupsRun(ctx context.Context, opts *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	sources, closeAll, err := shared.BuildSources(opts.Clusters, opts.Connect, shared.SourceOptions{Describe: !opts.PersistedOnly})
	if err != nil {
		return err
	}
	defer closeAll()
	for i := range sources {
		sources[i].Replication = nil
	}
	progress := opts.IO.StartProgress("listing groups")
	rep := survey.Groups(ctx, sources, opts.Groups, 4)
	progress.Stop()
	err = output.Print(opts.IO, opts.Format, rep, func(tp *output.TablePrinter) {
		tp.AddHeader("GROUP", "OFFSETS-PARTITION", "CLUSTER", "WHERE", "STATE", "MEMBERS", "PERSISTED-OFFSETS")
		for _, g := range rep.Groups {
			for _, c := range rep.Clusters {
				cell, ok := g.Clusters[c]
				if !ok {
					tp.AddRow(g.Group, fmt.Sprint(g.OffsetsPartition), c, "-", "-", "-", "0")
					continue
				}
				state, members := "-", "-"
				if cell.State != nil {
					state = *cell.State
				} else if cell.PersistedState != nil {
					state = *cell.PersistedState + " (persisted)"
				}
				if cell.Members != nil {
					members = fmt.Sprint(*cell.Members)
				}
				tp.AddRow(g.Group, fmt.Sprint(g.OffsetsPartition), c, cell.Where, state, members, fmt.Sprint(cell.PersistedOffsets))
			}
		}
	})
	if err != nil {
		return err
	}
	for _, e := range rep.Errors {
		fmt.Fprintln(opts.IO.ErrOut, "error:", e.Error)
	}
	return cmdutil.SilentError(rep.ExitCode)
}
