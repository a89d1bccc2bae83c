package dump

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/recordio"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/explain"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// errLimit stops the reads once --limit records were written.
var errLimit = errors.New("limit reached")

// Columns of the table.
var Columns = append([]recordio.Column{{Header: "CLUSTER"}, {Header: "PART"}, {Header: "MESSAGE-ID"}},
	recordio.RecordColumns...)

// tenantColumns are Columns for a dump of one tenant of a multi-tenant config.
var tenantColumns = append([]recordio.Column{{Header: "TENANT"}}, Columns...)

func row(v any) []string {
	r := v.(*Record)
	return append([]string{r.Cluster, strconv.Itoa(int(r.OffsetsPartition)), output.Dash(r.MessageID)}, recordio.RecordCells(&r.Record)...)
}

func tenantRow(v any) []string { return append([]string{v.(*Record).Tenant}, row(v)...) }

// dumper is the state of one run, shared by the clusters.
type dumper struct {
	opts   *Options
	tenant string // named in every record: the tenant of a multi-tenant config
	sink   *recordio.Sink

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
	var tenant string
	if opts.NamedTenant != nil {
		if tenant, err = opts.NamedTenant(); err != nil {
			return err
		}
	}
	if opts.Compacted {
		restoreGC := cmdutil.CompactGC(cmdutil.GCReplay)
		defer restoreGC()
	}
	// The readers stay open until dumpRun returns.
	readers, release, err := openReaders(opts, clusters)
	defer release()
	if err != nil {
		return err
	}

	// Records are written through a buffer (one write per 64 KiB, not per record); --follow
	// and a terminal flush it after each message.
	out := bufio.NewWriterSize(opts.IO.Out, 64<<10)
	cols, rowOf := Columns, row
	if tenant != "" {
		cols, rowOf = tenantColumns, tenantRow
	}
	d := &dumper{opts: opts, tenant: tenant, out: out, sink: recordio.NewSink(out, opts.Format, opts.IO.IsStdoutTTY(), cols, rowOf)}
	results := d.clusters(ctx, clusters, readers)
	runErr := d.outcome(clusters, results)
	if err := d.sink.Close(problems(results, runErr)); err != nil {
		return err
	}
	if err := out.Flush(); err != nil {
		return err
	}
	return runErr
}

// problems are the json document's errors: each cluster that could not be read, else what
// ended the run (--strict, a usage error).
func problems(results []clusterResult, runErr error) []explain.Problem {
	var ps []explain.Problem
	for _, r := range results {
		if r.err != nil && !errors.Is(r.err, errLimit) && !isUsage(r.err) {
			ps = append(ps, explain.ProblemOf(r.err))
		}
	}
	if len(ps) == 0 && runErr != nil {
		ps = append(ps, explain.ProblemOf(runErr))
	}
	return ps
}

// openReaders opens the offsets topic of each cluster; release frees those opened, in
// reverse order, also when one failed to open.
func openReaders(opts *Options, clusters []config.Cluster) (readers []loader.OffsetTopicReader, release func(), err error) {
	ro := pulsarx.ReaderOptions{From: opts.From, Compacted: opts.Compacted}
	readers = make([]loader.OffsetTopicReader, len(clusters))
	var releases []func()
	release = func() {
		for i := len(releases) - 1; i >= 0; i-- {
			releases[i]()
		}
	}
	for i, cl := range clusters {
		r, rel, err := opts.NewReader(cl, ro)
		if err != nil {
			return nil, release, err
		}
		if rel != nil {
			releases = append(releases, rel)
		}
		readers[i] = r
	}
	return readers, release, nil
}

// clusters dumps every cluster: one after the other, or all at once with --follow (which
// never ends by itself); reaching --limit on one stops them all.
func (d *dumper) clusters(ctx context.Context, clusters []config.Cluster, readers []loader.OffsetTopicReader) []clusterResult {
	results := make([]clusterResult, len(clusters))
	if !d.opts.Follow {
		for i, cl := range clusters {
			results[i] = d.cluster(ctx, cl, readers[i])
			if errors.Is(results[i].err, errLimit) {
				break
			}
		}
		return results
	}
	var wg sync.WaitGroup
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i, cl := range clusters {
		wg.Go(func() {
			results[i] = d.cluster(fctx, cl, readers[i])
			if errors.Is(results[i].err, errLimit) {
				cancel()
			}
		})
	}
	wg.Wait()
	return results
}

