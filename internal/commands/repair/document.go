package repair

import (
	"fmt"
	"strings"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/explain"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/reload"
	"github.com/kop-offsets/kop-offsets/internal/repair"
	"github.com/kop-offsets/kop-offsets/internal/survey"
)

// Scope narrows what repair checks and reloads: --group and --topic globs, as in check.
type Scope struct {
	Groups []string
	Topics []string
}

// Document is what `repair -o json` prints.
type Document struct {
	SchemaVersion int  `json:"schemaVersion"`
	DryRun        bool `json:"dryRun"`
	// Tenants are the tenants of a multi-tenant run; every row then names its tenant.
	Tenants []string `json:"tenants,omitempty"`
	// Stale are the stale_cache rows the first check found on the clusters repair writes to.
	Stale []Row `json:"stale"`
	// Unserved are the offsets partitions KoP did not serve at the first check, on the
	// clusters repair writes to: their bundles are reloaded too.
	Unserved []Partition `json:"unserved"`
	// Left are the rows repair does not touch, with the reason.
	Left     []Row           `json:"left"`
	Clusters []ClusterRepair `json:"clusters"`
	After    *AfterCheck     `json:"after"`
	Summary  map[string]int  `json:"summary"`
	// Errors are what failed, each with the step it failed in (first check, second check).
	Errors []explain.Problem `json:"errors,omitempty"`
	// Unread are the clusters written to that the first check could not read at all: nothing
	// is known, so nothing is repaired there.
	Unread []string `json:"unread,omitempty"`
	// Unreachable are the first check's endpoint errors, explained (cluster, endpoint, url,
	// cause, fix).
	Unreachable []survey.ClusterError `json:"unreachable,omitempty"`
	// PeersUnread are the clusters repair does not write to that the first check could not
	// read at all (a region gone): asked once, not again by the plans or the second check.
	// Repairing the clusters written to does not need them (stale_cache and unserved are
	// judged on each cluster alone), so they alone do not make the run exit 3.
	PeersUnread []string        `json:"peersUnread,omitempty"`
	ExitCode    outcome.Outcome `json:"exitCode"`
}

// Row is one check row on one cluster.
type Row = repair.Row

// ClusterRepair is the reload of one cluster.
type ClusterRepair struct {
	Tenant    string            `json:"tenant,omitempty"`
	Cluster   string            `json:"cluster"`
	Groups    []string          `json:"groups"`
	Plan      *reload.Plan      `json:"plan"`
	Refusal   string            `json:"refusal,omitempty"`
	Execution *reload.Execution `json:"execution"`
	Error     string            `json:"error,omitempty"`
	ExitCode  outcome.Outcome   `json:"exitCode"`
}

// AfterCheck is the second check: the stale_cache rows, the unserved offsets partitions and
// the coordinator_unavailable rows that remain.
type AfterCheck = repair.Remaining

// Partition is an offsets partition of one cluster.
type Partition = repair.Partition

func newDocument(opts *Options) *Document {
	return &Document{SchemaVersion: 1, DryRun: opts.DryRun, Stale: []Row{},
		Unserved: []Partition{}, Left: []Row{}, Clusters: []ClusterRepair{}, Summary: map[string]int{}}
}

// merge adds o, the document of tenant's run, to d, naming the tenant in each of its rows.
func (d *Document) merge(tenant string, o *Document) {
	d.Tenants = append(d.Tenants, tenant)
	rows := func(rs []Row) []Row {
		for i := range rs {
			rs[i].Tenant = tenant
		}
		return rs
	}
	parts := func(ps []Partition) []Partition {
		for i := range ps {
			ps[i].Tenant = tenant
		}
		return ps
	}
	d.Stale = append(d.Stale, rows(o.Stale)...)
	d.Unserved = append(d.Unserved, parts(o.Unserved)...)
	d.Left = append(d.Left, rows(o.Left)...)
	for _, c := range o.Clusters {
		c.Tenant = tenant
		d.Clusters = append(d.Clusters, c)
	}
	first := len(d.Tenants) == 1
	switch {
	case o.After == nil || (!first && d.After == nil):
		// A dry run that planned reloads has no second check: neither has the whole run.
		d.After = nil
	default:
		if d.After == nil {
			d.After = &AfterCheck{Stale: []Row{}, Unserved: []Partition{}}
		}
		d.After.Stale = append(d.After.Stale, rows(o.After.Stale)...)
		d.After.Unserved = append(d.After.Unserved, parts(o.After.Unserved)...)
		d.After.Unavailable += o.After.Unavailable
	}
	for k, n := range o.Summary {
		d.Summary[k] += n
	}
	for _, e := range o.Errors {
		e.Tenant, e.Fix = tenant, explain.WithTenant(e.Fix, tenant)
		d.Errors = append(d.Errors, e)
	}
	for _, u := range o.Unread {
		d.Unread = append(d.Unread, tenant+"/"+u)
	}
	for _, u := range o.PeersUnread {
		d.PeersUnread = append(d.PeersUnread, tenant+"/"+u)
	}
	for _, e := range o.Unreachable {
		e.Tenant = tenant
		d.Unreachable = append(d.Unreachable, e)
	}
}

