// Package completion implements `kop-offsets completion`.
package completion

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
)

// NewCmdCompletion returns `completion bash|zsh|fish|powershell`, cobra's generators.
func NewCmdCompletion(f *cmdutil.Factory) *cobra.Command {
	var noDesc bool
	cmd := &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Generate the shell completion script",
		Long: strings.TrimSpace(`
Print a completion script for bash, zsh, fish or PowerShell to stdout. Reads and writes
nothing else; contacts no cluster. Completion of --cluster reads the config file.`),
		Example: cmdutil.Examples(`
  # bash, for the current shell
  source <(kop-offsets completion bash)

  # bash, permanently (Linux)
  kop-offsets completion bash > /etc/bash_completion.d/kop-offsets

  # zsh
  kop-offsets completion zsh > "${fpath[1]}/_kop-offsets"

  # fish
  kop-offsets completion fish > ~/.config/fish/completions/kop-offsets.fish

  # PowerShell
  kop-offsets completion powershell | Out-String | Invoke-Expression`),
		ValidArgs:             []string{"bash", "zsh", "fish", "powershell"},
		DisableFlagsInUseLine: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmdutil.FlagErrorf("completion needs one shell: bash, zsh, fish or powershell")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			out := f.IOStreams.Out
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(out, !noDesc)
			case "zsh":
				if noDesc {
					return root.GenZshCompletionNoDesc(out)
				}
				return root.GenZshCompletion(out)
			case "fish":
				return root.GenFishCompletion(out, !noDesc)
			case "powershell":
				if noDesc {
					return root.GenPowerShellCompletion(out)
				}
				return root.GenPowerShellCompletionWithDesc(out)
			}
			return cmdutil.FlagErrorf("unsupported shell %q: use bash, zsh, fish or powershell", args[0])
		},
	}
	cmd.Flags().BoolVar(&noDesc, "no-descriptions", false, "leave out completion descriptions")
	return cmd
}
