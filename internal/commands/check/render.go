package check

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/shared"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/explain"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/promexport"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// reportWriter writes a check's rows as they come: the table (piped: row by row; on a
// terminal the columns need every row), the JSON document (row by row, the bytes of the
// whole document), YAML (the whole document at the end), and the Prometheus series.
type reportWriter struct {
	opts     *Options
	clusters []string
	tenants  []string // a multi-tenant report: a TENANT column, tenant labels
	rows     int
	hints    hints
	series   *promexport.Series // with --prometheus-file
	table    *output.TablePrinter
	json     *output.JSONStream
	held     []verdict.Row // YAML
}

func newReportWriter(opts *Options, clusters []string, scopes []config.Scope) (*reportWriter, error) {
	w := &reportWriter{opts: opts, clusters: clusters}
	if scopes[0].Named {
		w.tenants = config.ScopeNames(scopes)
	}
	if opts.PrometheusFile != "" {
		s, err := promexport.New(w.tenants != nil)
		if err != nil {
			return nil, cmdutil.UsageError(err)
		}
		w.series = s
	}
	switch opts.Format {
	case output.JSON:
		w.json = output.NewJSONStream(opts.IO.Out, "rows")
		if err := w.json.Begin(w.head()); err != nil {
			return nil, err
		}
	case output.Table, "":
		w.table = output.NewTablePrinter(opts.IO).StreamPiped()
		w.table.AddHeader(tableHeader(clusters, w.tenants != nil)...)
	}
	return w, nil
}

// head is the report as far as it is known before the rows: what precedes them in JSON.
func (w *reportWriter) head() *survey.Report {
	rep := &survey.Report{SchemaVersion: 1, Tenants: w.tenants, Clusters: w.clusters, Rows: []verdict.Row{}}
	if w.opts.Source != "" {
		rep.Source = &w.opts.Source
	}
	return rep
}

func (w *reportWriter) row(r *verdict.Row) error {
	w.rows++
	w.hints.add(r, w.clusters)
	if w.series != nil {
		w.series.AddRow(r)
	}
	switch {
	case w.json != nil:
		return w.json.Write(r)
	case w.table != nil:
		tableRow(w.table, r, w.clusters, w.opts.IO, !w.opts.PersistedOnly)
	default:
		w.held = append(w.held, *r)
	}
	return nil
}

func (w *reportWriter) finish(rep *survey.Report) error {
	switch {
	case w.json != nil:
		return w.json.End(rep)
	case w.table != nil:
		return w.table.Render()
	}
	rep.Rows = append(rep.Rows, w.held...)
	return output.Print(w.opts.IO, w.opts.Format, rep, nil)
}

// CellText renders a cell as "cached/persisted": "-" absent, "?" unknown (not asked or failed).
func CellText(c verdict.Cell, cachedAsked bool) string {
	cached := "?"
	switch {
	case c.Cached != nil:
		cached = fmt.Sprint(*c.Cached)
	case cachedAsked && c.Status != verdict.StatusError && c.Status != verdict.StatusCoordinatorUnavailable:
		cached = "-"
	}
	persisted := "-"
	switch {
	case c.Persisted != nil && c.Translated != nil && *c.Translated != *c.Persisted:
		// The number names another message here: show where the group really is.
		persisted = fmt.Sprintf("%d(=%d here)", *c.Persisted, *c.Translated)
	case c.Persisted != nil:
		persisted = fmt.Sprint(*c.Persisted)
	case strings.HasPrefix(c.Error, "offsets topic unreadable"):
		persisted = "?"
	}
	return cached + "/" + persisted
}

func tableHeader(clusters []string, tenants bool) []string {
	var header []string
	if tenants {
		header = append(header, "TENANT")
	}
	header = append(header, "GROUP", "TOPIC", "PARTITION", "OFFSETS-PARTITION")
	for _, c := range clusters {
		header = append(header, strings.ToUpper(c)+" CACHED/PERSISTED")
	}
	return append(header, "LAG", "STATUS")
}

func tableRow(tp *output.TablePrinter, r *verdict.Row, clusters []string, io *iostreams.IOStreams, cachedAsked bool) {
	if r.Tenant != "" {
		tp.AddField(r.Tenant)
	}
	tp.AddField(r.Group)
	tp.AddField(r.Topic)
	tp.AddField(strconv.Itoa(int(r.Partition)))
	tp.AddField(strconv.Itoa(int(r.OffsetsPartition)))
	var lags []string
	for _, c := range clusters {
		cell, ok := r.Lookup(c)
		if !ok && r.Tenant != "" {
			tp.AddField("n/a") // the tenant is not on this cluster
			continue
		}
		txt := CellText(cell, cachedAsked)
		if cell.Status != verdict.StatusOK {
			txt += " " + strings.ToUpper(string(cell.Status))
		}
		tp.AddField(txt)
		if cell.Lag != nil {
			lags = append(lags, fmt.Sprintf("%s:%d", c, *cell.Lag))
		}
	}
	lag := "-"
	if len(lags) > 0 {
		lag = strings.Join(lags, " ")
	}
	tp.AddField(lag)
	st := strings.ToUpper(string(r.Status))
	if tp.IsTTY() {
		st = io.ColorScheme().Status(st)
	}
	tp.AddField(st)
	tp.EndRow()
}