func finish(opts *Options, doc *Document, code outcome.Outcome) error {
	doc.ExitCode = code
	if opts.Format != output.Table {
		if err := output.Print(opts.IO, opts.Format, doc, nil); err != nil {
			return err
		}
		return cmdutil.SilentError(code)
	}
	w := opts.IO.Out
	layout := output.StdoutLayout(opts.IO).Cut(opts.ShowAll)
	if len(doc.Left) > 0 {
		fmt.Fprintln(w, "Left alone (repair only fixes stale_cache):")
		tp := output.NewTablePrinterTo(w, layout)
		tp.AddHeader(withTenant(doc, "TENANT", "CLUSTER", "GROUP", "TOPIC", "PARTITION", "STATUS", "WHY")...)
		for _, r := range doc.Left {
			tp.AddRow(withTenant(doc, r.Tenant, r.Cluster, r.Group, r.Topic, fmt.Sprint(r.Partition), strings.ToUpper(r.Status), r.Reason)...)
		}
		_ = tp.Render()
	}
	if doc.After != nil && (len(doc.Unserved) > 0 || len(doc.After.Unserved) > 0) {
		fmt.Fprintf(w, "unserved offsets partitions: %d before, %d after", len(doc.Unserved), len(doc.After.Unserved))
		for _, u := range doc.After.Unserved {
			fmt.Fprintf(w, "; %s%s/%d (%s)", tenantPrefix(u.Tenant), u.Cluster, u.OffsetsPartition, u.Answer)
		}
		fmt.Fprintln(w)
	}
	if doc.After != nil && doc.After.Unavailable > 0 {
		fmt.Fprintf(w, "coordinator_unavailable rows after: %d\n", doc.After.Unavailable)
	}
	if doc.After != nil {
		notRead := ""
		if len(doc.Unread) > 0 {
			notRead = " (not read: " + strings.Join(doc.Unread, ", ") + ")"
		}
		if len(doc.After.Stale) == 0 {
			fmt.Fprintf(w, "stale_cache rows: %d before, 0 after%s\n", len(doc.Stale), notRead)
		} else {
			fmt.Fprintf(w, "stale_cache rows: %d before, %d still stale:\n", len(doc.Stale), len(doc.After.Stale))
			tp := output.NewTablePrinterTo(w, layout)
			tp.AddHeader(withTenant(doc, "TENANT", "CLUSTER", "GROUP", "TOPIC", "PARTITION")...)
			for _, r := range doc.After.Stale {
				tp.AddRow(withTenant(doc, r.Tenant, r.Cluster, r.Group, r.Topic, fmt.Sprint(r.Partition))...)
			}
			_ = tp.Render()
		}
	}
	for _, e := range doc.Errors {
		line := e.Step + ": " + e.Error
		if e.Tenant != "" {
			line = "tenant " + e.Tenant + ": " + line
		}
		fmt.Fprint(opts.IO.ErrOut, explain.Lines(line, e.Fix))
	}
	return cmdutil.SilentError(code)
}

// withTenant puts first (the tenant of a row, or TENANT in a header) in a multi-tenant
// document's table rows.
func withTenant(doc *Document, first string, cells ...string) []string {
	if doc.Tenants == nil {
		return cells
	}
	return append([]string{first}, cells...)
}

func tenantPrefix(t string) string {
	if t == "" {
		return ""
	}
	return t + "/"
}
