// Package locate implements `kop-offsets locate`: group -> offsets partition -> partition
// topic -> namespace bundle -> owner broker.
package locate

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/kop-offsets/kop-offsets/internal/commands/clients"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/explain"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/match"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// Admin is what locate asks a cluster; *Cluster (over pulsarx.Admin) implements it.
type Admin interface {
	// OffsetsTopicPartitions is the partition count of the offsets topic.
	OffsetsTopicPartitions(ctx context.Context, tenant, namespace string) (int32, error)
	// BundleForTopic computes the bundle from the namespace's bundles (no broker involved).
	BundleForTopic(ctx context.Context, topic string) (pulsarx.Bundle, error)
	// BrokerBundleForTopic is the broker's answer for the bundle (no ownership change).
	BrokerBundleForTopic(ctx context.Context, topic string) (pulsarx.Bundle, error)
	// BundleOwner is the broker owning the bundle now; ok is false when none does. It must
	// not make a broker take the bundle.
	BundleOwner(ctx context.Context, namespace, bundleRange string) (owner pulsarx.BundleOwner, ok bool, err error)
}

// Cluster adapts pulsarx.Admin and pulsarx.Owners to Admin.
type Cluster struct {
	*pulsarx.Admin
	Owners *pulsarx.Owners
}

// BundleOwner implements Admin.
func (c *Cluster) BundleOwner(ctx context.Context, namespace, bundleRange string) (pulsarx.BundleOwner, bool, error) {
	return c.Owners.Owner(ctx, namespace, bundleRange)
}

// FailedBrokers implements brokerFailures.
func (c *Cluster) FailedBrokers() []pulsarx.BrokerError { return c.Owners.FailedBrokers() }

// brokerFailures is optionally implemented by an Admin: the brokers whose ownership lists
// could not be read (their bundles' owners are unknown; the other rows are answered).
type brokerFailures interface {
	FailedBrokers() []pulsarx.BrokerError
}

// Options of `locate`.
type Options struct {
	IO       *iostreams.IOStreams
	Format   output.Format
	Groups   []string
	Offline  int32 // --partitions N: offline, no config
	Clusters func() ([]config.Cluster, error)
	Admin    func(config.Cluster) (Admin, error)
}

// Location is one row: a group on one cluster (or offline).
type Location struct {
	Group            string  `json:"group"`
	JavaHashCode     int32   `json:"javaHashCode"`
	Cluster          string  `json:"cluster,omitempty"`
	Partitions       *int32  `json:"partitions,omitempty"` // offsets-topic partition count
	OffsetsPartition *int32  `json:"offsetsPartition,omitempty"`
	PartitionTopic   string  `json:"partitionTopic,omitempty"`
	Bundle           string  `json:"bundle,omitempty"`         // the broker's answer when it gave one
	ComputedBundle   string  `json:"computedBundle,omitempty"` // from the namespace's bundles and CRC-32
	Owner            *string `json:"owner,omitempty"`          // broker id; absent: no broker owns the bundle now (or offline)
	OwnerActive      *bool   `json:"ownerActive,omitempty"`
	Error            string  `json:"error,omitempty"`
}

var locateLong = strings.TrimSpace(`
Show where KoP keeps each group's offsets: the offsets-topic partition (Java String.hashCode
of the group id, signSafeMod the partition count, exactly as KoP's GroupMetadataManager
does; NOT Kafka's abs(hash) % n, which differs for negative hash codes), its partition topic
(persistent://<tenant>/<metadataNamespace>/__consumer_offsets-partition-<n>), the namespace
bundle that holds it, and the broker that owns that bundle, whose KoP serves the group.

Offline (--partitions N): no config and no cluster; the topic uses the default tenant
"public" and namespace "__kafka".

Online (per selected cluster, --cluster; default all): reads the partition count of the
offsets topic from the admin API (clusters that differ are reported: the group then lives in
different partitions), computes the bundle from the namespace's bundle boundaries (CRC-32 of
the partition topic's name, as the broker does) and cross-checks it with the broker's answer
(GET /lookup/v2/topic/.../bundle, which does not assign anything). The owner comes from the
brokers' own ownership lists (GET /admin/v2/brokers/{cluster} and
.../{broker}/ownedNamespaces), NOT from a topic lookup or topic stats: those make a broker take
an unowned bundle, and for KoP that loads every offsets partition of the bundle. An owner of
null means no broker owns the bundle now; the next client or lookup of a topic in it will
assign it. Listing ownership needs super-user permission. Nothing is written.

With several brokers, one broker that cannot list its bundles (stopped, or its address does
not answer) does not fail the lookup: a bundle owned by a broker that answered is answered,
and a warning on stderr names each broker that did not answer, with its error. Only a row
whose bundle no answering broker owns is left without an owner: its error names the
brokers that did not answer (one of them may own it).`)

