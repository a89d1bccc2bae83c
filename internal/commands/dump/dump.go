// Package dump implements `kop-offsets dump`: stream-decode KoP's offsets topic of one or
// more clusters with non-durable readers.
package dump

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/kop-offsets/kop-offsets/internal/commands/adminutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/recordio"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/offsets"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// DefaultConcurrency is the default number of partitions read at once per cluster.
const DefaultConcurrency = 4

// NewReaderFunc opens the offsets topic of a cluster for reading; release frees it.
type NewReaderFunc func(cl config.Cluster, ro pulsarx.ReaderOptions) (r offsets.OffsetTopicReader, release func(), err error)

// AllReader is implemented by readers that read several partitions at once themselves
// (pulsarx.Reader); others are read one partition after the other.
type AllReader interface {
	ReadAll(ctx context.Context, partitions []int32, concurrency int, fn func(offsets.Message) error) error
}

// Follower is implemented by readers that can follow partitions (pulsarx.Reader).
type Follower interface {
	FollowAll(ctx context.Context, partitions []int32, fn func(offsets.Message) error) error
}

// Options of `dump`.
type Options struct {
	IO        *iostreams.IOStreams
	Format    output.Format
	Clusters  func() ([]config.Cluster, error)
	NewReader NewReaderFunc

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

	groupRE []*regexp.Regexp
	kinds   map[offsets.Kind]bool
}

// Record is one record of a dump: the decoded record with where it was read.
type Record struct {
	Cluster          string       `json:"cluster"`
	OffsetsPartition int32        `json:"offsetsPartition"`
	MessageID        string       `json:"messageId,omitempty"`
	PublishTime      *output.Time `json:"publishTime,omitempty"`
	offsets.Record
	Key   []byte `json:"key,omitempty"`   // --raw: the message key, base64
	Value []byte `json:"value,omitempty"` // --raw: the message value, base64

	times *output.TimeCache // AppendJSON's formatted timestamps, shared by the records of a run
}