// writeFooter prints the summary line, the cluster errors and the hints.
func writeFooter(w io.Writer, rep *survey.Report, rows int, hints []string) {
	var parts []string
	for _, st := range verdict.Statuses {
		if n := rep.Summary[string(st)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, strings.ToUpper(string(st))))
		}
	}
	switch {
	case rep.AllUnread():
		parts = []string{"no cluster could be read (" + strings.Join(rep.Unread, ", ") + "): see the errors below"}
	case len(parts) == 0 && len(rep.Unread) > 0:
		parts = []string{"no offsets found on the clusters read; not read: " + strings.Join(rep.Unread, ", ")}
	case len(parts) == 0:
		parts = []string{"no offsets found"}
	case len(rep.Unread) > 0:
		parts = append(parts, "not read: "+strings.Join(rep.Unread, ", "))
	}
	noun := "rows"
	if rows == 1 {
		noun = "row"
	}
	fmt.Fprintf(w, "\n%d %s: %s (exit %d)\n", rows, noun, strings.Join(parts, ", "), rep.ExitCode)
	for _, e := range rep.Errors {
		fmt.Fprint(w, explain.Lines(e.Error, e.Fix))
	}
	for _, u := range rep.Unserved {
		owner := ""
		if u.Owner != "" {
			owner = "; bundle owner: " + u.Owner
		}
		fmt.Fprintf(w, "unserved: cluster %s: KoP does not serve offsets partition %d (it keeps answering %s%s): its groups can neither join nor commit; fix: %s\n",
			u.Cluster, u.OffsetsPartition, u.Answer, owner, u.Fix)
	}
	for _, wn := range rep.Warnings {
		fmt.Fprintf(w, "warning: %s\n", wn)
	}
	for _, h := range hints {
		fmt.Fprintf(w, "hint: %s\n", h)
	}
}

// hints are the next commands to run, per status found (at most 10).
type hints struct {
	list []string
	seen map[string]bool
}

func (h *hints) add(r *verdict.Row, clusters []string) {
	tf := shared.TenantFlag(r.Tenant)
	for _, c := range clusters {
		switch r.Cell(c).Status {
		case verdict.StatusStaleCache:
			h.addOne(fmt.Sprintf("kop-offsets reload%s --cluster %s --group %s   # KoP's cache on %s differs from its offsets topic", tf, c, r.Group, c))
		case verdict.StatusReplicationLag:
			h.addOne(fmt.Sprintf("replication toward %s is behind: run check again later, or kop-offsets doctor%s --cluster %s", c, tf, c))
		case verdict.StatusDiverged, verdict.StatusMissing:
			h.addOne(fmt.Sprintf("kop-offsets dump%s --cluster %s --group %s   # history of the group's commits on %s", tf, c, r.Group, c))
		case verdict.StatusCoordinatorUnavailable:
			h.addOne(fmt.Sprintf("kop-offsets locate %s%s --cluster %s   # who should own the group's offsets partition", r.Group, tf, c))
		case verdict.StatusMisaligned:
			h.addOne(fmt.Sprintf("the offsets of %s on %s do not denote the same records as on the other clusters: translate by timestamp before moving consumers", r.Group, c))
		case verdict.StatusAhead, verdict.StatusSyncLag:
			h.addOne(fmt.Sprintf("%s on %s does not follow the group's newest own commit (its cell's detail says by how much): is kop-offsets watch --sync (or --keep-translations) running%s? do not move consumers to %s before it follows", r.Group, c, tf, c))
		case verdict.StatusOverwritten:
			h.addOne(fmt.Sprintf("KoP on %s would load an older value of %s than its newest commit (a kept translation landed after it): kop-offsets watch%s --keep-translations writes it again; do not reload", c, r.Group, tf))
		}
	}
}

func (h *hints) addOne(s string) {
	if len(h.list) >= 10 || h.seen[s] {
		return
	}
	if h.seen == nil {
		h.seen = map[string]bool{}
	}
	h.seen[s] = true
	h.list = append(h.list, s)
}
