// Package dump implements `kop-offsets dump`: stream-decode KoP's offsets topic of one or
// more clusters with non-durable readers.
package dump

import (
	"context"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kop-offsets/kop-offsets/internal/commands/clients"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/scope"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// DefaultConcurrency is the default number of partitions read at once per cluster.
const DefaultConcurrency = 4

// NewReaderFunc opens the offsets topic of a cluster for reading; release frees it.
type NewReaderFunc func(cl config.Cluster, ro pulsarx.ReaderOptions) (r loader.OffsetTopicReader, release func(), err error)

// AllReader is implemented by readers that read several partitions at once themselves
// (pulsarx.Reader); others are read one partition after the other.
type AllReader interface {
	ReadAll(ctx context.Context, partitions []int32, concurrency int, fn func(loader.Message) error) error
}

// Follower is implemented by readers that can follow partitions (pulsarx.Reader).
type Follower interface {
	FollowAll(ctx context.Context, partitions []int32, fn func(loader.Message) error) error
}

// Options of `dump`.
type Options struct {
	IO        *iostreams.IOStreams
	Format    output.Format
	Clusters  func() ([]config.Cluster, error)
	NewReader NewReaderFunc
	// NamedTenant is the tenant dumped in a multi-tenant config (--tenant), named in every
	// record; "" (or a nil func) for a config without tenants.
	NamedTenant func() (string, error)

	Partitions  []int    // --partition
	Groups      []string // --group (globs)
	Topics      []string // --topic
	Kinds       []string // --kind
	From        time.Time
	Follow      bool
	Compacted   bool
	Limit       int
	Raw         bool
	Strict      bool
	Concurrency int

	kinds map[offsetlog.Kind]bool
}

// Record is one record of a dump: the decoded record with where it was read.
type Record struct {
	Tenant           string       `json:"tenant,omitempty"` // a multi-tenant config's tenant
	Cluster          string       `json:"cluster"`
	OffsetsPartition int32        `json:"offsetsPartition"`
	MessageID        string       `json:"messageId,omitempty"`
	PublishTime      *output.Time `json:"publishTime,omitempty"`
	offsetlog.Record
	Key   []byte `json:"key,omitempty"`   // --raw: the message key, base64
	Value []byte `json:"value,omitempty"` // --raw: the message value, base64

	times *output.TimeCache // AppendJSON's formatted timestamps, shared by the records of a run
}

// NewCmdDump returns `dump`. runF replaces the run function in tests.
func NewCmdDump(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams, Clusters: f.Clusters, Concurrency: DefaultConcurrency}
	var since string
	cmd := &cobra.Command{
		Use:     "dump [flags]",
		Short:   "Stream-decode the offsets topic of each cluster",
		Long:    strings.TrimSpace(dumpLong),
		Example: cmdutil.Examples(dumpExample),
		Args:    cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.validate(since, time.Now()); err != nil {
				return err
			}
			var err error
			if opts.Format, err = f.OutputFormat(output.StreamingSpec); err != nil {
				return err
			}
			if opts.NewReader == nil {
				opts.NewReader = factoryReader(f)
			}
			if runF != nil {
				return runF(opts)
			}
			if opts.NamedTenant == nil {
				opts.NamedTenant = func() (string, error) { return scope.NamedTenant(f) }
			}
			return dumpRun(cmd.Context(), opts)
		},
	}
	cmdutil.SetOutputFormats(cmd, output.StreamingSpec)
	addFlags(cmd, opts, &since, f.IOStreams.ErrOut)
	return cmd
}

// factoryReader opens a pulsarx.Reader with the Factory's clients.
func factoryReader(f *cmdutil.Factory) NewReaderFunc {
	return func(cl config.Cluster, ro pulsarx.ReaderOptions) (loader.OffsetTopicReader, func(), error) {
		admin, err := clients.NewAdmin(cl, f.Flags.Timeout)
		if err != nil {
			return nil, nil, err
		}
		client, err := f.PulsarClient(cl)
		if err != nil {
			return nil, nil, err
		}
		return pulsarx.NewReader(cl.Name, client, admin, cl.Tenant, cl.MetadataNamespace, ro), client.Close, nil
	}
}

