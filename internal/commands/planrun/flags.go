package planrun

import (
	"cmp"
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
	MaxBundles  int    // --max-bundles (repair) or --max-plan-bundles (reload)
	maxFlag     string // the name of MaxBundles' flag, for Validate
	Pause       time.Duration
	Wait        time.Duration
	ShowAll     bool // --show-all (BindShowAll)
}

// BindReloadFlags binds --dry-run, --yes, --allow-active, --refuse-live, --pause, --wait and
// the bundle limit maxFlag to r. The help of --dry-run and the limit are the command's own:
// repair caps a run at --max-bundles (the rest wait for the next run), reload refuses a plan
// beyond --max-plan-bundles (nothing is unloaded), so the two limits have two names.
func BindReloadFlags(fl *pflag.FlagSet, r *Flags, dryRunUsage, maxFlag string, maxBundles int, maxBundlesUsage string) {
	fl.BoolVar(&r.DryRun, "dry-run", false, dryRunUsage)
	fl.BoolVar(&r.Yes, "yes", false, "do not ask for confirmation")
	fl.BoolVar(&r.AllowActive, "allow-active", false, "reload bundles with groups whose activity here is unknown (KoP did not answer DescribeGroups), and live ones under --refuse-live")
	fl.BoolVar(&r.RefuseLive, "refuse-live", false, "refuse bundles with groups live on the cluster written to (by default they are reloaded: their members pause while KoP loads)")
	fl.IntVar(&r.MaxBundles, maxFlag, maxBundles, maxBundlesUsage)
	r.maxFlag = maxFlag
	fl.DurationVar(&r.Pause, "pause", 0, "pause between two bundles")
	fl.DurationVar(&r.Wait, "wait", reload.DefaultWait, "how long to wait, per bundle, for KoP to serve the persisted offsets")
}

// Validate checks the values of the flags (a usage error, exit 2).
func (r *Flags) Validate() error {
	if r.MaxBundles < 1 {
		return cmdutil.FlagErrorf("--%s must be at least 1, got %d", cmp.Or(r.maxFlag, "max-bundles"), r.MaxBundles)
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
