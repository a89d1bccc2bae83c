// Package configcmd implements `kop-offsets config` and wires its subcommands.
package configcmd

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/configcmd/check"
	"github.com/kop-offsets/kop-offsets/internal/commands/configcmd/view"
)

// NewCmdConfig returns `config` with `view` and `check`.
func NewCmdConfig(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config <command>",
		Short: "Show and check the cluster configuration",
		Long: strings.TrimSpace(`
Work with the kop-offsets configuration: the YAML file that names the clusters
(--config, $KOP_OFFSETS_CONFIG, else $XDG_CONFIG_HOME/kop-offsets/config.yaml), or the
ad-hoc cluster given by --admin-url, --service-url and --bootstrap (named after the first
one's host:port).

'config view' prints the effective configuration; 'config check' validates it and tries
each endpoint. Neither writes anything.`),
		Example: cmdutil.Examples(`
  kop-offsets config view
  kop-offsets config check --cluster scus`),
		Args: cmdutil.NoArgs,
	}
	cmd.AddCommand(view.NewCmdView(f, nil))
	cmd.AddCommand(check.NewCmdCheck(f, nil))
	return cmd
}