// NewCmdLocate returns `locate`. runF replaces the run function in tests.
func NewCmdLocate(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams, Clusters: f.Clusters}
	var partitions int
	var flagGroups []string
	cmd := &cobra.Command{
		Use:   "locate [GROUP...] [--group GROUP]...",
		Short: "Show where KoP keeps a group: offsets partition, topic, bundle, owner broker",
		Long:  locateLong,
		Example: cmdutil.Examples(`
  # offline: where KoP with 50 offsets partitions keeps two groups
  kop-offsets locate orders-consumer payments --partitions 50

  # online, on every configured cluster
  kop-offsets locate G
  kop-offsets locate --group orders-consumer --group payments

  # as JSON, for a script that unloads the bundle
  kop-offsets locate G --cluster scus -o json | jq -r '.locations[0].bundle'`),
		RunE: func(cmd *cobra.Command, args []string) error {
			// GROUP arguments and --group are the same names: locate hashes each one to its
			// offsets partition, so a glob is refused here as --group refuses it.
			opts.Groups = nil
			for _, g := range args {
				if err := match.Valid(g); err != nil {
					return cmdutil.FlagErrorf("group %q: %v", g, err)
				}
				name, err := cmdutil.OneName(g, locateNamesWhy)
				if err != nil {
					return cmdutil.FlagErrorf("group %q: %v", g, err)
				}
				opts.Groups = append(opts.Groups, name)
			}
			opts.Groups = append(opts.Groups, flagGroups...)
			if len(opts.Groups) == 0 {
				return cmdutil.FlagErrorf("give at least one group (GROUP or --group)")
			}
			if cmd.Flags().Changed("partitions") {
				if partitions < 1 || partitions > 1<<31-1 {
					return cmdutil.FlagErrorf("--partitions must be at least 1, got %d", partitions)
				}
				if len(f.Flags.Clusters) > 0 {
					return cmdutil.FlagErrorf("--partitions (offline) cannot be combined with --cluster")
				}
				opts.Offline = int32(partitions)
			}
			var err error
			if opts.Format, err = f.OutputFormat(output.StandardSpec); err != nil {
				return err
			}
			if opts.Admin == nil {
				opts.Admin = defaultAdmin(f.Flags.Timeout)
			}
			if runF != nil {
				return runF(opts)
			}
			return locateRun(cmd.Context(), opts)
		},
	}
	cmdutil.NamesVar(cmd.Flags(), &flagGroups, "group", "consumer group to locate (repeatable; the same as a GROUP argument)", locateNamesWhy)
	cmd.Flags().IntVar(&partitions, "partitions", 0, "offline: the offsets topic's partition count (no config, no cluster)")
	return cmd
}

// locateNamesWhy says why locate takes names only.
const locateNamesWhy = "locate hashes a group name to its one offsets partition (find names with: kop-offsets groups --group GLOB)"

// defaultAdmin asks the cluster's admin API through pulsarx.Admin.
func defaultAdmin(timeout time.Duration) func(config.Cluster) (Admin, error) {
	return func(cl config.Cluster) (Admin, error) {
		a, err := clients.NewAdmin(cl, timeout)
		if err != nil {
			return nil, err
		}
		return &Cluster{Admin: a, Owners: pulsarx.NewOwners(a, cl.Name)}, nil
	}
}