// NewCmdDump returns `dump`. runF replaces the run function in tests.
func NewCmdDump(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams, Clusters: f.Clusters, Concurrency: DefaultConcurrency}
	var from string
	cmd := &cobra.Command{
		Use:   "dump [flags]",
		Short: "Stream-decode the offsets topic of each cluster",
		Long: strings.TrimSpace(`
Read KoP's offsets topic (persistent://<tenant>/<metadataNamespace>/__consumer_offsets) of
each selected cluster (--cluster; default all) and write every record, decoded, to stdout as
it is read. Reads use non-durable readers (subscriptions named kop-offsets-reader-*): no
durable subscription is created, nothing is acknowledged for KoP, nothing is written.

Per cluster, the partition count comes from the admin API; the partitions are read with at
most --concurrency readers at once, each from its earliest message (or --from) to the last
message that existed when it started; --follow keeps reading new messages until interrupted.
With only --group names (no wildcards) and no --partition, only the partitions KoP keeps those
groups in are read (Java String.hashCode of the group, signSafeMod the cluster's partition
count).

Each record has the fields of the JSON contract (kind, group, topic, partition, offset, ...)
plus cluster, offsetsPartition, messageId ("ledger:entry:partition:batch") and publishTime;
--raw adds the message's base64 "key" and "value" (repeated on each record of a message with
several), which 'kop-offsets decode --input' reads back.

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
undecodable (always on a terminal).

Exit codes: 0 done; 1 --strict and some records were undecodable; 2 bad flags or config
(nothing contacted); 3 a cluster could not be read: its error is printed, the other clusters
are still dumped.`),
		Example: cmdutil.Examples(`
  # everything in the offsets topic of scus, one JSON object per line
  kop-offsets dump --cluster scus -o ndjson

  # the commits of group orders-consumer on every cluster (reads only its partition)
  kop-offsets dump --group orders-consumer --kind offset_commit -o table

  # what KoP would load for groups starting with "orders", on both clusters
  kop-offsets dump --compacted --group 'orders*'

  # commits for topic t1 in the last hour, then keep following
  kop-offsets dump --topic t1 --from 1h --follow

  # a raw dump of partitions 0 and 3, decoded again offline later
  kop-offsets dump --cluster wus --partition 0,3 --raw > wus.ndjson
  kop-offsets decode --input wus.ndjson`),
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.validate(from, time.Now()); err != nil {
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
			return dumpRun(cmd.Context(), opts)
		},
	}
	cmdutil.SetOutputFormats(cmd, output.StreamingSpec)
	fl := cmd.Flags()
	fl.IntSliceVar(&opts.Partitions, "partition", nil, "offsets-topic partitions to read, repeatable or comma-separated (default: all, or those of --group)")
	fl.StringArrayVar(&opts.Groups, "group", nil, "only records of this group, repeatable; a glob with * ? [...]")
	fl.StringArrayVar(&opts.Topics, "topic", nil, "only records of this topic (short, tenant/ns/topic or full name), repeatable")
	fl.StringSliceVar(&opts.Kinds, "kind", nil, "only records of this kind, repeatable or comma-separated: "+kindNames())
	fl.StringVar(&from, "from", "", "start at messages published at or after this time: RFC 3339 (2025-03-04T05:06:07Z) or a duration before now (1h, 30m)")
	fl.BoolVar(&opts.Follow, "follow", false, "keep reading new messages until interrupted")
	fl.BoolVar(&opts.Compacted, "compacted", false, "replay as KoP's loader does and print only the live state")
	fl.IntVar(&opts.Limit, "limit", 0, "stop after this many records in all (0: no limit)")
	fl.BoolVar(&opts.Raw, "raw", false, "add the message's base64 key and value to each record")
	fl.BoolVar(&opts.Strict, "strict", false, "exit 1 when a record is undecodable")
	fl.IntVar(&opts.Concurrency, "concurrency", DefaultConcurrency, "partitions read at once per cluster")
	_ = cmd.RegisterFlagCompletionFunc("kind", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return strings.Split(kindNames(), ", "), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

func kindNames() string {
	s := make([]string, len(offsets.Kinds))
	for i, k := range offsets.Kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// validate checks the flags and prepares the filters (exit 2 on failure).
func (o *Options) validate(from string, now time.Time) error {
	for _, p := range o.Partitions {
		if p < 0 {
			return cmdutil.FlagErrorf("--partition %d: must not be negative", p)
		}
	}
	if o.Concurrency < 1 {
		return cmdutil.FlagErrorf("--concurrency must be at least 1, got %d", o.Concurrency)
	}
	if o.Limit < 0 {
		return cmdutil.FlagErrorf("--limit must not be negative, got %d", o.Limit)
	}
	if err := cmdutil.MutuallyExclusive("--follow cannot be combined with --compacted (the live state needs the end of the topic)", o.Follow, o.Compacted); err != nil {
		return err
	}
	if from != "" {
		t, err := ParseFrom(from, now)
		if err != nil {
			return cmdutil.FlagErrorf("--from: %v", err)
		}
		o.From = t
	}
	o.kinds = nil
	for _, k := range o.Kinds {
		k = strings.ToLower(strings.TrimSpace(k))
		if !slices.Contains(offsets.Kinds, offsets.Kind(k)) {
			return cmdutil.FlagErrorf("--kind %q: valid kinds are %s", k, kindNames())
		}
		if o.kinds == nil {
			o.kinds = map[offsets.Kind]bool{}
		}
		o.kinds[offsets.Kind(k)] = true
	}
	o.groupRE = nil
	for _, g := range o.Groups {
		re, err := globRE(g)
		if err != nil {
			return cmdutil.FlagErrorf("--group %q: %v", g, err)
		}
		o.groupRE = append(o.groupRE, re)
	}
	return nil
}

// ParseFrom parses --from: an RFC 3339 time, or a positive duration before now.
func ParseFrom(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time nor a duration", s)
	}
	if d <= 0 {
		return time.Time{}, fmt.Errorf("duration %s must be positive (it counts back from now)", s)
	}
	return now.Add(-d), nil
}

// globRE compiles a glob (* any run, ? one character, [...] a class, [!...] its negation)
// into an anchored regexp. Unlike path.Match, * also matches "/".
func globRE(g string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString(`^`)
	for i := 0; i < len(g); i++ {
		switch c := g[i]; c {
		case '*':
			b.WriteString(`.*`)
		case '?':
			b.WriteString(`.`)
		case '[':
			j := strings.IndexByte(g[i+1:], ']')
			if j < 0 {
				return nil, errors.New("unterminated [")
			}
			class := g[i+1 : i+1+j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += j + 1
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString(`$`)
	return regexp.Compile(b.String())
}

func isGlob(g string) bool { return strings.ContainsAny(g, "*?[") }

// readPartitions returns the partitions to read on a cluster with n partitions.
func (o *Options) readPartitions(cluster string, n int32) ([]int32, error) {
	var out []int32
	switch {
	case len(o.Partitions) > 0:
		for _, p := range o.Partitions {
			if int32(p) >= n {
				return nil, cmdutil.UsageErrorf("cluster %s: --partition %d: the offsets topic has %d partitions (0..%d)", cluster, p, n, n-1)
			}
			out = append(out, int32(p))
		}
	case len(o.Groups) > 0 && !slices.ContainsFunc(o.Groups, isGlob):
		for _, g := range o.Groups {
			out = append(out, offsets.PartitionFor(g, n))
		}
	default:
		for p := range n {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// keep reports whether the filters select rec.
func (o *Options) keep(rec *offsets.Record, kafkaNS string) bool {
	if o.kinds != nil && !o.kinds[rec.Kind] {
		return false
	}
	if rec.Kind == offsets.KindUndecodable {
		return true
	}
	if len(o.groupRE) > 0 && !slices.ContainsFunc(o.groupRE, func(re *regexp.Regexp) bool { return re.MatchString(rec.Group) }) {
		return false
	}
	if len(o.Topics) > 0 {
		if rec.Topic == "" {
			return false
		}
		t := offsets.NormalizeTopic(rec.Topic, kafkaNS)
		if !slices.ContainsFunc(o.Topics, func(s string) bool { return offsets.NormalizeTopic(s, kafkaNS) == t }) {
			return false
		}
	}
	return true
}

// factoryReader opens a pulsarx.Reader with the Factory's clients.
func factoryReader(f *cmdutil.Factory) NewReaderFunc {
	return func(cl config.Cluster, ro pulsarx.ReaderOptions) (offsets.OffsetTopicReader, func(), error) {
		admin, err := adminutil.NewAdmin(cl, f.Flags.Timeout)
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

// errLimit stops the reads once --limit records were written.
var errLimit = errors.New("limit reached")

// Columns of the table.
var Columns = append([]recordio.Column{{Header: "CLUSTER"}, {Header: "PART"}, {Header: "MESSAGE-ID"}},
	recordio.RecordColumns...)

func row(v any) []string {
	r := v.(*Record)
	return append([]string{r.Cluster, strconv.Itoa(int(r.OffsetsPartition)), dash(r.MessageID)}, recordio.RecordCells(&r.Record)...)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// dumper is the state of one run, shared by the clusters.
type dumper struct {
	opts *Options
	sink *recordio.Sink

	out         *bufio.Writer // under sink
	mu          sync.Mutex    // also guards times: the sink writes under it (emit)
	times       output.TimeCache
	written     int
	undecodable int64
}

// flush writes what the buffer holds, and with sink also the rows a terminal table holds
// back.
func (d *dumper) flush(sink bool) error {
	d.mu.Lock() // every write to the sink is under d.mu
	defer d.mu.Unlock()
	if sink {
		if err := d.sink.Flush(); err != nil {
			return err
		}
	}
	return d.out.Flush()
}

// emit writes rec unless --limit is reached; it returns errLimit once it is.
func (d *dumper) emit(rec *Record) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.opts.Limit > 0 && d.written >= d.opts.Limit {
		return errLimit
	}
	if err := d.sink.Write(rec); err != nil {
		return err
	}
	d.written++
	if d.opts.Limit > 0 && d.written >= d.opts.Limit {
		return errLimit
	}
	return nil
}

func dumpRun(ctx context.Context, opts *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	clusters, err := opts.Clusters()
	if err != nil {
		return err
	}
	if opts.Compacted {
		restoreGC := cmdutil.CompactGC(cmdutil.GCReplay)
		defer restoreGC()
	}
	ro := pulsarx.ReaderOptions{From: opts.From, Compacted: opts.Compacted}
	readers := make([]offsets.OffsetTopicReader, len(clusters))
	// The readers stay open until dumpRun returns; they are released in reverse order.
	var releases []func()
	defer func() {
		for i := len(releases) - 1; i >= 0; i-- {
			releases[i]()
		}
	}()
	for i, cl := range clusters {
		r, release, err := opts.NewReader(cl, ro)
		if err != nil {
			return err
		}
		if release != nil {
			releases = append(releases, release)
		}
		readers[i] = r
	}

	// Records are written through a buffer (one write per 64 KiB, not per record); --follow
	// and a terminal flush it after each message.
	out := bufio.NewWriterSize(opts.IO.Out, 64<<10)
	d := &dumper{opts: opts, out: out, sink: recordio.NewSink(out, opts.Format, opts.IO.IsStdoutTTY(), Columns, row)}
	results := make([]clusterResult, len(clusters))
	if opts.Follow {
		var wg sync.WaitGroup
		fctx, cancel := context.WithCancel(ctx)
		defer cancel()
		for i, cl := range clusters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = d.cluster(fctx, cl, readers[i])
				if errors.Is(results[i].err, errLimit) {
					cancel()
				}
			}()
		}
		wg.Wait()
	} else {
		for i, cl := range clusters {
			results[i] = d.cluster(ctx, cl, readers[i])
			if errors.Is(results[i].err, errLimit) {
				break
			}
		}
	}
	if err := d.sink.Close(); err != nil {
		return err
	}
	if err := out.Flush(); err != nil {
		return err
	}

	var failed []string
	for i, r := range results {
		if r.err != nil && !errors.Is(r.err, errLimit) {
			var ee *cmdutil.ExitError
			if errors.As(r.err, &ee) && ee.Outcome == outcome.Usage {
				return r.err
			}
			failed = append(failed, clusters[i].Name)
		}
		if r.started && (d.undecodable > 0 || r.undelivered > 0 || opts.IO.IsStderrTTY()) {
			fmt.Fprintf(opts.IO.ErrOut, "%s: %s\n", clusters[i].Name, r.summary())
		}
	}
	if len(failed) > 0 {
		return cmdutil.UnreachableError(fmt.Errorf("could not read the offsets topic of %d of %d clusters: %s",
			len(failed), len(clusters), strings.Join(failed, ", ")))
	}
	if opts.Strict && d.undecodable > 0 {
		return cmdutil.DriftError(fmt.Errorf("--strict: %d undecodable records", d.undecodable))
	}
	return nil
}

type clusterResult struct {
	started     bool
	partitions  int
	sum         recordio.Summary // records written, by kind; Messages: messages read
	undecodable int64            // undecodable records read, written or not
	undelivered int64            // entries the reader never received (see pulsarx.Reader.Undelivered)
	err         error
}

func (r clusterResult) summary() string {
	s := fmt.Sprintf("read %d messages of %d partitions, wrote %d records", r.sum.Messages, r.partitions, r.sum.Records())
	var parts []string
	for _, k := range offsets.Kinds {
		if c := r.sum.ByKind[k]; c > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c, k))
		}
	}
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	if shown := r.sum.Undecodable(); r.undecodable > shown {
		s += fmt.Sprintf("; %d undecodable records read", r.undecodable)
	}
	if r.undelivered > 0 {
		s += fmt.Sprintf("; %d entries not delivered to the reader (Pulsar marker entries such as KoP's transaction markers, or empty placeholders that the Go client discards): not shown", r.undelivered)
	}
	return s
}

// cluster dumps one cluster. Errors are printed here, as they happen, naming the cluster.
func (d *dumper) cluster(ctx context.Context, cl config.Cluster, r offsets.OffsetTopicReader) (res clusterResult) {
	opts := d.opts
	defer func() {
		if res.err != nil && !errors.Is(res.err, errLimit) {
			var ee *cmdutil.ExitError
			if !errors.As(res.err, &ee) || ee.Outcome != outcome.Usage {
				fmt.Fprintf(opts.IO.ErrOut, "error: cluster %s: %v\n", cl.Name, pulsarx.TrimCluster(res.err, cl.Name))
			}
		}
	}()
	n, err := r.Partitions(ctx)
	if err != nil {
		res.err = err
		return res
	}
	parts, err := opts.readPartitions(cl.Name, n)
	if err != nil {
		res.err = err
		return res
	}
	res.started, res.partitions = true, len(parts)

	var progress *iostreams.Progress
	if !opts.Follow && (!opts.IO.IsStdoutTTY() || opts.Compacted) {
		progress = opts.IO.StartProgress(fmt.Sprintf("%s: reading %d partitions, messages:", cl.Name, len(parts)))
		defer progress.Stop()
	}

	var state *liveState
	if opts.Compacted {
		state = newLiveState(opts.Raw)
	}
	// fn is called serialized (ReadAll, FollowAll, or the sequential loop).
	fn := func(m offsets.Message) error {
		res.sum.Messages++
		if progress != nil {
			progress.Add(1)
		}
		var recs []offsets.Record
		if state != nil {
			recs = state.apply(m) // the undecodable records only: the rest is printed at the end
		} else {
			recs, _ = offsets.Decode(m.Key, m.Value)
		}
		for i := range recs {
			rec := &recs[i]
			if rec.Kind == offsets.KindUndecodable {
				res.undecodable++
				d.mu.Lock()
				d.undecodable++
				d.mu.Unlock()
			}
			if !opts.keep(rec, cl.KafkaNamespace) {
				continue
			}
			if err := d.emit(d.record(cl.Name, m, rec)); err != nil {
				if !errors.Is(err, errLimit) {
					return err
				}
				res.sum.Add(rec.Kind)
				return err
			}
			res.sum.Add(rec.Kind)
		}
		if opts.Follow {
			return d.flush(true)
		}
		if opts.IO.IsStdoutTTY() {
			return d.flush(false) // a terminal sees records as they are read
		}
		return nil
	}

	switch {
	case opts.Follow:
		fr, ok := r.(Follower)
		if !ok {
			res.err = fmt.Errorf("this reader cannot follow")
			return res
		}
		res.err = fr.FollowAll(ctx, parts, fn)
		if ctx.Err() != nil && errors.Is(res.err, ctx.Err()) {
			res.err = nil // interrupted, or another cluster reached --limit: the normal end
		}
	default:
		res.err = readAll(ctx, r, parts, opts.Concurrency, fn)
	}
	if u, ok := r.(interface{ Undelivered() int64 }); ok {
		res.undelivered = u.Undelivered()
	}
	if progress != nil {
		progress.Stop()
	}
	if res.err == nil && state != nil {
		res.err = d.writeLive(state, cl, &res.sum)
	}
	return res
}

// writeLive writes the live state of --compacted, counting what it writes in sum.
func (d *dumper) writeLive(state *liveState, cl config.Cluster, sum *recordio.Summary) error {
	var out Record // reused: the sink writes each record before the next
	return state.emit(func(m offsets.Message, rec *offsets.Record) error {
		if !d.opts.keep(rec, cl.KafkaNamespace) {
			return nil
		}
		d.recordInto(&out, cl.Name, m, rec)
		if err := d.emit(&out); err != nil {
			if errors.Is(err, errLimit) {
				sum.Add(rec.Kind)
			}
			return err
		}
		sum.Add(rec.Kind)
		return nil
	})
}

func (d *dumper) record(cluster string, m offsets.Message, rec *offsets.Record) *Record {
	out := new(Record)
	d.recordInto(out, cluster, m, rec)
	return out
}

func (d *dumper) recordInto(out *Record, cluster string, m offsets.Message, rec *offsets.Record) {
	*out = Record{Cluster: cluster, OffsetsPartition: m.Partition, MessageID: m.MessageID,
		PublishTime: output.NewTime(m.PublishTime), Record: *rec, times: &d.times}
	if d.opts.Raw {
		out.Key, out.Value = m.Key, m.Value
	}
}

func readAll(ctx context.Context, r offsets.OffsetTopicReader, parts []int32, concurrency int, fn func(offsets.Message) error) error {
	if ra, ok := r.(AllReader); ok {
		return ra.ReadAll(ctx, parts, concurrency, fn)
	}
	for _, p := range parts {
		if err := r.ReadPartition(ctx, p, fn); err != nil {
			return err
		}
	}
	return nil
}
