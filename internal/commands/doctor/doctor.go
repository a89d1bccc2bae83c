// Package doctor implements `kop-offsets doctor`: the wiring of internal/doctor's audit to
// the command line (flags, clients from the Factory, output, exit code).
package doctor

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kop-offsets/kop-offsets/internal/commands/clients"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/scope"
	"github.com/kop-offsets/kop-offsets/internal/commands/sources"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/doctor"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// Options of `doctor`.
type Options struct {
	IO       *iostreams.IOStreams
	Format   output.Format
	Clusters func() ([]config.Cluster, error)
	// Scopes are the clusters per tenant (nil: Clusters, one tenant): each tenant is audited
	// on its own clusters.
	Scopes func() ([]config.Scope, error)

	Topics           []string      // --topic
	Groups           []string      // --group
	OffsetsRetention time.Duration // --offsets-retention
	KafkaTimeout     time.Duration // --kafka-timeout
	Timeout          time.Duration // global --timeout, per admin request

	// Build turns a configured cluster into what the audit needs (its admin client).
	Build func(cl config.Cluster) (*doctor.Cluster, error)
	// Kafka probes the KoP listeners.
	Kafka doctor.KafkaProber
	// GroupTopics finds the topics of a group from the persisted offsets of a cluster.
	GroupTopics func(ctx context.Context, cl *doctor.Cluster, group string) ([]string, error)
	// ReplicatorSettle: see doctor.Options (0: its default).
	ReplicatorSettle time.Duration
	// GroupStates judges the groups of a tenant's clusters as check does (nil, or
	// --group-states=false: not judged).
	GroupStates func(ctx context.Context, cls []config.Cluster) (doctor.GroupStates, error)
	groupStates bool // --group-states
}

// Result is the document `doctor -o json|yaml` prints.
type Result struct {
	SchemaVersion int `json:"schemaVersion"`
	// Tenants are the tenants of a multi-tenant audit (each finding about one names it).
	Tenants     []string                `json:"tenants,omitempty"`
	Clusters    []doctor.ClusterReport  `json:"clusters"`
	Topics      []string                `json:"topics,omitempty"`
	Groups      []string                `json:"groups,omitempty"`
	Findings    []doctor.Finding        `json:"findings"`
	Summary     map[doctor.Severity]int `json:"summary"`
	Unreachable []string                `json:"unreachable,omitempty"`
	ExitCode    outcome.Outcome         `json:"exitCode"`
}