// Offline locates group in an offsets topic of n partitions in the default namespace.
func Offline(group string, n int32) Location {
	p := loader.PartitionFor(group, n)
	topic := pulsarx.PartitionTopic(pulsarx.OffsetsTopic(config.DefaultTenant, config.DefaultMetadataNamespace), p)
	return Location{Group: group, JavaHashCode: loader.JavaStringHashCode(group), Partitions: &n, OffsetsPartition: &p, PartitionTopic: topic}
}

func locateRun(ctx context.Context, opts *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	var rows []Location
	failed := false
	if opts.Offline > 0 {
		for _, g := range opts.Groups {
			rows = append(rows, Offline(g, opts.Offline))
		}
	} else {
		var err error
		if rows, failed, err = locateOnline(ctx, opts); err != nil {
			return err
		}
	}
	if err := printLocations(opts, rows); err != nil {
		return err
	}
	if failed {
		return cmdutil.SilentError(outcome.Unreachable)
	}
	return nil
}

// locateOnline asks every cluster's brokers where the groups live; failed is true when a
// row could not be answered.
func locateOnline(ctx context.Context, opts *Options) (rows []Location, failed bool, err error) {
	clusters, err := opts.Clusters()
	if err != nil {
		return nil, false, err
	}
	admins := make([]Admin, len(clusters))
	for i, cl := range clusters {
		if admins[i], err = opts.Admin(cl); err != nil {
			return nil, false, err
		}
	}
	perCluster := make([][]Location, len(clusters))
	var wg sync.WaitGroup
	for i, cl := range clusters {
		wg.Go(func() {
			perCluster[i] = locateCluster(ctx, cl, admins[i], opts.Groups)
		})
	}
	wg.Wait()
	for i, a := range admins {
		if bf, ok := a.(brokerFailures); ok {
			for _, b := range bf.FailedBrokers() {
				fmt.Fprintf(opts.IO.ErrOut, "warning: cluster %s: broker %s did not list its bundles (%s): rows were answered from the other brokers; a bundle none of them owns has no owner\n",
					clusters[i].Name, b.Broker, pulsarx.TrimCluster(b.Err, clusters[i].Name))
			}
		}
	}
	counts := map[int32][]string{}
	for i, locs := range perCluster {
		for _, l := range locs {
			if l.Error != "" {
				failed = true
			}
		}
		if len(locs) > 0 && locs[0].Partitions != nil {
			counts[*locs[0].Partitions] = append(counts[*locs[0].Partitions], clusters[i].Name)
		}
	}
	// Group-major order: each group on every cluster, side by side.
	for gi := range opts.Groups {
		for _, locs := range perCluster {
			rows = append(rows, locs[gi])
		}
	}
	if len(counts) > 1 {
		var parts []string
		for n, names := range counts {
			parts = append(parts, fmt.Sprintf("%s: %d", strings.Join(names, ","), n))
		}
		slices.Sort(parts)
		fmt.Fprintf(opts.IO.ErrOut, "warning: the clusters' offsets topics have different partition counts (%s): a group lives in different partitions on each\n",
			strings.Join(parts, "; "))
	}
	return rows, failed, nil
}

// Document is what -o json and -o yaml print: the rows, and each row's failure as an error
// object (one per cluster and cause: a cluster down fails every group alike).
type Document struct {
	SchemaVersion int               `json:"schemaVersion"`
	Locations     []Location        `json:"locations"`
	Errors        []explain.Problem `json:"errors"`
}

// document is rows as the json and yaml document.
func document(rows []Location) Document {
	doc := Document{SchemaVersion: 1, Locations: rows, Errors: []explain.Problem{}}
	if rows == nil {
		doc.Locations = []Location{}
	}
	seen := map[[2]string]bool{}
	for _, l := range rows {
		if l.Error == "" || seen[[2]string{l.Cluster, l.Error}] {
			continue
		}
		seen[[2]string{l.Cluster, l.Error}] = true
		cause, fix, _ := strings.Cut(l.Error, "; fix: ")
		doc.Errors = append(doc.Errors, explain.Problem{Cluster: l.Cluster, Cause: cause, Fix: fix, Error: "cluster " + l.Cluster + ": " + l.Error})
	}
	return doc
}

