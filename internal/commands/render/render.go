// Package render prints a reload plan and what its execution did as text tables.
package render

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/reload"
)

// WritePlan writes plan as text tables in layout l (cut: see output.Layout): the bundles to
// unload, then every affected group with its activity per cluster.
func WritePlan(w io.Writer, l output.Layout, cs *iostreams.ColorScheme, plan *reload.Plan) error {
	fmt.Fprintf(w, "Reload plan for cluster %s: %d bundle(s) of %s, %d group(s) reloaded (%s, %d partitions)\n",
		plan.Cluster, len(plan.Bundles), plan.Namespace, len(plan.Groups), plan.OffsetsTopic, plan.OffsetsPartitions)
	if err := writePlanBundles(w, l, cs, plan); err != nil {
		return err
	}
	if len(plan.Groups) == 0 {
		fmt.Fprintln(w, "No group is persisted in these offsets partitions.")
		return nil
	}
	fmt.Fprintln(w)
	return writePlanGroups(w, l, cs, plan)
}

// writePlanBundles writes the table of the plan's bundles and what each one would do.
func writePlanBundles(w io.Writer, l output.Layout, cs *iostreams.ColorScheme, plan *reload.Plan) error {
	tp := output.NewTablePrinterTo(w, l)
	tp.AddHeader("BUNDLE", "OFFSETS PARTITIONS", "GROUPS", "ACTIVE", "ACTION")
	for _, b := range plan.Bundles {
		action := "unload + lookup"
		if b.Refused {
			action = "REFUSED: " + b.Reason
			if l.TTY {
				action = cs.Red(action)
			}
		}
		tp.AddRow(b.Range, joinInt32(b.OffsetsPartitions), strconv.Itoa(len(b.Groups)), activeCell(b.Active), action)
	}
	if err := tp.Render(); err != nil {
		return err
	}
	for _, b := range plan.Bundles {
		for _, f := range b.LoadFailures {
			fmt.Fprintf(w, "bundle %s: %s\n", b.Range, f)
		}
		for _, l := range b.Losses {
			fmt.Fprintf(w, "bundle %s would lose: %s\n", b.Range, l)
		}
		if live := liveHere(plan, b); len(live) > 0 && !b.Refused {
			fmt.Fprintf(w, "bundle %s: live on %s (reloaded: their members pause while KoP loads; their own commits are no loss; --refuse-live leaves the bundle alone): %s\n",
				b.Range, plan.Cluster, strings.Join(live, ", "))
		}
		if len(b.LiveElsewhere) > 0 {
			fmt.Fprintf(w, "bundle %s: live on another cluster only (not refused: no member here is touched; the cache here lags again as they commit; SERVED vs AFTER RELOAD shows by how much now): %s\n",
				b.Range, strings.Join(b.LiveElsewhere, ", "))
		}
	}
	return nil
}

// writePlanGroups writes the table of the affected groups, one activity column per cluster,
// then the first DescribeGroups error of each cluster.
func writePlanGroups(w io.Writer, l output.Layout, cs *iostreams.ColorScheme, plan *reload.Plan) error {
	tp := output.NewTablePrinterTo(w, l)
	hdr := []string{"GROUP", "OFFSETS PARTITION", "BUNDLE", "REQUESTED", "SERVED", "AFTER RELOAD"}
	for _, c := range plan.Clusters {
		hdr = append(hdr, strings.ToUpper(c))
	}
	tp.AddHeader(hdr...)
	errs := map[string]string{}
	for _, g := range plan.Groups {
		served := "-"
		if g.Served != nil {
			served = formatAnswer(g.Served)
		}
		row := []string{g.Group, strconv.Itoa(int(g.OffsetsPartition)), g.Bundle, yesNo(g.Requested), served, FormatOffsets(g.Persisted)}
		for _, c := range plan.Clusters {
			a := g.Activity[c]
			if _, seen := errs[c]; !seen && a.Error != "" && (a.Status != reload.ActivityLive || a.Members == nil) {
				errs[c] = a.Error
			}
			row = append(row, activityCell(l.TTY, cs, a))
		}
		tp.AddRow(row...)
	}
	if err := tp.Render(); err != nil {
		return err
	}
	for _, c := range slices.Sorted(maps.Keys(errs)) {
		fmt.Fprintf(w, "unknown on %s: KoP did not answer DescribeGroups: %s\n", c, errs[c])
	}
	return nil
}

