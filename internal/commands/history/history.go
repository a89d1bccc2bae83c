// Package history implements `kop-offsets history`: read the audit trail of the writes
// kop-offsets sent (bundle unloads, lookups, failover's commits) back, filtered.
package history

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kop-offsets/kop-offsets/internal/audit"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/output"
)

// Options of `history`.
type Options struct {
	IO     *iostreams.IOStreams
	Format output.Format
	// Open opens the trail (os.Open; tests replace it).
	Open func(name string) (fs.File, error)
	Now  func() time.Time

	File string
	// Named: --audit-file was given. A trail the operator named that does not exist is an error;
	// the default one not there yet only means nothing was written with it.
	Named    bool
	Clusters []string
	Tenants  []string // --tenant: the records of these tenants' metadata namespaces
	Groups   []string
	Since    string
}

// Document is what `history -o json` prints.
type Document struct {
	SchemaVersion int            `json:"schemaVersion"`
	File          string         `json:"file"`
	Records       []audit.Record `json:"records"`
}

// NewCmdHistory returns `history`. runF replaces the run function in tests.
func NewCmdHistory(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams, Open: func(n string) (fs.File, error) { return os.Open(n) }, Now: time.Now}
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Show the audit trail: every unload, lookup and commit kop-offsets sent",
		Long: strings.TrimSpace(`
Read back the audit trail that reload, repair, failover and watch --repair append to
(--audit-file, here as there; default $KOP_OFFSETS_AUDIT_FILE, else
$XDG_STATE_HOME/kop-offsets/audit.jsonl, else ~/.local/state/kop-offsets/audit.jsonl).
Each record is one write, recorded when it returned: who sent it (host, user, pid, command
line), when, on which cluster, what (unload of a bundle, lookup of an offsets partition,
commit of offsets), why (the command's reason and the groups of the bundle in its plan),
and the result (ok, or the error), with the broker a lookup answered.

Filters: --cluster (the global flag; no config file is needed), --group (name or glob,
matched against the groups a record reloads or commits), --since (a duration back from
now, or an RFC 3339 time). Records are shown in the order they were written.

It reads files only; the copy those commands publish with --audit-topic is read with any
Pulsar consumer (docs/watch.md, "The audit trail").

Used for: who unloaded this bundle, and why; what did last night's cron repair do.
Required permission: read access to the file; nothing is contacted.
Output: a table, or -o json|yaml (schemaVersion 1) with every field of each record.`),
		Example: cmdutil.Examples(`
  kop-offsets history --since 24h
  kop-offsets history --cluster wus --group 'orders-*' -o json
  kop-offsets history --tenant acme --since 24h
  kop-offsets history --audit-file /var/log/kop-offsets/audit.jsonl --since 2026-12-01T00:00:00Z`),
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if opts.Format, err = f.OutputFormat(output.StandardSpec); err != nil {
				return err
			}
			if _, err := cmdutil.ParseSince(opts.Since, time.Now()); err != nil {
				return err
			}
			opts.Clusters = splitNames(f.Flags.Clusters)
			opts.Tenants = f.Flags.Tenants
			opts.Named = cmd.Flags().Changed("audit-file")
			if runF != nil {
				return runF(opts)
			}
			return historyRun(opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.File, "audit-file", audit.DefaultFile(os.Getenv), "the audit trail to read: the file reload, repair, failover, watch and sync setup append to")
	fl.Lookup("audit-file").DefValue = audit.DefaultFileHelp
	cmdutil.Renamed(fl, f.IOStreams.ErrOut, "file", "audit-file")
	cmdutil.PatternsVar(fl, &opts.Groups, "group", "only records of these groups: name or glob, repeatable")
	fl.StringVar(&opts.Since, "since", "", cmdutil.SinceUsage)
	cmdutil.SetOutputFormats(cmd, output.StandardSpec)
	return cmd
}

func splitNames(in []string) []string {
	var out []string
	for _, n := range in {
		for _, p := range strings.Split(n, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

func historyRun(opts *Options) error {
	since, err := cmdutil.ParseSince(opts.Since, opts.Now())
	if err != nil {
		return err
	}
	fh, err := opts.Open(opts.File)
	if errors.Is(err, fs.ErrNotExist) {
		if opts.Named {
			return cmdutil.UsageError(fmt.Errorf("audit trail %s does not exist (--audit-file): nothing to show; without --audit-file the default trail is read", opts.File))
		}
		fmt.Fprintf(opts.IO.ErrOut, "no audit trail at %s: nothing was written with it yet\n", opts.File)
		return printDoc(opts, &Document{SchemaVersion: 1, File: opts.File, Records: []audit.Record{}})
	}
	if err != nil {
		return cmdutil.UsageError(fmt.Errorf("audit trail: %w", err))
	}
	defer func() { _ = fh.Close() }()
	recs, err := audit.Read(fh, audit.Filter{Clusters: opts.Clusters, Groups: opts.Groups, Tenants: opts.Tenants, Since: since})
	if err != nil {
		return cmdutil.UsageError(fmt.Errorf("audit trail %s: %w", opts.File, err))
	}
	if recs == nil {
		recs = []audit.Record{}
	}
	return printDoc(opts, &Document{SchemaVersion: 1, File: opts.File, Records: recs})
}

func printDoc(opts *Options, doc *Document) error {
	return output.Print(opts.IO, opts.Format, doc, func(tp *output.TablePrinter) {
		tp.AddHeader("TIME", "CLUSTER", "ACTION", "TARGET", "GROUPS", "RESULT", "WHO", "COMMAND")
		for _, r := range doc.Records {
			tp.AddRow(output.FormatTime(r.Time.Time), r.Cluster, r.Action, target(r), groups(r.Groups),
				result(r), fmt.Sprintf("%s@%s pid %d", r.Who.User, r.Who.Host, r.Who.PID), r.Who.Command)
		}
	})
}

func target(r audit.Record) string {
	switch {
	case r.Action == audit.ActionUnload:
		return r.Namespace + "/" + r.Bundle
	case r.Topic != "":
		return r.Topic
	case r.Action == audit.ActionDeleteGroup:
		return "the group and its offsets"
	case len(r.Offsets) > 0:
		// watch --sync's commits and deletes go through KoP: no topic of their own.
		o := r.Offsets[0]
		t := fmt.Sprintf("%s[%d]", o.Topic, o.Partition)
		if o.Offset >= 0 {
			t += fmt.Sprintf("=%d", o.Offset)
		}
		if len(r.Offsets) > 1 {
			t += fmt.Sprintf(" +%d", len(r.Offsets)-1)
		}
		return t
	}
	return r.Bundle
}

// groups shows at most three groups and how many more.
func groups(gs []string) string {
	if len(gs) <= 3 {
		return strings.Join(gs, ",")
	}
	return fmt.Sprintf("%s +%d", strings.Join(gs[:3], ","), len(gs)-3)
}

func result(r audit.Record) string {
	if r.Error != "" {
		return r.Result + ": " + r.Error
	}
	if r.Owner != "" {
		return r.Result + " (" + r.Owner + ")"
	}
	return r.Result
}