func printLocations(opts *Options, rows []Location) error {
	cs := opts.IO.ColorScheme()
	return output.Print(opts.IO, opts.Format, document(rows), func(tp *output.TablePrinter) {
		if opts.Offline > 0 {
			tp.AddHeader("GROUP", "JAVA-HASH", "PARTITION", "PARTITION-TOPIC")
		} else {
			tp.AddHeader("GROUP", "CLUSTER", "PARTITION", "PARTITION-TOPIC", "BUNDLE", "OWNER", "ERROR")
		}
		for _, l := range rows {
			if opts.Offline > 0 {
				tp.AddRow(l.Group, strconv.Itoa(int(l.JavaHashCode)), i32(l.OffsetsPartition), l.PartitionTopic)
				continue
			}
			owner := "-"
			if l.Owner != nil {
				owner = *l.Owner
				if l.OwnerActive != nil && !*l.OwnerActive {
					owner += " (inactive)"
				}
			} else if l.Error == "" {
				owner = "none (bundle not loaded)"
			}
			errCell := "-"
			if l.Error != "" {
				errCell = l.Error
				if tp.IsTTY() {
					errCell = cs.Red(errCell)
				}
			}
			tp.AddRow(l.Group, l.Cluster, i32(l.OffsetsPartition), output.Dash(l.PartitionTopic), output.Dash(l.Bundle), owner, errCell)
		}
	})
}

// locateCluster returns one row per group (in order) for cluster cl.
func locateCluster(ctx context.Context, cl config.Cluster, a Admin, groups []string) []Location {
	rows := make([]Location, len(groups))
	for i, g := range groups {
		rows[i] = Location{Group: g, JavaHashCode: loader.JavaStringHashCode(g), Cluster: cl.Name}
	}
	fail := func(err error) []Location {
		for i := range rows {
			if rows[i].Error == "" {
				rows[i].Error = pulsarx.TrimCluster(err, cl.Name)
			}
		}
		return rows
	}
	n, err := a.OffsetsTopicPartitions(ctx, cl.Tenant, cl.MetadataNamespace)
	if err != nil {
		// A cell of the row: the call and the next command (which names the cluster again)
		// would make it wider than a terminal; the cause and the fix fit.
		e := explain.New(cl.Name, explain.Admin, cl.AdminURL, err).For(cl)
		fix, _, _ := strings.Cut(e.Fix, "; then: ")
		return fail(fmt.Errorf("offsets topic: admin %s: %s; fix: %s", cl.AdminURL, e.Cause, fix))
	}
	for i := range rows {
		l := &rows[i]
		p := loader.PartitionFor(l.Group, n)
		l.Partitions, l.OffsetsPartition = &n, &p
		l.PartitionTopic = cl.OffsetsPartitionTopic(p)
		computed, err := a.BundleForTopic(ctx, l.PartitionTopic)
		if err != nil {
			l.Error = pulsarx.TrimCluster(err, cl.Name)
			continue
		}
		l.ComputedBundle, l.Bundle = computed.Range, computed.Range
		broker, err := a.BrokerBundleForTopic(ctx, l.PartitionTopic)
		switch {
		case err != nil:
			l.Error = "broker's bundle: " + pulsarx.TrimCluster(err, cl.Name)
		case broker.Range != computed.Range:
			l.Bundle = broker.Range
			l.Error = fmt.Sprintf("the broker places the topic in bundle %s, the computed bundle is %s", broker.Range, computed.Range)
		}
		owner, ok, err := a.BundleOwner(ctx, cl.MetadataNamespacePath(), l.Bundle)
		switch {
		case err != nil:
			l.Error = joinErr(l.Error, "owner: "+pulsarx.TrimCluster(err, cl.Name))
		case ok:
			l.Owner, l.OwnerActive = &owner.Broker, &owner.Active
		}
	}
	return rows
}

func joinErr(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func i32(p *int32) string {
	if p == nil {
		return "-"
	}
	return strconv.Itoa(int(*p))
}
