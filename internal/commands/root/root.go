// Package root builds the `kop-offsets` command tree and binds the global flags.
package root

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kop-offsets/kop-offsets/internal/buildinfo"
	checkcmd "github.com/kop-offsets/kop-offsets/internal/commands/check"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/completion"
	configcmd "github.com/kop-offsets/kop-offsets/internal/commands/configcmd"
	decodecmd "github.com/kop-offsets/kop-offsets/internal/commands/decode"
	doctorcmd "github.com/kop-offsets/kop-offsets/internal/commands/doctor"
	dumpcmd "github.com/kop-offsets/kop-offsets/internal/commands/dump"
	failovercmd "github.com/kop-offsets/kop-offsets/internal/commands/failover"
	groupscmd "github.com/kop-offsets/kop-offsets/internal/commands/groups"
	historycmd "github.com/kop-offsets/kop-offsets/internal/commands/history"
	locatecmd "github.com/kop-offsets/kop-offsets/internal/commands/locate"
	reloadcmd "github.com/kop-offsets/kop-offsets/internal/commands/reload"
	repaircmd "github.com/kop-offsets/kop-offsets/internal/commands/repair"
	"github.com/kop-offsets/kop-offsets/internal/commands/synccmd"
	versioncmd "github.com/kop-offsets/kop-offsets/internal/commands/version"
	watchcmd "github.com/kop-offsets/kop-offsets/internal/commands/watch"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/output"
)

// Command groups shown in --help.
const (
	GroupOffsets = "offsets"
	GroupRepair  = "repair"
	GroupSetup   = "setup"
)

// NewCmdRoot returns the root command with every subcommand. Add a command here with
// cmd.AddCommand(x.NewCmdX(f, nil)) and set its GroupID.
func NewCmdRoot(f *cmdutil.Factory) *cobra.Command {
	// Run the root's persistent hooks even when a subcommand has its own.
	cobra.EnableTraverseRunHooks = true

	cmd := &cobra.Command{
		Use:           "kop-offsets <command> [flags]",
		Short:         "Inspect, compare and repair KoP consumer offsets across geo-replicated Pulsar clusters",
		Long:          strings.TrimSpace(rootLong),
		Example:       cmdutil.Examples(rootExample),
		SilenceErrors: true,
		SilenceUsage:  true,
		Annotations:   map[string]string{},
		Version:       f.AppVersion,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if f.Flags.Timeout <= 0 {
				return cmdutil.FlagErrorf("--timeout must be positive, got %s", f.Flags.Timeout)
			}
			f.IOStreams.SetNoHeaders(f.Flags.NoHeaders)
			return nil
		},
	}
	// The line `version` prints (a template's braces in it would be read as actions).
	cmd.SetVersionTemplate(strings.NewReplacer("{{", `{{"{{"}}`).Replace(versioncmd.Line(buildinfo.Get())) + "\n")
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &cmdutil.FlagError{Err: err}
	})
	cmd.SetOut(f.IOStreams.Out)
	cmd.SetErr(f.IOStreams.ErrOut)
	cmd.SetIn(f.IOStreams.In)

	cmdutil.BindGlobalFlags(cmd, f.Flags)

	registerCompletions(cmd, f)

	cmd.Flags().Bool("version", false, "print the version (as 'kop-offsets version')")
	cmd.SetHelpCommandGroupID(GroupSetup)
	cmd.CompletionOptions.DisableDefaultCmd = true // ours has help and examples

	addCommands(cmd, f)
	exitCodeHelp(cmd)
	strictHelp(cmd)
	strictParents(cmd)
	markOnRun(cmd)
	completeClusters(cmd, f)
	return cmd
}

// registerCompletions completes the global flags -o (the formats of the command asked
// about) and --timeout (nothing); completeClusters does --cluster.
func registerCompletions(cmd *cobra.Command, f *cmdutil.Factory) {
	_ = cmd.RegisterFlagCompletionFunc("output", func(c *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		formats := output.Names(output.Standard)
		for p := c; p != nil; p = p.Parent() {
			if s := p.Annotations[cmdutil.AnnotationOutputFormats]; s != "" {
				formats = strings.Split(s, ",")
				break
			}
		}
		return formats, cobra.ShellCompDirectiveNoFileComp
	})
	_ = cmd.RegisterFlagCompletionFunc("timeout", cobra.NoFileCompletions)
}

