package commands

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
)

// One flag name, one meaning, across the tree (docs/contract-changes.md, "One meaning per
// flag name"). A flag that several commands define must have the same kind (value type,
// cluster-name or not), the same default and the same usage text; the lists below are the
// only exceptions, each where the difference is truly the same meaning, and each must still
// be needed.

// usageVaries are the flags whose usage text differs by command although they mean one
// thing (the meaning is stated here); the command's text adds its own context.
var usageVaries = map[string]string{
	"group":                  "the consumer groups worked on: names or globs (locate, doctor: one name each)",
	"topic":                  "the topics worked on: names or globs (doctor: one name each)",
	"dry-run":                "show what the command would write, write nothing",
	"alignment-max-messages": "messages read at most per copy of a topic partition to translate an offset",
	"concurrency":            "offsets partitions read at once per cluster",
	"partition":              "offsets-topic partitions worked on",
	"persisted-only":         "do not ask KoP: the offsets topics only",
	"wait":                   "how long to wait, per bundle, for KoP to serve the persisted offsets (watch: with --repair)",
	"refuse-live":            "leave bundles with groups live on the cluster written to (watch: with --repair)",
	"max-bundles":            "bundles reloaded at most per cluster in one pass (a repair run, a watch cycle); the others wait for the next pass",
	"coordinator-wait":       "how long to retry groups KoP is loading or not coordinating (watch: per cycle)",
	"show-all":               "print every row (failover: also in JSON, where a large disaster's proven kept rows are counted by default)",
	"accept-loss":            "allow writes that move offsets back (reload: a reload that would serve older offsets; failover: offsets the group committed on the target)",
	"audit-file":             "the audit trail: appended to by the commands that write, read by history",
	"source":                 "the cluster whose offsets are the truth (check: compared with; failover: moved from)",
}

// defaultVaries are the flags whose default differs by command, with why.
var defaultVaries = map[string]string{
	// check asks once and must wait for a group KoP is loading; watch asks again at the
	// next cycle, and a long wait would hold the cycle (watch.DefaultCoordinatorWait).
	"coordinator-wait": "one-shot check waits longer than a watch cycle",
}

// kindVaries are the flags of a command whose value type differs from the others' though
// the meaning is the same ("command --flag").
var kindVaries = map[string]string{
	// locate and doctor hash a group to its one offsets partition and audit a topic by its
	// name: the same grammar, but each value must name one (cmdutil.NamesVar; type "name").
	"locate --group": "one group name per value",
	"doctor --group": "one group name per value",
	"doctor --topic": "one topic name per value",
}

// aliasShadows are old spellings (cmdutil.Renamed) that are also a current flag of other
// commands with another meaning, for as long as the old spelling is kept.
var aliasShadows = map[string]string{
	// reload's --max-bundles refused a larger plan: --max-plan-bundles now; the name stays
	// with repair's and watch's cap, its meaning in two commands of three.
	"reload --max-bundles": "deprecated: use --max-plan-bundles",
}

// flagUse is one flag as one command defines it.
type flagUse struct {
	cmd string
	fl  *pflag.Flag
}

func (u flagUse) String() string { return u.cmd + " --" + u.fl.Name }