// addFlags binds dump's flags to opts; --since is kept as text until validate parses it.
func addFlags(cmd *cobra.Command, opts *Options, since *string, errOut io.Writer) {
	fl := cmd.Flags()
	fl.IntSliceVar(&opts.Partitions, "partition", nil, "offsets-topic partitions to read, repeatable or comma-separated (default: all, or those of --group)")
	cmdutil.PatternsVar(fl, &opts.Groups, "group", "only records of these groups: name or glob, repeatable")
	cmdutil.PatternsVar(fl, &opts.Topics, "topic", "only records of these topics: name or glob, short, tenant/ns/topic or full name, repeatable")
	fl.StringSliceVar(&opts.Kinds, "kind", nil, "only records of this kind, repeatable or comma-separated: "+kindNames())
	fl.StringVar(since, "since", "", cmdutil.SinceUsage)
	cmdutil.Renamed(fl, errOut, "from", "since")
	fl.BoolVar(&opts.Follow, "follow", false, "keep reading new messages until interrupted")
	fl.BoolVar(&opts.Compacted, "compacted", false, "replay as KoP's loader does and print only the live state")
	fl.IntVar(&opts.Limit, "limit", 0, "stop after this many records in all (0: no limit)")
	fl.BoolVar(&opts.Raw, "raw", false, "add the message's base64 key and value to each record")
	fl.BoolVar(&opts.Strict, "strict", false, "exit 1 when a record is undecodable")
	fl.IntVar(&opts.Concurrency, "concurrency", DefaultConcurrency, "partitions read at once per cluster")
	_ = cmd.RegisterFlagCompletionFunc("kind", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return strings.Split(kindNames(), ", "), cobra.ShellCompDirectiveNoFileComp
	})
}

// dumpLong is the long help of dump.
const dumpLong = `
Read KoP's offsets topic (persistent://<tenant>/<metadataNamespace>/__consumer_offsets) of
each selected cluster (--cluster; default all) and write every record, decoded, to stdout as
it is read. Reads use non-durable readers (subscriptions named kop-offsets-reader-*): no
durable subscription is created, nothing is acknowledged for KoP, nothing is written.

Per cluster, the partition count comes from the admin API; the partitions are read with at
most --concurrency readers at once, each from its earliest message (or --since) to the last
message that existed when it started; --follow keeps reading new messages until interrupted.
With only --group names (no wildcards) and no --partition, only the partitions KoP keeps those
groups in are read (Java String.hashCode of the group, signSafeMod the cluster's partition
count).

Each record has the fields of the JSON contract (kind, group, topic, partition, offset, ...)
plus cluster, offsetsPartition, messageId ("ledger:entry:partition:batch") and publishTime;
--raw adds the message's base64 "key" and "value" (repeated on each record of a message with
several), which 'kop-offsets decode --input' reads back. With a multi-tenant config, dump
reads the offsets topic of the one tenant --tenant selects, and every record names it
(tenant; a TENANT column).

Filters: --group (glob: * ? [...]), --topic (compared after normalising both names to KoP's
full name, so "t1", "public/default/t1" and "persistent://public/default/t1" match alike) and
--kind select records; undecodable records cannot be attributed to a group or topic and are
kept by --group and --topic (only --kind drops them). --limit stops after N records in all.

--compacted reads the compacted view, replays it as KoP's loader does (last value per key
wins, tombstones delete, transactional offsets apply on COMMIT only) and prints only the live
state: one group_metadata record per group with metadata and one offset_commit record per
live offset, each with the message that last wrote it. Undecodable records are printed as
they are met.

Output: -o ndjson (default when stdout is not a terminal), json, yaml or table; nothing is
buffered except the live state of --compacted. A progress spinner goes to stderr when it is a
terminal and stdout is not. A summary per cluster goes to stderr when records were
undecodable (always on a terminal).`

// dumpExample is the examples of dump.
const dumpExample = `
  # everything in the offsets topic of scus, one JSON object per line
  kop-offsets dump --cluster scus -o ndjson

  # the commits of group orders-consumer on every cluster (reads only its partition)
  kop-offsets dump --group orders-consumer --kind offset_commit -o table

  # what KoP would load for groups starting with "orders", on both clusters
  kop-offsets dump --compacted --group 'orders*'

  # commits for topic t1 in the last hour, then keep following
  kop-offsets dump --topic t1 --since 1h --follow

  # a raw dump of partitions 0 and 3, decoded again offline later
  kop-offsets dump --cluster wus --partition 0,3 --raw > wus.ndjson
  kop-offsets decode --input wus.ndjson`
