package shared

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/reload"
)

// Flags are the flags reload and repair share: whether and how bundles are unloaded,
// paced and verified.
type Flags struct {
	DryRun      bool
	Yes         bool
	AllowActive bool
	RefuseLive  bool
	MaxBundles  int
	Pause       time.Duration
	Wait        time.Duration
	ShowAll     bool // --show-all (BindShowAll)
}

// BindReloadFlags binds --dry-run, --yes, --allow-active, --refuse-live, --max-bundles, --pause and --wait
// to r. The help of --dry-run and --max-bundles, and the --max-bundles default, are the
// command's own: the two commands stop and count differently.
func BindReloadFlags(fl *pflag.FlagSet, r *Flags, dryRunUsage string, maxBundles int, maxBundlesUsage string) {
	fl.BoolVar(&r.DryRun, "dry-run", false, dryRunUsage)
	fl.BoolVar(&r.Yes, "yes", false, "do not ask for confirmation")
	fl.BoolVar(&r.AllowActive, "allow-active", false, "reload bundles with groups whose activity here is unknown (KoP did not answer DescribeGroups), and live ones under --refuse-live")
	fl.BoolVar(&r.RefuseLive, "refuse-live", false, "refuse bundles with groups live on the cluster written to (by default they are reloaded: their members pause while KoP loads)")
	fl.IntVar(&r.MaxBundles, "max-bundles", maxBundles, maxBundlesUsage)
	fl.DurationVar(&r.Pause, "pause", 0, "pause between two bundles")
	fl.DurationVar(&r.Wait, "wait", reload.DefaultWait, "how long to wait, per bundle, for KoP to serve the persisted offsets")
}

// Validate checks the values of the flags (a usage error, exit 2).
func (r *Flags) Validate() error {
	if r.MaxBundles < 1 {
		return cmdutil.FlagErrorf("--max-bundles must be at least 1, got %d", r.MaxBundles)
	}
	if r.Wait <= 0 {
		return cmdutil.FlagErrorf("--wait must be positive, got %s", r.Wait)
	}
	if r.Pause < 0 {
		return cmdutil.FlagErrorf("--pause must not be negative, got %s", r.Pause)
	}
	return nil
}

// BindShowAll binds --show-all to v: the tables of a plan and its result show every row,
// not the first output.MaxRows (-o json always has every row).
func BindShowAll(fl *pflag.FlagSet, v *bool) {
	fl.BoolVar(v, "show-all", false, fmt.Sprintf("-o table: print every row of the plan and result tables (default: the first %d, then how many more)", output.MaxRows))
}