// activityCell is a group's activity on one cluster, coloured on a terminal when it is
// live or unknown.
func activityCell(tty bool, cs *iostreams.ColorScheme, a reload.Activity) string {
	cell := a.Status
	if a.Status == reload.ActivityLive && a.Members != nil {
		cell = fmt.Sprintf("live (%d members)", *a.Members)
	}
	if tty {
		switch a.Status {
		case reload.ActivityLive, reload.ActivityUnknown:
			cell = cs.Yellow(cell)
		}
	}
	return cell
}

// WriteExecution writes what a reload did in layout l: per bundle, then per group before and
// after.
func WriteExecution(w io.Writer, l output.Layout, cs *iostreams.ColorScheme, ex *reload.Execution) error {
	fmt.Fprintln(w, "Reload result:")
	tp := output.NewTablePrinterTo(w, l)
	tp.AddHeader("BUNDLE", "STATUS", "UNLOADED", "LOADED", "OWNER", "DETAIL")
	for _, b := range ex.Bundles {
		st := b.Status
		if l.TTY {
			st = statusColor(cs, st)
		}
		tp.AddRow(b.Range, st, yesNo(b.Unloaded), yesNo(b.Loaded), output.Dash(b.Owner), output.Dash(bundleDetail(b)))
	}
	if err := tp.Render(); err != nil {
		return err
	}
	if len(ex.Groups) > 0 {
		fmt.Fprintln(w)
		tp = output.NewTablePrinterTo(w, l)
		tp.AddHeader("GROUP", "BUNDLE", "CACHED BEFORE", "PREDICTED", "CACHED AFTER", "STATUS")
		for _, g := range ex.Groups {
			st := g.Status
			if l.TTY {
				st = statusColor(cs, st)
			}
			tp.AddRow(g.Group, g.Bundle, formatAnswer(g.Before), FormatOffsets(g.Persisted), formatAnswer(g.After), st)
		}
		if err := tp.Render(); err != nil {
			return err
		}
	}
	return nil
}

// bundleDetail is b's error, after the parts unloaded in its place when b was split since
// the plan.
func bundleDetail(b reload.BundleResult) string {
	if len(b.SplitInto) == 0 {
		return b.Error
	}
	split := "split since the plan: unloaded " + strings.Join(b.SplitInto, ", ") + " in its place"
	if b.Error == "" {
		return split
	}
	return split + "; " + b.Error
}

// Summary is one line saying which bundles were unloaded and which were not.
func Summary(cluster string, ex *reload.Execution) string {
	u, n := "none", "none"
	if len(ex.Unloaded) > 0 {
		u = strings.Join(ex.Unloaded, ", ")
	}
	if len(ex.NotUnloaded) > 0 {
		n = strings.Join(ex.NotUnloaded, ", ")
	}
	return fmt.Sprintf("cluster %s: unloaded bundles: %s; not unloaded: %s", cluster, u, n)
}

func statusColor(cs *iostreams.ColorScheme, s string) string {
	switch s {
	case reload.BundleVerified, reload.GroupFresh:
		return cs.Green(s)
	case reload.BundleNotAttempted, reload.GroupNotReloaded, reload.BundleRefused:
		return cs.Gray(s)
	case reload.BundleCacheDiffers, reload.GroupCoordinatorUnavailable:
		return cs.Red(s)
	default:
		return cs.Yellow(s)
	}
}

// FormatOffsets formats offsets as "topic/partition=offset,...", "none" when empty.
func FormatOffsets(os []reload.TopicOffset) string {
	if len(os) == 0 {
		return "none"
	}
	parts := make([]string, len(os))
	for i, o := range os {
		parts[i] = fmt.Sprintf("%s/%d=%d", o.Topic, o.Partition, o.Offset)
	}
	return strings.Join(parts, ",")
}

func formatAnswer(a *reload.CacheAnswer) string {
	switch {
	case a == nil:
		return "-"
	case a.Error != "":
		return a.ErrorKind + ": " + a.Error
	}
	return FormatOffsets(a.Offsets)
}

func activeCell(active []string) string {
	if len(active) == 0 {
		return "none"
	}
	return strings.Join(active, ",")
}

func joinInt32(s []int32) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = strconv.Itoa(int(v))
	}
	return strings.Join(parts, ",")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// liveHere returns the groups of b with members on the cluster the plan writes to.
func liveHere(plan *reload.Plan, b reload.PlannedBundle) []string {
	var out []string
	for _, g := range plan.GroupsIn(b.Range) {
		if g.Here == reload.ActivityLive {
			out = append(out, g.Group)
		}
	}
	return out
}