// flagUses returns every flag of the tree by name, the current ones and the old spellings
// apart; cobra's --help is left out (its text names the command by design).
func flagUses(root *cobra.Command) (current, renamed map[string][]flagUse) {
	current, renamed = map[string][]flagUse{}, map[string][]flagUse{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.TrimSpace(strings.TrimPrefix(c.CommandPath(), c.Root().Name()))
		c.LocalFlags().VisitAll(func(fl *pflag.Flag) {
			switch {
			case fl.Name == "help":
			case fl.Annotations[cmdutil.AnnotationRenamed] != nil:
				renamed[fl.Name] = append(renamed[fl.Name], flagUse{path, fl})
			default:
				current[fl.Name] = append(current[fl.Name], flagUse{path, fl})
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return current, renamed
}

func kind(fl *pflag.Flag) string {
	_, cluster := fl.Annotations[cmdutil.AnnotationCluster]
	return fmt.Sprintf("%s cluster=%v", fl.Value.Type(), cluster)
}

func TestOneMeaningPerFlagName(t *testing.T) {
	current, renamed := flagUses(tree())
	used := map[string]bool{}
	for name, uses := range current {
		first := uses[0]
		for _, u := range uses[1:] {
			if kind(u.fl) != kind(first.fl) {
				for _, k := range []flagUse{first, u} {
					if kindVaries[k.String()] != "" {
						used["kind "+k.String()] = true
					}
				}
				if kindVaries[u.String()] == "" && kindVaries[first.String()] == "" {
					t.Errorf("--%s is %s in %s but %s in %s: two kinds of value under one name", name, kind(first.fl), first.cmd, kind(u.fl), u.cmd)
				}
			}
			if u.fl.DefValue != first.fl.DefValue {
				used["default "+name] = true
				if defaultVaries[name] == "" {
					t.Errorf("--%s defaults to %q in %s but %q in %s: one default, or a reason in defaultVaries", name, first.fl.DefValue, first.cmd, u.fl.DefValue, u.cmd)
				}
			}
			if u.fl.Usage != first.fl.Usage {
				used["usage "+name] = true
				if usageVaries[name] == "" {
					t.Errorf("--%s reads %q in %s but %q in %s: two meanings? One usage text, or the shared meaning in usageVaries", name, first.fl.Usage, first.cmd, u.fl.Usage, u.cmd)
				}
			}
		}
	}
	// An old spelling points at a flag of its own command, and is no current flag elsewhere.
	for name, uses := range renamed {
		for _, u := range uses {
			if u.fl.Annotations[cmdutil.AnnotationCluster] != nil || !u.fl.Hidden {
				t.Errorf("%s: an old spelling is hidden and completes nothing", u)
			}
			if len(current[name]) > 0 {
				used["alias "+u.String()] = true
				if aliasShadows[u.String()] == "" {
					t.Errorf("%s is an old spelling in %s and a current flag of %v: two meanings", name, u.cmd, current[name])
				}
			}
		}
	}
	// The allow-lists hold nothing the tree no longer needs.
	for _, l := range []struct {
		name, prefix string
		entries      map[string]string
	}{{"usageVaries", "usage ", usageVaries}, {"defaultVaries", "default ", defaultVaries}, {"kindVaries", "kind ", kindVaries}, {"aliasShadows", "alias ", aliasShadows}} {
		for k := range l.entries {
			if !used[l.prefix+k] {
				t.Errorf("%s[%q]: the tree no longer needs it; remove it", l.name, k)
			}
		}
	}
}

// One value under two names: a string default shared by two flag names means the same
// thing is spelled twice (history's --file beside --audit-file was).
func TestOneNamePerMeaning(t *testing.T) {
	current, _ := flagUses(tree())
	byDefault := map[string][]string{}
	for name, uses := range current {
		d := uses[0].fl.DefValue
		if uses[0].fl.Value.Type() == "string" && d != "" {
			byDefault[d] = append(byDefault[d], name)
		}
	}
	for d, names := range byDefault {
		if len(names) > 1 {
			slices.Sort(names)
			t.Errorf("--%s share the default %q: one meaning under two names", strings.Join(names, ", --"), d)
		}
	}
}

// Every old spelling still works, sets the new flag and warns once on stderr, whatever the
// output format.
func TestRenamedFlagsWarnOnce(t *testing.T) {
	// The renames of docs/contract-changes.md, old spelling to new.
	want := map[string]string{
		"dump --from": "since", "failover --from": "source", "failover --to": "target",
		"history --file": "audit-file", "reload --max-bundles": "max-plan-bundles",
	}
	_, renamed := flagUses(tree())
	got := map[string]string{}
	for _, uses := range renamed {
		for _, u := range uses {
			got[u.String()] = u.fl.Annotations[cmdutil.AnnotationRenamed][0]
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("old spellings: %v, want %v", got, want)
	}
	// history reads a trail named by the old spelling, and says which spelling to use.
	trail := t.TempDir() + "/audit.jsonl"
	r := run(t, nil, "history", "--file", trail, "--file", trail, "-o", "json")
	if r.code != 2 || strings.Count(r.errOut, "warning: --file is deprecated") != 1 ||
		!strings.Contains(r.errOut, "use --audit-file") || !strings.Contains(r.errOut, "(--audit-file)") || strings.Contains(r.out, "deprecated") {
		t.Errorf("history --file (twice) of a missing trail: exit %d, stdout %q, stderr %q", r.code, r.out, r.errOut)
	}
}

// `help exit-codes` is a help topic: exit 0 and the contract's table on stdout, the same
// text as `kop-offsets exit-codes`.
func TestHelpExitCodes(t *testing.T) {
	r := run(t, nil, "help", "exit-codes")
	if r.code != 0 || r.errOut != "" || strings.TrimSpace(r.out) != outcome.Text() {
		t.Errorf("help exit-codes: exit %d, stderr %q, stdout:\n%s", r.code, r.errOut, r.out)
	}
	if direct := run(t, nil, "exit-codes"); direct.code != 0 || direct.out != r.out {
		t.Errorf("exit-codes: exit %d, stdout:\n%s", direct.code, direct.out)
	}
	if root := run(t, nil, "--help"); !strings.Contains(root.out, "Additional help topics:\n  kop-offsets exit-codes") {
		t.Errorf("--help does not list the topic:\n%s", root.out)
	}
}