// doctorLong is the long help of the command.
const doctorLong = `
Audit, read-only, every selected cluster (--cluster; default all) and every pair of them for
what consumer offsets need to be the same on every cluster, and print each problem with its
evidence and the exact command that fixes it (pulsar-admin; pulsarctl in JSON/YAML too).

Checks (the check ids are stable, for scripts):
  admin-reachable                 the admin API answers (else the cluster is skipped: exit 3)
  broker-version                  Pulsar version and cluster name of each cluster (info);
                                  brokers of one cluster on different versions (warning)
  cluster-name                    the brokers' clusterName is the config's pulsarCluster (else
                                  its name): replication stats are keyed by Pulsar's names
                                  (error; check, watch and failover refuse the config)
  brokers                         every active broker (GET /admin/v2/brokers/{cluster}) is
                                  asked at its own web address (the id Pulsar lists, with the
                                  adminURL's scheme and auth; over https the broker's TLS
                                  address, which Pulsar names when it redirects a call for
                                  that broker); one that does not answer there is a warning
                                  (its settings were not compared)
  broker-kop                      KoP is loaded on every active broker (messagingProtocols)
  broker-settings                 the brokers of a cluster agree on clusterName,
                                  brokerEntryMetadataInterceptors and the retention, TTL and
                                  compaction defaults (the broker named is the odd one)
  kop-listener                    KoP answers ApiVersions and Metadata on kafkaBootstrap; every
                                  bootstrap address accepts connections; every KoP broker the
                                  Metadata answer advertises answers ApiVersions; KoP lists as
                                  many brokers as Pulsar has active ones
  peer-cluster-registered         every cluster knows every other one
  offsets-topic-exists            <tenant>/<metadataNamespace>/__consumer_offsets exists
  offsets-topic-partitions        ...with the same partition count everywhere (else a group
                                  lives in a different partition on each side)
  metadata-namespace-replication  <tenant>/<metadataNamespace> replicates to every cluster,
                                  on every cluster (both directions)
  tenant-allowed-clusters         the tenant allows every cluster, on every cluster
  offsets-replicator              per offsets partition: the replicator to each peer exists,
                                  is connected, and its backlog and delay
  deployment-model                (info) the offsets topic's own replication policy leaves a
                                  peer out: the sync deployment (kop-offsets sync setup);
                                  that peer's replicators are not checked
  offsets-retention, offsets-compaction, offsets-message-ttl
                                  the metadata namespace keeps commits at least as long as
                                  KoP's offsets retention (--offsets-retention), is
                                  compacted, and its TTL does not expire unreplicated commits
  offsets-expiry-replication      (info) KoP's offset-expiry tombstones replicate: a stale
                                  standby can delete the primary's newer offset
  topic-exists, topic-partitions, topic-namespace-replication, topic-offsets-alignment
                                  for --topic and the topics of --group: present everywhere
                                  with the same partition count, in a namespace replicated
                                  everywhere, and a warning that Kafka offsets are per-cluster
                                  numbers
  group-topics                    what --group found in the persisted offsets
  offsets-partition-loadable      --group: KoP can parse every record of the group's offsets
                                  partition (else it serves no group of it after a load)
  groups-follow                   per cluster, the groups (--group, else all) check finds in a
                                  sync or kept deployment ahead of the translation of their
                                  newest own commit (error: consumers moved there skip
                                  messages), overwritten or sync_lag (warnings); reads every
                                  offsets topic and, to translate, the groups' topics through
                                  KoP, as check does (--group-states=false skips it)

Nothing is written; reading a topic's stats loads it on its broker, as any stats call does.
--group reads the group's offsets partition with a non-durable reader.

Output: -o table (findings, errors first, each fix on its own line, then a summary line),
-o json or -o yaml ({schemaVersion: 1, clusters, findings[], summary, exitCode}).`

// NewCmdDoctor returns `doctor`. runF replaces the run function in tests.
func NewCmdDoctor(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams, Clusters: f.Clusters, Scopes: f.Scopes}
	cmd := &cobra.Command{
		Use:   "doctor [--topic TOPIC]... [--group GROUP]...",
		Short: "Audit what geo-replicated KoP offsets depend on, with the fix for each problem",
		Long:  strings.TrimSpace(doctorLong),
		Example: cmdutil.Examples(`
  # audit every configured cluster and every pair of them
  kop-offsets doctor

  # also the topics a group consumes (found in its persisted offsets) and one more topic
  kop-offsets doctor --group orders-consumer --topic topic-1

  # two clusters of the config, as JSON; list the fixes of the errors
  kop-offsets --cluster scus,wus doctor -o json | jq -r '.findings[] | select(.severity == "error") | .fix'

  # KoP keeps offsets 7 days on these brokers (offsetsRetentionMinutes=10080)
  kop-offsets doctor --offsets-retention 168h`),
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if opts.Format, err = f.OutputFormat(output.StandardSpec); err != nil {
				return err
			}
			if opts.OffsetsRetention <= 0 {
				return cmdutil.FlagErrorf("--offsets-retention must be positive, got %s", opts.OffsetsRetention)
			}
			if opts.KafkaTimeout <= 0 {
				return cmdutil.FlagErrorf("--kafka-timeout must be positive, got %s", opts.KafkaTimeout)
			}
			opts.Timeout = f.Flags.Timeout
			opts.Build = func(cl config.Cluster) (*doctor.Cluster, error) {
				dc, err := BuildCluster(cl, opts.Timeout)
				if cfg, cerr := f.Config(); err == nil && (cerr != nil || cfg.Path == "") {
					// Ad hoc (--admin-url): the name, a host:port, says nothing of Pulsar's.
					dc.PulsarName, dc.ConfigPulsarName = "", ""
				}
				return dc, err
			}
			opts.Kafka = &doctor.KgoProber{NewClient: func(dc doctor.Cluster, extra ...kgo.Opt) (*kgo.Client, error) {
				cl, err := configured(f, &dc)
				if err != nil {
					return nil, err
				}
				return f.KafkaClient(cl, extra...)
			}}
			opts.GroupTopics = PersistedGroupTopics(f)
			if opts.groupStates {
				opts.GroupStates = SurveyGroupStates(sources.FactoryConnect(f), opts.Groups)
			}
			if runF != nil {
				return runF(opts)
			}
			return doctorRun(cmd.Context(), opts)
		},
	}
	cmdutil.NamesVar(cmd.Flags(), &opts.Topics, "topic", "topic to audit on every cluster (repeatable): topic-1, tenant/ns/topic or persistent://tenant/ns/topic", "doctor audits each named topic")
	cmdutil.NamesVar(cmd.Flags(), &opts.Groups, "group", "consumer group whose topics (from its persisted offsets) are audited (repeatable)", "doctor reads the partition one name hashes to (list names with: kop-offsets groups)")
	cmd.Flags().DurationVar(&opts.OffsetsRetention, "offsets-retention", doctor.DefaultOffsetsRetention, "KoP's offsetsRetentionMinutes on the brokers, as a duration (KoP default 3 days)")
	cmd.Flags().DurationVar(&opts.KafkaTimeout, "kafka-timeout", 5*time.Second, "how long to wait for KoP's answer on each Kafka listener")
	cmd.Flags().BoolVar(&opts.groupStates, "group-states", true, "judge the groups' offsets as check does and count those ahead, overwritten or sync_lag (groups-follow); --group-states=false skips it")
	return cmd
}

