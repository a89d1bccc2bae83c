//go:build kop

package kop

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
)

// liveGroup is a franz-go group member on one cluster consuming a topic that a producer
// writes to steadily, committing about every 100 ms, with an observer that asks KoP for the
// group's committed offset every 50 ms. It records what a bundle unload costs the group:
// every delivery (to find pauses, duplicates and missing records), the rebalance callbacks,
// the commit errors, and every offset KoP served for the group (to find one going back).
type liveGroup struct {
	t          *testing.T
	c          lab.Cluster
	topic      string
	group      string
	autoCommit bool

	mu         sync.Mutex
	produced   int64         // records acknowledged by KoP
	deliveries []delivery    // in arrival order
	times      map[int64]int // offset -> deliveries
	maxRead    int64         // highest offset delivered, -1 before the first
	callbacks  []callback    // assigned, revoked, lost
	commitErrs []commitErr   // the application's commit results that failed
	retried    []commitErr   // coordinator errors the client retried by itself ("request: error")
	observed   []observation
	commits    int

	stop         func()
	stopProducer func()
	done         sync.WaitGroup
	produceDone  chan struct{}
}

type delivery struct {
	at     time.Time
	offset int64
}

type callback struct {
	at   time.Time
	kind string
}

type commitErr struct {
	at  time.Time
	err string
}

// observation is one OffsetFetch of the group by the observer: the offset (-1: none), or the
// error; maxRead is the highest offset the member had been handed when the answer came.
type observation struct {
	at      time.Time
	offset  int64
	err     string
	maxRead int64
}

// startLiveGroup starts the producer (one record every 20 ms), the member and the observer.
func startLiveGroup(t *testing.T, c lab.Cluster, topic, group string, autoCommit bool) *liveGroup {
	t.Helper()
	lg := &liveGroup{t: t, c: c, topic: topic, group: group, autoCommit: autoCommit, times: map[int64]int{}, maxRead: -1}
	ctx, cancel := context.WithCancel(context.Background())
	lg.stop = cancel
	pctx, pcancel := context.WithCancel(ctx)
	lg.stopProducer = pcancel
	lg.produceDone = make(chan struct{})

	prod := labtest.Kafka(t, c, kgo.DefaultProduceTopic(topic), kgo.DisableIdempotentWrite(), kgo.ProducerLinger(0))
	go func() {
		defer close(lg.produceDone)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := 0; pctx.Err() == nil; i++ {
			r := &kgo.Record{Key: []byte("k-" + strconv.Itoa(i)), Value: []byte(strconv.Itoa(i))}
			// Not cancelled with pctx: a record is counted once KoP acknowledged it.
			if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
				if ctx.Err() == nil {
					t.Errorf("produce: %v", err)
				}
				return
			}
			lg.mu.Lock()
			lg.produced++
			lg.mu.Unlock()
			select {
			case <-pctx.Done():
			case <-tick.C:
			}
		}
	}()

	opts := []kgo.Opt{
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.WithLogger(retryCounter{lg}),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { lg.callback("assigned") }),
		kgo.OnPartitionsLost(func(context.Context, *kgo.Client, map[string][]int32) { lg.callback("lost") }),
	}
	if autoCommit {
		// franz-go's default revoke callback (a blocking commit of what earlier polls
		// returned) is kept: autocommit as applications run it.
		opts = append(opts, kgo.AutoCommitInterval(100*time.Millisecond),
			kgo.AutoCommitCallback(func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
				lg.commitDone(commitError(resp, err))
			}))
	} else {
		// Explicit commits after processing; rebalances wait until the loop allows them, so a
		// revoke commits only what was processed.
		opts = append(opts, kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
			kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, _ map[string][]int32) {
				lg.callback("revoked")
				lg.commitDone(cl.CommitUncommittedOffsets(ctx))
			}))
	}
	member := labtest.Kafka(t, c, opts...)
	lg.done.Add(1)
	go func() {
		defer lg.done.Done()
		last := time.Now()
		generation := int32(-1)
		for ctx.Err() == nil {
			fs := member.PollFetches(ctx)
			now := time.Now()
			lg.mu.Lock()
			if _, gen := member.GroupMetadata(); gen != generation {
				if generation >= 0 {
					lg.callbacks = append(lg.callbacks, callback{now, "generation"})
				}
				generation = gen
			}
			fs.EachRecord(func(r *kgo.Record) {
				lg.deliveries = append(lg.deliveries, delivery{now, r.Offset})
				lg.times[r.Offset]++
				lg.maxRead = max(lg.maxRead, r.Offset)
			})
			lg.mu.Unlock()
			if !autoCommit && time.Since(last) >= 100*time.Millisecond {
				cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
				err := member.CommitUncommittedOffsets(cctx)
				ccancel()
				if ctx.Err() == nil {
					lg.commitDone(err)
				}
				last = time.Now()
			}
			if !autoCommit {
				member.AllowRebalance()
			}
		}
	}()

	obs := kadm.NewClient(labtest.Kafka(t, c))
	lg.done.Add(1)
	go func() {
		defer lg.done.Done()
		for ctx.Err() == nil {
			fctx, fcancel := context.WithTimeout(ctx, 5*time.Second)
			resp, err := obs.FetchOffsets(fctx, group)
			fcancel()
			if ctx.Err() != nil {
				return
			}
			lg.mu.Lock()
			o := observation{at: time.Now(), offset: -1, maxRead: lg.maxRead}
			switch {
			case err != nil:
				o.err = err.Error()
			case resp.Error() != nil:
				o.err = resp.Error().Error()
			default:
				// KoP 3.1 names the topics of a fetch-all answer public/default/<topic>.
				for name, ps := range resp {
					if r, ok := ps[0]; ok && (name == topic || name == "public/default/"+topic) {
						if r.Err != nil {
							o.err = r.Err.Error()
						} else {
							o.offset = r.At
						}
					}
				}
			}
			lg.observed = append(lg.observed, o)
			lg.mu.Unlock()
			time.Sleep(50 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { lg.stop(); <-lg.produceDone; lg.done.Wait() })
	return lg
}

func commitError(resp *kmsg.OffsetCommitResponse, err error) error {
	if err != nil || resp == nil {
		return err
	}
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			if e := kerr.ErrorForCode(p.ErrorCode); e != nil {
				return e
			}
		}
	}
	return nil
}

