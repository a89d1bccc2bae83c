package commands

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
)

// clusterFlags are the flags whose value is a cluster name: each must complete the
// configured names. A new flag of that kind is caught by isClusterUsage below.
var clusterFlags = []string{
	"kop-offsets --cluster",
	"kop-offsets failover --source",
	"kop-offsets failover --target",
	"kop-offsets check --source",
}

func TestClusterNamesCompleteEverywhereAClusterIsNamed(t *testing.T) {
	cfg := writeConfig(t, twoClusters)
	// Every marked flag completes the config's names, through cobra's own __complete.
	for _, f := range clusterFlags {
		words := strings.Fields(f)[1:]
		args := append([]string{"__complete", "--config", cfg}, words...)
		args = append(args, "")
		r := run(t, nil, args...)
		if r.code != 0 || !strings.Contains(r.out, "scus\n") || !strings.Contains(r.out, "wus\n") {
			t.Errorf("%s: completion exit %d, out %q: want scus and wus", f, r.code, r.out)
		}
	}

	// Every flag of the tree that takes a cluster name is marked, and so in the list above.
	want := map[string]bool{}
	for _, s := range clusterFlags {
		want[s] = true
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(fl *pflag.Flag) {
			name := c.CommandPath() + " --" + fl.Name
			_, marked := fl.Annotations[cmdutil.AnnotationCluster]
			switch {
			case marked && !want[name]:
				t.Errorf("%s is marked a cluster flag but not in clusterFlags", name)
			case !marked && want[name]:
				t.Errorf("%s is not marked a cluster flag (cmdutil.MarkCluster)", name)
			case !marked && isClusterUsage(fl):
				t.Errorf("%s looks like it takes a cluster name (%q) but does not complete one: cmdutil.MarkCluster", name, fl.Usage)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(tree())
}

// isClusterUsage says whether a string flag's help calls its value a cluster in its first
// clause ("the source cluster, where ...", "the authoritative cluster (...)").
func isClusterUsage(fl *pflag.Flag) bool {
	if t := fl.Value.Type(); t != "string" && t != "stringSlice" {
		return false
	}
	first := strings.ToLower(strings.SplitN(fl.Usage, "(", 2)[0])
	first = strings.SplitN(first, ",", 2)[0]
	return strings.HasPrefix(first, "the ") && strings.HasSuffix(strings.TrimSpace(strings.SplitN(first, " where", 2)[0]), "cluster")
}

// locate takes its groups as arguments or --group, names only, as doctor's --group.
func TestLocateGroupFlag(t *testing.T) {
	pos := run(t, nil, "locate", "orders", "--partitions", "50", "-o", "json")
	fl := run(t, nil, "locate", "--group", "orders", "--partitions", "50", "-o", "json")
	if pos.code != 0 || fl.code != 0 || pos.out != fl.out || !strings.Contains(fl.out, `"orders"`) {
		t.Fatalf("positional (%d) %q and --group (%d) %q differ", pos.code, pos.out, fl.code, fl.out)
	}
	for _, args := range [][]string{{"locate", "orders-*", "--partitions", "50"}, {"locate", "--group", "orders-*", "--partitions", "50"}, {"locate", "--partitions", "50"}} {
		r := run(t, nil, args...)
		if saysWhy := strings.Contains(r.errOut, "not a glob") || strings.Contains(r.errOut, "at least one group"); r.code != 2 || !saysWhy {
			t.Errorf("%v: exit %d, stderr %q: want 2 saying why", args, r.code, r.errOut)
		}
	}
}