// BuildCluster makes the audit's view of a configured cluster: a pulsarx.Admin with the
// cluster's auth and TLS, each call bounded by timeout.
func BuildCluster(cl config.Cluster, timeout time.Duration) (*doctor.Cluster, error) {
	a, err := clients.NewAdmin(cl, timeout)
	if err != nil {
		return nil, err
	}
	return &doctor.Cluster{
		Name: cl.Name, AdminURL: strings.TrimRight(cl.AdminURL, "/"), ServiceURL: cl.ServiceURL,
		Tenant: cl.Tenant, MetadataNamespace: cl.MetadataNamespace, KafkaNamespace: cl.KafkaNamespace,
		KafkaBootstrap: cl.KafkaBootstrap, FromFlags: cl.FromFlags, Admin: doctor.PulsarAdmin{Admin: a},
		PulsarName: cl.PulsarName(), ConfigPulsarName: cl.PulsarName(),
	}, nil
}

// configured is the configured cluster (the tenant's view of it) dc audits.
func configured(f *cmdutil.Factory, dc *doctor.Cluster) (config.Cluster, error) {
	scopes, err := f.Scopes()
	if err != nil {
		return config.Cluster{}, err
	}
	for _, sc := range scopes {
		for _, c := range sc.Clusters {
			if c.Name == dc.Name && c.Tenant == dc.Tenant {
				return c, nil
			}
		}
	}
	return config.Cluster{}, fmt.Errorf("cluster %s: not in the configuration", dc.Name)
}

// PersistedGroupTopics finds a group's topics by replaying its offsets partition on a
// cluster with a non-durable reader, as KoP's loader would.
func PersistedGroupTopics(f *cmdutil.Factory) func(ctx context.Context, cl *doctor.Cluster, group string) ([]string, error) {
	return func(ctx context.Context, dc *doctor.Cluster, group string) ([]string, error) {
		cl, err := configured(f, dc)
		if err != nil {
			return nil, err
		}
		pa, ok := dc.Admin.(doctor.PulsarAdmin)
		if !ok {
			return nil, fmt.Errorf("cluster %s: no Pulsar admin client", dc.Name)
		}
		n, err := pa.OffsetsTopicPartitions(ctx, dc.Tenant, dc.MetadataNamespace)
		if err != nil {
			return nil, err
		}
		client, err := f.PulsarClient(cl)
		if err != nil {
			return nil, err
		}
		defer client.Close()
		rd := pulsarx.NewReader(dc.Name, client, pa.Admin, dc.Tenant, dc.MetadataNamespace, pulsarx.LoaderView)
		po, err := loader.ReplayPartition(ctx, rd, loader.PartitionFor(group, n), loader.OrderingKoP)
		if err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		var topics []string
		for _, c := range po.GroupOffsets(group) {
			if !seen[c.Topic] {
				seen[c.Topic] = true
				topics = append(topics, c.Topic)
			}
		}
		if f, failed := po.LoadFailure(loader.PartitionFor(group, n)); failed {
			return topics, &doctor.UnloadableError{Failure: f}
		}
		return topics, nil
	}
}