// retryCounter is a franz-go logger that records the errors the client retried by itself
// (commits, heartbeats, offset fetches answered NOT_COORDINATOR, loading, ...), which the
// application never sees.
type retryCounter struct{ lg *liveGroup }

func (retryCounter) Level() kgo.LogLevel { return kgo.LogLevelDebug }

func (r retryCounter) Log(_ kgo.LogLevel, msg string, kv ...any) {
	if msg != "retrying request" && msg != "heartbeat hit retryable error, retrying" {
		return
	}
	req, errs := "Heartbeat", ""
	for i := 0; i+1 < len(kv); i += 2 {
		switch kv[i] {
		case "request":
			req = fmt.Sprint(kv[i+1])
		case "err", "request_error", "response_error":
			if kv[i+1] != nil {
				errs += fmt.Sprint(kv[i+1]) + " "
			}
		}
	}
	r.lg.mu.Lock()
	r.lg.retried = append(r.lg.retried, commitErr{time.Now(), req + ": " + errName(errs)})
	r.lg.mu.Unlock()
}

func (lg *liveGroup) callback(kind string) {
	lg.mu.Lock()
	lg.callbacks = append(lg.callbacks, callback{time.Now(), kind})
	lg.mu.Unlock()
}

func (lg *liveGroup) commitDone(err error) {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	lg.commits++
	if err != nil {
		lg.commitErrs = append(lg.commitErrs, commitErr{time.Now(), err.Error()})
	}
}