// outcome prints the summaries and decides the run's error: a usage error of a cluster
// first, then the clusters that could not be read, then --strict.
func (d *dumper) outcome(clusters []config.Cluster, results []clusterResult) error {
	opts := d.opts
	var failed []string
	for i, r := range results {
		if r.err != nil && !errors.Is(r.err, errLimit) {
			if isUsage(r.err) {
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

// isUsage reports whether err ends the run with the usage exit code.
func isUsage(err error) bool {
	var ee *cmdutil.ExitError
	return errors.As(err, &ee) && ee.Outcome == outcome.Usage
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
	for _, k := range offsetlog.Kinds {
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
func (d *dumper) cluster(ctx context.Context, cl config.Cluster, r loader.OffsetTopicReader) (res clusterResult) {
	opts := d.opts
	defer func() {
		if res.err != nil && !errors.Is(res.err, errLimit) && !isUsage(res.err) {
			fmt.Fprint(opts.IO.ErrOut, explain.New(cl.Name, explain.Pulsar, "", res.err).For(cl).Lines())
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

	cr := &clusterRead{d: d, cl: cl, res: &res}
	if !opts.Follow && (!opts.IO.IsStdoutTTY() || opts.Compacted) {
		cr.progress = opts.IO.StartProgress(fmt.Sprintf("%s: reading %d partitions, messages:", cl.Name, len(parts)))
		defer cr.progress.Stop()
	}
	if opts.Compacted {
		cr.state = newLiveState(opts.Raw)
	}
	res.err = d.read(ctx, r, parts, cr.message)
	if u, ok := r.(interface{ Undelivered() int64 }); ok {
		res.undelivered = u.Undelivered()
	}
	if cr.progress != nil {
		cr.progress.Stop()
	}
	if res.err == nil && cr.state != nil {
		res.err = d.writeLive(cr.state, cl, &res.sum)
	}
	return res
}

// read reads parts to their end, or follows them with --follow until ctx ends.
func (d *dumper) read(ctx context.Context, r loader.OffsetTopicReader, parts []int32, fn func(loader.Message) error) error {
	if !d.opts.Follow {
		return readAll(ctx, r, parts, d.opts.Concurrency, fn)
	}
	fr, ok := r.(Follower)
	if !ok {
		return fmt.Errorf("this reader cannot follow")
	}
	err := fr.FollowAll(ctx, parts, fn)
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil // interrupted, or another cluster reached --limit: the normal end
	}
	return err
}

// clusterRead is the reading of one cluster's messages.
type clusterRead struct {
	d        *dumper
	cl       config.Cluster
	res      *clusterResult
	progress *iostreams.Progress
	state    *liveState // --compacted
}

// message decodes one message and writes the records the filters keep. It is called
// serialized (ReadAll, FollowAll, or the sequential loop).
func (c *clusterRead) message(m loader.Message) error {
	d, opts, res := c.d, c.d.opts, c.res
	res.sum.Messages++
	if c.progress != nil {
		c.progress.Add(1)
	}
	var recs []offsetlog.Record
	if c.state != nil {
		recs = c.state.apply(m) // the undecodable records only: the rest is printed at the end
	} else {
		recs, _ = offsetlog.Decode(m.Key, m.Value)
	}
	for i := range recs {
		rec := &recs[i]
		if rec.Kind == offsetlog.KindUndecodable {
			res.undecodable++
			d.mu.Lock()
			d.undecodable++
			d.mu.Unlock()
		}
		if !opts.keep(rec, c.cl.KafkaNamespace) {
			continue
		}
		if err := d.emit(d.record(c.cl.Name, m, rec)); err != nil {
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

// writeLive writes the live state of --compacted, counting what it writes in sum.
func (d *dumper) writeLive(state *liveState, cl config.Cluster, sum *recordio.Summary) error {
	var out Record // reused: the sink writes each record before the next
	return state.emit(func(m loader.Message, rec *offsetlog.Record) error {
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

func (d *dumper) record(cluster string, m loader.Message, rec *offsetlog.Record) *Record {
	out := new(Record)
	d.recordInto(out, cluster, m, rec)
	return out
}

func (d *dumper) recordInto(out *Record, cluster string, m loader.Message, rec *offsetlog.Record) {
	*out = Record{Tenant: d.tenant, Cluster: cluster, OffsetsPartition: m.Partition, MessageID: m.MessageID,
		PublishTime: output.NewTime(m.PublishTime), Record: *rec, times: &d.times}
	if d.opts.Raw {
		out.Key, out.Value = m.Key, m.Value
	}
}

func readAll(ctx context.Context, r loader.OffsetTopicReader, parts []int32, concurrency int, fn func(loader.Message) error) error {
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