// SurveyGroupStates judges the groups (globs; none: all) on a tenant's clusters as check
// does, from the offsets topics and the alignment of the groups' topics (KoP's cache is not
// asked), and returns per cluster the groups with a row ahead, overwritten or sync_lag.
func SurveyGroupStates(connect sources.ConnectFunc, groups []string) func(ctx context.Context, cls []config.Cluster) (doctor.GroupStates, error) {
	return func(ctx context.Context, cls []config.Cluster) (doctor.GroupStates, error) {
		sources, closeAll, err := sources.BuildSources(func() ([]config.Cluster, error) { return cls, nil }, connect, sources.SourceOptions{Copies: true})
		if err != nil {
			return nil, err
		}
		defer closeAll()
		states := doctor.GroupStates{}
		_, err = survey.Stream(ctx, sources, survey.Options{Groups: groups}, func(r *verdict.Row) error {
			for _, c := range r.Cells {
				if c.Status != verdict.StatusAhead && c.Status != verdict.StatusOverwritten && c.Status != verdict.StatusSyncLag {
					continue
				}
				if states[c.Cluster] == nil {
					states[c.Cluster] = map[verdict.Status][]string{}
				}
				// Rows come group by group: a group is added once per cluster and status.
				if gs := states[c.Cluster][c.Status]; len(gs) == 0 || gs[len(gs)-1] != r.Group {
					states[c.Cluster][c.Status] = append(gs, r.Group)
				}
			}
			return nil
		})
		return states, err
	}
}

// scopeStates is fn over one tenant's clusters (nil: none).
func scopeStates(fn func(context.Context, []config.Cluster) (doctor.GroupStates, error), cls []config.Cluster) func(context.Context) (doctor.GroupStates, error) {
	if fn == nil {
		return nil
	}
	return func(ctx context.Context) (doctor.GroupStates, error) { return fn(ctx, cls) }
}

func doctorRun(ctx context.Context, opts *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	scopes, err := scope.ScopesOf(opts.Scopes, opts.Clusters)
	if err != nil {
		return err
	}
	names := scope.ClusterNames(scopes)
	progress := opts.IO.StartProgress("auditing " + strings.Join(names, ", "))
	var reps []doctor.TenantReport
	for _, sc := range scopes {
		var dcs []*doctor.Cluster
		for _, cl := range sc.Clusters {
			dc, err := opts.Build(cl)
			if err != nil {
				progress.Stop()
				return cmdutil.ConfigError(err)
			}
			dcs = append(dcs, dc)
		}
		rep := doctor.Run(ctx, doctor.Options{
			Clusters: dcs, Topics: opts.Topics, Groups: opts.Groups, GroupTopics: opts.GroupTopics,
			Kafka: opts.Kafka, KafkaTimeout: opts.KafkaTimeout, OffsetsRetention: opts.OffsetsRetention,
			ReplicatorSettle: opts.ReplicatorSettle, GroupStates: scopeStates(opts.GroupStates, sc.Clusters),
		})
		reps = append(reps, doctor.TenantReport{Tenant: sc.Tenant, Clusters: dcs, Report: rep})
	}
	progress.Stop()
	rep := reps[0].Report
	var tenants []string
	if scopes[0].Named {
		// Each tenant audited on its own clusters; what is about the clusters, once.
		rep, tenants = doctor.MergeTenants(reps, names), config.ScopeNames(scopes)
	}
	res := Result{SchemaVersion: 1, Tenants: tenants, Clusters: rep.Clusters, Topics: rep.Topics, Groups: rep.Groups,
		Findings: rep.Findings, Summary: rep.Summary, Unreachable: rep.Unreachable}
	switch {
	case len(rep.Unreachable) > 0 || rep.APIErrors:
		res.ExitCode = outcome.Unreachable
	case rep.Errors() > 0:
		res.ExitCode = outcome.Found
	}
	if opts.Format == output.Table || opts.Format == "" {
		if err := writeTable(opts.IO.Out, output.StdoutLayout(opts.IO), opts.IO.ColorScheme(), &res); err != nil {
			return err
		}
		// The summary is for a person, on stderr as check's: stdout stays the findings alone.
		fmt.Fprintln(opts.IO.ErrOut, summary(&res))
	} else if err := output.Print(opts.IO, opts.Format, res, nil); err != nil {
		return err
	}
	return cmdutil.SilentError(res.ExitCode)
}