// completeClusters completes every flag of the tree marked as a cluster name
// (cmdutil.MarkCluster: --cluster, failover's --from and --to, check's --source) with the
// configured names. It runs once the tree is built.
func completeClusters(root *cobra.Command, f *cmdutil.Factory) {
	names := func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		cfg, err := f.Config()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return config.Names(cfg.Clusters), cobra.ShellCompDirectiveNoFileComp
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(fl *pflag.Flag) {
			if _, ok := fl.Annotations[cmdutil.AnnotationCluster]; ok {
				_ = c.RegisterFlagCompletionFunc(fl.Name, names)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// addCommands adds every subcommand under its help group.
func addCommands(cmd *cobra.Command, f *cmdutil.Factory) {
	// Setup commands.
	add(cmd, GroupSetup, versioncmd.NewCmdVersion(f, nil))
	add(cmd, GroupSetup, completion.NewCmdCompletion(f))
	add(cmd, GroupSetup, configcmd.NewCmdConfig(f))
	add(cmd, GroupOffsets, doctorcmd.NewCmdDoctor(f, nil))

	add(cmd, GroupOffsets, decodecmd.NewCmdDecode(f, nil))
	add(cmd, GroupOffsets, dumpcmd.NewCmdDump(f, nil))
	add(cmd, GroupOffsets, locatecmd.NewCmdLocate(f, nil))

	// Offsets commands (decode, dump, locate, groups, check, doctor) and repair commands
	// (reload, repair) are added here by their packages' NewCmdX(f, nil).
	add(cmd, GroupOffsets, checkcmd.NewCmdCheck(f, nil))
	add(cmd, GroupOffsets, groupscmd.NewCmdGroups(f, nil))

	add(cmd, GroupRepair, reloadcmd.NewCmdReload(f, nil))
	add(cmd, GroupRepair, repaircmd.NewCmdRepair(f, nil))
	add(cmd, GroupRepair, failovercmd.NewCmdFailover(f, nil))
	add(cmd, GroupRepair, watchcmd.NewCmdWatch(f, nil))
	add(cmd, GroupRepair, historycmd.NewCmdHistory(f, nil))
	add(cmd, GroupSetup, synccmd.NewCmdSync(f))
}

// exitCodeHelp gives every command of the tree the contract has rows for, and the root, the
// contract's "Exit codes:" section at the end of its long help (outcome.Help): the help
// and docs/cli/kop-offsets_exit-codes.md come from one table.
func exitCodeHelp(c *cobra.Command) {
	for _, sub := range c.Commands() {
		exitCodeHelp(sub)
	}
	path := strings.TrimSpace(strings.TrimPrefix(c.CommandPath(), c.Root().Name()))
	if path != "" && len(outcome.Of(path)) == 0 {
		return
	}
	c.Long = strings.TrimSpace(c.Long) + "\n\n" + outcome.Help(path)
}

// strictParents makes every command that only groups subcommands (config, sync) refuse an
// unknown subcommand with exit 2, as the root does; cobra prints such a parent's help and
// exits 0 for `config bogus`. Without arguments it still prints its help (exit 0).
func strictParents(c *cobra.Command) {
	for _, sub := range c.Commands() {
		strictParents(sub)
	}
	if c.HasParent() && c.HasAvailableSubCommands() && !c.Runnable() {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownCommand(cmd, args[0])
			}
			return nil
		}
		c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	}
}

// unknownCommand is the usage error of name, not a subcommand of cmd.
func unknownCommand(cmd *cobra.Command, name string) error {
	var names []string
	for _, sub := range cmd.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	return cmdutil.FlagErrorf("unknown command %q for %q (its commands: %s)", name, cmd.CommandPath(), strings.Join(names, ", "))
}

// strictHelp makes `help <topic>` exit 2 for a topic that is no command, where cobra's
// help prints "Unknown help topic" and exits 0.
func strictHelp(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	for _, h := range root.Commands() {
		if h.Name() != "help" || h.Run == nil {
			continue
		}
		run := h.Run
		h.Run = nil
		h.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				target, rest, err := root.Find(args)
				if err != nil || target == nil {
					return unknownCommand(root, args[0])
				}
				if len(rest) > 0 {
					return unknownCommand(target, rest[0])
				}
			}
			run(cmd, args)
			return nil
		}
	}
}

// markOnRun wraps the Run/RunE of every command in the tree so that the root records that
// a command body started; see Started.
func markOnRun(c *cobra.Command) {
	if run := c.RunE; run != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			markStarted(cmd)
			return run(cmd, args)
		}
	} else if run := c.Run; run != nil {
		c.Run = func(cmd *cobra.Command, args []string) {
			markStarted(cmd)
			run(cmd, args)
		}
	}
	for _, sub := range c.Commands() {
		markOnRun(sub)
	}
}

var groupTitles = map[string]string{
	GroupOffsets: "Offsets commands:",
	GroupRepair:  "Repair commands:",
	GroupSetup:   "Setup commands:",
}

// add adds c to parent under group, creating the group on first use so that --help shows
// no empty group.
func add(parent *cobra.Command, group string, c *cobra.Command) {
	if !parent.ContainsGroup(group) {
		parent.AddGroup(&cobra.Group{ID: group, Title: groupTitles[group]})
	}
	c.GroupID = group
	parent.AddCommand(c)
}

// annotationStarted marks, on the root, that a command's Run/RunE started: an error
// without it came from cobra's own parsing and validation (exit 2).
const annotationStarted = "kop-offsets/started"

func markStarted(cmd *cobra.Command) {
	r := cmd.Root()
	if r.Annotations == nil {
		r.Annotations = map[string]string{}
	}
	r.Annotations[annotationStarted] = "true"
}

// Started reports whether a command got past cobra's parsing and validation of flags and
// arguments (its Run/RunE was called).
func Started(root *cobra.Command) bool { return root.Annotations[annotationStarted] == "true" }

// rootLong is the long help of kop-offsets.
const rootLong = `
kop-offsets reads Kafka-on-Pulsar (KoP) consumer-group offsets on one or more geo-replicated
Pulsar clusters: what is persisted in the offsets topic
(persistent://<tenant>/__kafka/__consumer_offsets), what each KoP broker has cached, and
whether the clusters agree.

Clusters come from a YAML config file (--config, $KOP_OFFSETS_CONFIG, or
$XDG_CONFIG_HOME/kop-offsets/config.yaml; see 'kop-offsets config view'), or for one ad-hoc
cluster named "default" from --admin-url, --service-url and --bootstrap. Every command
works on all configured clusters unless --cluster selects some.

Read commands only use non-durable readers and never commit offsets. Results go to
stdout (-o table|json|yaml), logs and progress to stderr.`

// rootExample is the examples of kop-offsets.
const rootExample = `
  # check every endpoint of every configured cluster
  kop-offsets config check

  # the same for two clusters, as JSON
  kop-offsets --cluster scus,wus config check -o json

  # one ad-hoc cluster, no config file
  kop-offsets --admin-url http://127.0.0.1:8080 --service-url pulsar://127.0.0.1:6650 \
      --bootstrap 127.0.0.1:9092 config check`
