// Package groups implements `kop-offsets groups`: every group per cluster, with its state
// and members as KoP describes it, and whether it is cached, persisted, or both.
package groups

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/shared"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/explain"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/survey"
)

// Options of `groups`.
type Options struct {
	IO       *iostreams.IOStreams
	Format   output.Format
	Clusters func() ([]config.Cluster, error)
	// Scopes are the clusters per tenant (nil: Clusters, one tenant).
	Scopes        func() ([]config.Scope, error)
	Connect       shared.ConnectFunc
	Groups        []string
	PersistedOnly bool
}

// NewCmdGroups returns `groups`. runF replaces the run function in tests.
func NewCmdGroups(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams, Clusters: f.Clusters, Scopes: f.Scopes}
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

// listScopes lists each tenant's groups on its own clusters; in a multi-tenant config every
// row names its tenant and errors name it too.
func listScopes(ctx context.Context, opts *Options, scopes []config.Scope) (*survey.GroupsReport, error) {
	var total *survey.GroupsReport
	for _, sc := range scopes {
		sources, closeAll, err := shared.BuildSources(func() ([]config.Cluster, error) { return sc.Clusters, nil }, opts.Connect, shared.SourceOptions{Describe: !opts.PersistedOnly})
		if err != nil {
			return nil, err
		}
		for i := range sources {
			sources[i].Replication = nil
		}
		rep := survey.Groups(ctx, sources, opts.Groups, 4)
		closeAll()
		if !sc.Named {
			return rep, nil
		}
		if total == nil {
			total = &survey.GroupsReport{SchemaVersion: 1, Groups: []survey.GroupRow{}}
		}
		total.Tenants = append(total.Tenants, sc.Tenant)
		for _, c := range rep.Clusters {
			if !slices.Contains(total.Clusters, c) {
				total.Clusters = append(total.Clusters, c)
			}
		}
		for _, g := range rep.Groups {
			g.Tenant = sc.Tenant
			total.Groups = append(total.Groups, g)
		}
		for _, e := range rep.Errors {
			e.Tenant, e.Error = sc.Tenant, "tenant "+sc.Tenant+": "+e.Error
			total.Errors = append(total.Errors, e)
		}
		total.ExitCode = outcome.Worst(total.ExitCode, rep.ExitCode)
	}
	return total, nil
}

func groupsRun(ctx context.Context, opts *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	scopes, err := shared.ScopesOf(opts.Scopes, opts.Clusters)
	if err != nil {
		return err
	}
	progress := opts.IO.StartProgress("listing groups")
	rep, err := listScopes(ctx, opts, scopes)
	progress.Stop()
	if err != nil {
		return err
	}
	named := rep.Tenants != nil
	err = output.Print(opts.IO, opts.Format, rep, func(tp *output.TablePrinter) {
		row := func(g survey.GroupRow, cells ...string) {
			if named {
				cells = append([]string{g.Tenant}, cells...)
			}
			tp.AddRow(cells...)
		}
		header := []string{"GROUP", "OFFSETS-PARTITION", "CLUSTER", "WHERE", "STATE", "MEMBERS", "PERSISTED-OFFSETS"}
		if named {
			header = append([]string{"TENANT"}, header...)
		}
		tp.AddHeader(header...)
		for _, g := range rep.Groups {
			for _, c := range rep.Clusters {
				cell, ok := g.Clusters[c]
				if !ok {
					row(g, g.Group, fmt.Sprint(g.OffsetsPartition), c, "-", "-", "-", "0")
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
				row(g, g.Group, fmt.Sprint(g.OffsetsPartition), c, cell.Where, state, members, fmt.Sprint(cell.PersistedOffsets))
			}
		}
	})
	if err != nil {
		return err
	}
	for _, e := range rep.Errors {
		fmt.Fprint(opts.IO.ErrOut, explain.Lines(e.Error, e.Fix))
	}
	return cmdutil.SilentError(rep.ExitCode)
}