// writeTable prints the findings in layout l: on a terminal, for a person, severity,
// cluster(s), check and message on one aligned line and the fix on the next; piped, one
// tab-separated line per finding, the fix its last column (output.Layout's rule).
func writeTable(w io.Writer, l output.Layout, cs *iostreams.ColorScheme, res *Result) error {
	// A multi-tenant audit names the tenant before the cluster(s): acme/scus->wus.
	whereHeader := "CLUSTER"
	if res.Tenants != nil {
		whereHeader = "TENANT/CLUSTER"
	}
	where := func(f doctor.Finding) string {
		w := "all"
		switch {
		case f.Cluster != "" && f.Peer != "":
			w = f.Cluster + "->" + f.Peer
		case f.Cluster != "":
			w = f.Cluster
		}
		if f.Tenant != "" {
			w = f.Tenant + "/" + w
		}
		return w
	}
	if !l.TTY {
		tp := output.NewTablePrinterTo(w, l)
		tp.AddHeader("SEVERITY", whereHeader, "CHECK", "MESSAGE", "FIX")
		for _, f := range res.Findings {
			fix := f.Fix
			if fix == "" {
				fix = "-"
			}
			tp.AddRow(strings.ToUpper(string(f.Severity)), where(f), f.Check, f.Message, fix)
		}
		return tp.Render()
	}
	sevW, whereW, checkW := len("SEVERITY"), len(whereHeader), len("CHECK")
	for _, f := range res.Findings {
		sevW = max(sevW, len(f.Severity))
		whereW = max(whereW, len(where(f)))
		checkW = max(checkW, len(f.Check))
	}
	pad := func(s string, n int) string { return s + strings.Repeat(" ", n-len(s)+2) }
	var b strings.Builder
	if len(res.Findings) > 0 && !l.NoHeaders {
		fmt.Fprintf(&b, "%s%s%s%s\n", pad("SEVERITY", sevW), pad(whereHeader, whereW), pad("CHECK", checkW), "MESSAGE")
	}
	for _, f := range res.Findings {
		sev := strings.ToUpper(string(f.Severity))
		colored := sev
		switch f.Severity {
		case doctor.SeverityError:
			colored = cs.Red(sev)
		case doctor.SeverityWarning:
			colored = cs.Yellow(sev)
		case doctor.SeverityInfo:
			colored = cs.Gray(sev)
		}
		fmt.Fprintf(&b, "%s%s%s%s%s\n", colored, strings.Repeat(" ", sevW-len(sev)+2), pad(where(f), whereW), pad(f.Check, checkW), f.Message)
		if f.Fix != "" {
			fmt.Fprintf(&b, "%s  fix: %s\n", strings.Repeat(" ", sevW), f.Fix)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// summary is the line after the findings: how many of each severity, on which clusters.
func summary(res *Result) string {
	var b strings.Builder
	names := make([]string, 0, len(res.Clusters))
	for _, c := range res.Clusters {
		names = append(names, c.Name)
	}
	fmt.Fprintf(&b, "%s, %s, %d info on %s", plural(res.Summary[doctor.SeverityError], "error"),
		plural(res.Summary[doctor.SeverityWarning], "warning"), res.Summary[doctor.SeverityInfo], strings.Join(names, ", "))
	switch {
	case len(res.Unreachable) > 0 && len(res.Unreachable) == len(names):
		b.WriteString("; none reachable") // each named once
	case len(res.Unreachable) > 0:
		fmt.Fprintf(&b, "; unreachable: %s", strings.Join(res.Unreachable, ", "))
	}
	fmt.Fprintf(&b, " (exit %d)", res.ExitCode)
	return b.String()
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