// waitCommitted waits until KoP serves the group an offset, and the member reads.
func (lg *liveGroup) waitCommitted(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		lg.mu.Lock()
		ok := len(lg.observed) > 0 && lg.observed[len(lg.observed)-1].offset > 0 && lg.maxRead > 0
		lg.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: the live group %s never committed", lg.c.Name, lg.group)
}

// finish stops the producer, waits until the member has read every record produced, stops
// everything and checks the safety properties over the whole run: every produced record was
// delivered (none lost), KoP never served a committed offset older than one it had served
// before, nor one past what the member had been handed.
func (lg *liveGroup) finish(t *testing.T) {
	t.Helper()
	lg.stopProducer()
	<-lg.produceDone
	lg.mu.Lock()
	produced := lg.produced
	lg.mu.Unlock()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		lg.mu.Lock()
		read := lg.maxRead
		lg.mu.Unlock()
		if read >= produced-1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	lg.stop()
	lg.done.Wait()
	lg.mu.Lock()
	defer lg.mu.Unlock()
	if lg.maxRead < produced-1 {
		t.Errorf("the live group read up to %d of %d records within 2 minutes", lg.maxRead, produced)
	}
	var missing []int64
	for off := int64(0); off < lg.produced; off++ {
		if lg.times[off] == 0 {
			missing = append(missing, off)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d records never delivered to the live group (first %v)", len(missing), lg.produced, missing[:min(len(missing), 10)])
	}
	high := int64(-1)
	for _, o := range lg.observed {
		if o.err != "" || o.offset < 0 {
			if o.err == "" && high >= 0 {
				t.Errorf("%s: KoP served no offset for %s at %s after serving %d", lg.c.Name, lg.group, o.at.Format("15:04:05.000"), high)
			}
			continue
		}
		if o.offset < high {
			t.Errorf("%s: KoP served %d for %s at %s after serving %d: the committed offset went back", lg.c.Name, o.offset, lg.group, o.at.Format("15:04:05.000"), high)
		}
		if o.offset > o.maxRead+1 {
			t.Errorf("%s: KoP served %d for %s at %s, past what the member had read (%d): it skips records", lg.c.Name, o.offset, lg.group, o.at.Format("15:04:05.000"), o.maxRead)
		}
		high = max(high, o.offset)
	}
	t.Logf("%s: %d records produced and delivered, %d commits (%d failed), %d observations of the committed offset", lg.group, lg.produced, lg.commits, len(lg.commitErrs), len(lg.observed))
}

// cost is what one bundle unload cost the live group, measured over [from, to).
type cost struct {
	pause      time.Duration // the longest time without a delivery that overlaps the window
	duplicates int           // deliveries of a record delivered before
	callbacks  map[string]int
	commitErrs map[string]int
	retried    map[string]int // "request: error" the client retried by itself
	unanswered time.Duration  // the longest time the observer got no offset from KoP for the group
	wentBack   bool
}

func (lg *liveGroup) costBetween(from, to time.Time) cost {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	c := cost{callbacks: map[string]int{}, commitErrs: map[string]int{}, retried: map[string]int{}}
	seen := map[int64]bool{}
	prev := time.Time{}
	for _, d := range lg.deliveries {
		if d.at.Before(from) {
			seen[d.offset] = true
			prev = d.at
			continue
		}
		if !d.at.Before(to) {
			if !prev.IsZero() && prev.Before(to) {
				end := d.at
				if to.Before(end) {
					end = to
				}
				c.pause = max(c.pause, end.Sub(prev))
			}
			break
		}
		if !prev.IsZero() {
			c.pause = max(c.pause, d.at.Sub(prev))
		}
		if seen[d.offset] {
			c.duplicates++
		}
		seen[d.offset] = true
		prev = d.at
	}
	for _, cb := range lg.callbacks {
		if !cb.at.Before(from) && cb.at.Before(to) {
			c.callbacks[cb.kind]++
		}
	}
	for _, e := range lg.commitErrs {
		if !e.at.Before(from) && e.at.Before(to) {
			c.commitErrs[errName(e.err)]++
		}
	}
	for _, e := range lg.retried {
		if !e.at.Before(from) && e.at.Before(to) {
			c.retried[e.err]++
		}
	}
	high := int64(-1)
	lastAnswer := from
	for _, o := range lg.observed {
		if o.at.Before(from) {
			if o.err == "" {
				high = max(high, o.offset)
			}
			continue
		}
		if !o.at.Before(to) {
			break
		}
		if o.err != "" {
			continue
		}
		c.unanswered = max(c.unanswered, o.at.Sub(lastAnswer))
		lastAnswer = o.at
		if o.offset < high {
			c.wentBack = true
		}
		high = max(high, o.offset)
	}
	return c
}

// errName shortens an error to its Kafka code name when it has one.
func errName(s string) string {
	for _, e := range []*kerr.Error{kerr.NotCoordinator, kerr.CoordinatorLoadInProgress, kerr.CoordinatorNotAvailable,
		kerr.RebalanceInProgress, kerr.IllegalGeneration, kerr.UnknownMemberID, kerr.RequestTimedOut} {
		if strings.Contains(s, e.Message) {
			return e.Message
		}
	}
	if len(s) > 60 {
		s = s[:60]
	}
	return strings.TrimSpace(s)
}

// TestLiveGroupUnloadCost measures what a bundle unload of public/__kafka (the lever reload
// pulls) costs a live group that commits about every 100 ms on the cluster unloaded: five
// unloads (and lookups) of the bundle holding the group's offsets partition, with a producer
// writing 50 records/s. It asserts the safety properties (no record lost, the committed offset
// KoP serves never goes back nor past what the member read) and logs, per unload, the longest
// pause in deliveries, the duplicates, the rebalance callbacks, the commit errors and how long
// KoP did not answer OffsetFetch for the group, with min/median/max over the five.
func TestLiveGroupUnloadCost(t *testing.T) {
	for _, mode := range []struct {
		name string
		auto bool
	}{{"autocommit", true}, {"explicit", false}} {
		t.Run(mode.name, func(t *testing.T) {
			wus := theLab.Cluster("wus")
			topic := labtest.NewTopic(t, theLab, "livecost")
			group := labtest.Name("livecost-" + mode.name)
			part := loader.PartitionFor(group, lab.OffsetsTopicPartitions)
			labtest.Settle(t, theLab, group)
			lg := startLiveGroup(t, wus, topic, group, mode.auto)
			lg.waitCommitted(t)
			time.Sleep(3 * time.Second)
			base := lg.costBetween(time.Now().Add(-3*time.Second), time.Now())
			t.Logf("baseline (3 s, no unload): longest pause %s, duplicates %d, callbacks %v, commit errors %v",
				base.pause.Round(time.Millisecond), base.duplicates, base.callbacks, base.commitErrs)

			const rounds = 5
			var costs []cost
			for i := range rounds {
				from := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				err := lab.ReloadOffsetsPartition(ctx, wus, part)
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				reloaded := time.Since(from)
				time.Sleep(10 * time.Second)
				c := lg.costBetween(from, time.Now())
				costs = append(costs, c)
				t.Logf("unload %d of the bundle of offsets partition %d (unload + lookup + every partition served: %s): longest pause %s, duplicates %d, callbacks %v, commit errors %v, retried by the client %v, longest time without an OffsetFetch answer %s, went back %v",
					i+1, part, reloaded.Round(time.Millisecond), c.pause.Round(time.Millisecond), c.duplicates, c.callbacks, c.commitErrs, c.retried, c.unanswered.Round(time.Millisecond), c.wentBack)
				if c.wentBack {
					t.Errorf("unload %d: the committed offset KoP served went back", i+1)
				}
			}
			lg.finish(t)
			t.Logf("%s over %d unloads (min/median/max): pause %s; duplicates %s; rebalances (new generations) %s; commit errors %s; errors retried by the client %s; OffsetFetch unanswered %s",
				mode.name, rounds,
				stats(costs, func(c cost) float64 { return c.pause.Seconds() }, "s"),
				stats(costs, func(c cost) float64 { return float64(c.duplicates) }, ""),
				stats(costs, func(c cost) float64 { return float64(c.callbacks["generation"]) }, ""),
				stats(costs, func(c cost) float64 { return total(c.commitErrs) }, ""),
				stats(costs, func(c cost) float64 { return total(c.retried) }, ""),
				stats(costs, func(c cost) float64 { return c.unanswered.Seconds() }, "s"))
		})
	}
}

// total is the sum of a count map's values.
func total(m map[string]int) float64 {
	n := 0
	for _, v := range m {
		n += v
	}
	return float64(n)
}

// stats is "min/median/max" of f over cs.
func stats(cs []cost, f func(cost) float64, unit string) string {
	v := make([]float64, len(cs))
	for i, c := range cs {
		v[i] = f(c)
	}
	sort.Float64s(v)
	if len(v) == 0 {
		return "-"
	}
	fm := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	if unit == "s" {
		fm = func(x float64) string { return fmt.Sprintf("%.2fs", x) }
	}
	return fm(v[0]) + "/" + fm(v[len(v)/2]) + "/" + fm(v[len(v)-1])
}

// TestRepairHealsBundleWithLiveGroup: on wus, a group L is live and committing (autocommit
// every 100 ms, a producer writing 50 records/s) in the same offsets partition as the user's
// stale group S. `repair --cluster wus` (no --allow-active) reloads the bundle: S serves 10900,
// and L lost nothing: every record delivered, the committed offset KoP served never went back
// nor past what L read. Then the same with `watch --repair` healing a second stale episode.
func TestRepairHealsBundleWithLiveGroup(t *testing.T) {
	topic, stale, part := labtest.StoryAt500(t, theLab, "livestory")
	wus := theLab.Cluster("wus")
	live := lab.GroupInPartition(labtest.Name("livestory-live"), part)
	labtest.Settle(t, theLab, live)
	lg := startLiveGroup(t, wus, labtest.NewTopic(t, theLab, "livestory-l"), live, true)
	lg.waitCommitted(t)

	labtest.Commit(t, theLab, "scus", stale, topic, 10900)
	labtest.WaitReplicated(t, theLab, "scus", "wus", part)
	if got := labtest.Served(t, theLab, "wus", stale, topic); got != "500" {
		t.Fatalf("wus serves %s for %s before the repair, want the stale 500", got, stale)
	}
	from := time.Now()
	code, d := cli.Repair(t, "--cluster", "wus", "--yes", "--group", stale)
	if code != 0 || len(d.Stale) == 0 {
		t.Fatalf("repair of a bundle with a live group: exit %d, %+v", code, d)
	}
	if got := labtest.Served(t, theLab, "wus", stale, topic); got != "10900" {
		t.Fatalf("wus serves %s for %s after the repair, want 10900", got, stale)
	}
	time.Sleep(5 * time.Second)
	c := lg.costBetween(from, time.Now())
	t.Logf("repair with %s live: longest pause %s, duplicates %d, callbacks %v, commit errors %v, retried by the client %v, went back %v",
		live, c.pause.Round(time.Millisecond), c.duplicates, c.callbacks, c.commitErrs, c.retried, c.wentBack)

	// watch --repair: a second episode (the group commits 11000 on scus) heals by itself.
	listen := labtest.FreeListen(t)
	stop := cli.StartWatch(t, listen, 15, stale)
	start := time.Now()
	labtest.Commit(t, theLab, "scus", stale, topic, 11000)
	for labtest.Served(t, theLab, "wus", stale, topic) != "11000" {
		if time.Since(start) > 60*time.Second {
			t.Fatalf("wus still serves %s %s after the commit on scus, with watch --repair running and %s live", labtest.Served(t, theLab, "wus", stale, topic), time.Since(start), live)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("wus serves 11000 %s after the commit on scus, healed by watch --repair with %s live", time.Since(start).Round(100*time.Millisecond), live)
	if code, stopped := stop(); stopped && code != 0 {
		t.Errorf("watch exit %d after cancel", code)
	}
	lg.finish(t)
}
