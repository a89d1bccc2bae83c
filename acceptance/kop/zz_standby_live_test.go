//go:build kop

package kop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kop-offsets/kop-offsets/internal/audit"
	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
)

// Go runs this file's tests before zz_standby_test.go's (file order): both stop scus and
// resume it before they end.

// commitLog is what a live consumer committed: each commit's offset (the next to read, in
// scus's numbering) and when it was acknowledged.
type commitLog struct {
	mu  sync.Mutex
	off []int64
	at  []time.Time
}

func (c *commitLog) add(o int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off, c.at = append(c.off, o), append(c.at, time.Now())
}

// before returns the last commit acknowledged before d, and when.
func (c *commitLog) before(d time.Time) (int64, time.Time, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.at) - 1; i >= 0; i-- {
		if c.at[i].Before(d) {
			return c.off[i], c.at[i], i + 1
		}
	}
	return -1, time.Time{}, 0
}

// at returns when offset o was committed (the first commit at or past it).
func (c *commitLog) when(o int64) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, v := range c.off {
		if v >= o {
			return c.at[i], true
		}
	}
	return time.Time{}, false
}

// liveOnScus produces keys live-<i> to topic on scus and consumes them as group, committing
// after every poll, until ctx ends (the region is gone: their requests hang, then fail).
func liveOnScus(ctx context.Context, t *testing.T, topic, group string, commits *commitLog) (produced func() int) {
	scus := theLab.Cluster("scus")
	prod := labtest.Kafka(t, scus, append(labtest.PatientProducer(), kgo.DefaultProduceTopic(topic))...)
	var mu sync.Mutex
	n := 0
	go func() {
		for ctx.Err() == nil {
			var rs []*kgo.Record
			mu.Lock()
			for j := n; j < n+10; j++ {
				rs = append(rs, &kgo.Record{Key: fmt.Appendf(nil, "live-%d", j), Value: []byte("v")})
			}
			mu.Unlock()
			if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
				return
			}
			mu.Lock()
			n += len(rs)
			mu.Unlock()
			time.Sleep(250 * time.Millisecond)
		}
	}()
	cons, err := lab.KafkaClient(scus, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		// Closed when the region returns (a client of a stopped cluster may hang on leave).
		<-ctx.Done()
		go cons.Close()
	}()
	go func() {
		for ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			var last *kgo.Record
			fs.EachRecord(func(r *kgo.Record) { last = r })
			if last == nil {
				continue
			}
			if err := cons.CommitRecords(ctx, last); err != nil {
				continue
			}
			commits.add(last.Offset + 1)
			time.Sleep(200 * time.Millisecond) // the group works on what it read
		}
	}()
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

// TestStandbyContinuousConsumer is issue 30's disaster with a live group: on a misaligned
// topic (300 messages on scus alone, then 200 replicated: scus offset N is wus offset N-300),
// a producer writes 40 messages a second on scus and the group consumes them there,
// committing after every poll, while `watch --keep-translations` keeps its commits
// translated on wus. scus stops (SIGSTOP) mid-stream. failover --target wus lands the group on
// the last kept translation; a consumer of the group on wus starts exactly at the first
// message the group had not consumed when that commit was made, so it skips nothing and
// re-reads what it committed since: the bound, measured in messages and seconds. Then scus
// returns and the group fails back.
func TestStandbyContinuousConsumer(t *testing.T) {
	topic, group, part := settledGroup(t, "standby-live")
	shiftedCopies(t, topic, 300, 200)
	listen := labtest.FreeListen(t)
	stopWatch := cli.StartWatchArgs(t, listen, 20, "--keep-translations", "--interval", "2s", "--group", group)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	commits := &commitLog{}
	produced := liveOnScus(ctx, t, topic, group, commits)
	// Long enough for the consumer to join, read the backlog and follow the producer,
	// and for watch to keep several of its commits.
	keptCount(t, listen, "wus", 5)
	time.Sleep(20 * time.Second)

	resume := labtest.PauseCluster(t, theLab, "scus")
	disaster := time.Now()
	cancel()
	last, lastAt, n := commits.before(disaster)
	t.Logf("disaster: %d messages produced live, %d commits on scus, the last %d (wus %d) %s before scus stopped",
		produced(), n, last, last-300, disaster.Sub(lastAt).Round(time.Millisecond))
	if n < 10 {
		t.Fatalf("the group committed %d times on scus before the disaster, want a live group", n)
	}
	if code, _ := stopWatch(); code != 0 {
		t.Logf("watch ended with exit %d (scus gone)", code)
	}

	code, d, took := failover(t, "--source", "scus", "--target", "wus", "--group", group, "--source-gone")
	t.Logf("failover without scus: exit %d in %s", code, took.Round(time.Millisecond))
	// 0: the last kept translation is the newest commit; 5: a newer one replicated untranslated.
	if (code != 0 && code != 5) || len(d.Plan.Rows) != 1 || d.Result == nil || len(d.Result.Proof) != 1 || !d.Result.Proof[0].OK {
		t.Fatalf("failover without scus: exit %d, %+v", code, d)
	}
	r := d.Plan.Rows[0]
	if r.Kept == nil || r.Translated == nil {
		t.Fatalf("row without a kept translation: %+v", r)
	}
	kept, landed := r.Kept.Source, *r.Translated
	if landed != kept-300 {
		t.Fatalf("landed on wus %d for the kept scus %d, want %d", landed, kept, kept-300)
	}
	// No skip: the group had consumed scus up to last; wus's landed is scus landed+300.
	if landed+300 > last {
		t.Fatalf("landed on wus %d (scus %d) past the group's last commit on scus %d: skips messages", landed, landed+300, last)
	}
	// Kept as it was read, the translation may be of the group's very last commit: wus's log
	// end when the group had consumed everything. Where a consumer starts is then checked once
	// more messages have arrived (below).
	wusEnd := endOf(t, "wus", topic)
	if landed < wusEnd {
		first := labtest.FirstRecord(t, theLab, "wus", group, topic)
		if first.Offset != landed || string(first.Key) != keyAt(landed, 200) {
			t.Fatalf("a consumer on wus starts at offset %d key %s, want %d %s", first.Offset, first.Key, landed, keyAt(landed, 200))
		}
	} else {
		t.Logf("landed on wus's log end %d: the group had consumed every message wus holds, nothing to re-read", wusEnd)
	}
	keptAt, _ := commits.when(kept)
	reread := last - kept
	t.Logf("re-read bound: %d messages, the group's commits of the last %s before the disaster (kept translation checked %s before it)",
		reread, disaster.Sub(keptAt).Round(time.Millisecond), disaster.Sub(r.Kept.At.Time()).Round(time.Millisecond))
	// docs/failover.md: the re-read is what the group committed in the last watch interval,
	// cycle and replication delay of the offsets topic before the disaster (2 s here).
	if age := disaster.Sub(keptAt); age > 30*time.Second {
		t.Errorf("the group re-reads %s of commits (%d messages): more than the documented bound on the lab", age, reread)
	}

	// scus returns and replicates what it held back; 100 more messages follow. The group
	// goes on on wus, reads 100 and fails back. Its own last commit on scus is the floor
	// there (it consumed scus up to it).
	resume()
	waitNoMembers(t, "scus", group)
	scusEnd := endOf(t, "scus", topic)
	labtest.WaitEndOffset(t, theLab.Cluster("wus"), topic, scusEnd-300)
	produceKeys(t, "scus", topic, "after", 100)
	labtest.WaitEndOffset(t, theLab.Cluster("wus"), topic, scusEnd-300+100)
	if landed >= wusEnd {
		want := recordAt(t, "scus", topic, landed+300)
		if first := labtest.FirstRecord(t, theLab, "wus", group, topic); first.Offset != landed || string(first.Key) != string(want.Key) {
			t.Fatalf("a consumer on wus starts at offset %d key %s, want %d %s (scus %d)", first.Offset, first.Key, landed, want.Key, landed+300)
		}
		waitNoMembers(t, "wus", group)
	}
	wusCommit := landed + 100
	labtest.Commit(t, theLab, "wus", group, topic, wusCommit)
	labtest.WaitReplicated(t, theLab, "wus", "scus", part)
	listen2 := labtest.FreeListen(t)
	stop2 := cli.StartWatchArgs(t, listen2, 20, "--keep-translations", "--interval", "2s", "--group", group)
	keptCount(t, listen2, "scus", 1)
	stop2()
	code, d, took = failover(t, "--source", "wus", "--target", "scus", "--group", group)
	t.Logf("failback: exit %d in %s", code, took.Round(time.Millisecond))
	back := max(wusCommit+300, last)
	if code != 0 || len(d.Plan.Rows) != 1 || labtest.Val(d.Plan.Rows[0].Translated) != fmt.Sprint(back) {
		t.Fatalf("failback: exit %d, want %d: %+v", code, back, d)
	}
	// The same message the group would read next on wus (or, below the floor, scus's own).
	if back >= endOf(t, "scus", topic) {
		// The group had read everything: the next message is one written after the failback.
		produceKeys(t, "scus", topic, "tail", 10)
		labtest.WaitEndOffset(t, theLab.Cluster("wus"), topic, wusCommit+10)
	}
	want := recordAt(t, "scus", topic, back)
	if back == wusCommit+300 {
		if w := recordAt(t, "wus", topic, wusCommit); string(w.Key) != string(want.Key) {
			t.Fatalf("scus %d holds %s, wus %d holds %s: not the same message", back, want.Key, wusCommit, w.Key)
		}
	}
	if first := labtest.FirstRecord(t, theLab, "scus", group, topic); first.Offset != back || string(first.Key) != string(want.Key) {
		t.Fatalf("after failback a consumer on scus starts at %d %s, want %d %s", first.Offset, first.Key, back, want.Key)
	}
}

// endOf is topic/0's log end on cluster.
func endOf(t *testing.T, cluster, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ends, err := kadm.NewClient(labtest.Kafka(t, theLab.Cluster(cluster))).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := ends.Lookup(topic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("%s: end of %s: %v", cluster, topic, o.Err)
	}
	return o.Offset
}

// produceKeys writes n records <prefix>-<i> to topic on cluster through KoP.
func produceKeys(t *testing.T, cluster, topic, prefix string, n int) {
	t.Helper()
	cl := labtest.Kafka(t, theLab.Cluster(cluster), append(labtest.PatientProducer(), kgo.DefaultProduceTopic(topic))...)
	var rs []*kgo.Record
	for i := range n {
		rs = append(rs, &kgo.Record{Key: fmt.Appendf(nil, "%s-%d", prefix, i), Value: []byte("v")})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("%s: produce to %s: %v", cluster, topic, err)
	}
}

// recordAt reads the record at offset of topic/0 on cluster (a partition consumer, no group).
func recordAt(t *testing.T, cluster, topic string, offset int64) *kgo.Record {
	t.Helper()
	return recordAtPart(t, cluster, topic, 0, offset)
}

// keyAt is the key at wus offset o of a topic whose replicated part began with n records of
// labtest.Produce (k-<i>) and went on with liveOnScus's (live-<i>).
func keyAt(o int64, n int64) string {
	if o < n {
		return fmt.Sprintf("k-%d", o)
	}
	return fmt.Sprintf("live-%d", o-n)
}

// TestFailoverFaults: the faults of a move. failover is killed (SIGKILL) as soon as its
// write is in the audit trail, holding wus's writer lease, before or during its reload; a
// second failover takes the lease at once (it died with its holder's connection), finds the
// record written and completes. Then the broker that owns the group's offsets partition on
// wus is killed (two brokers a cluster: the other loads the partition) or, on a standalone,
// the bundle is unloaded (the load a restart makes): KoP's next load lands the translated
// offset, never scus's untranslated number.
func TestFailoverFaults(t *testing.T) {
	topic, group, part := settledGroup(t, "faults")
	shiftedCopies(t, topic, 300, 1000)
	labtest.Commit(t, theLab, "scus", group, topic, 900)
	labtest.WaitReplicated(t, theLab, "scus", "wus", part)

	trail := filepath.Join(t.TempDir(), "audit.jsonl")
	t.Setenv(audit.EnvFile, trail)
	bin := labtest.Binary(t)
	cfg := labtest.ConfigCopy(t, theLab, "faults")
	p := startProcess(t, bin, "failover", cfg, "--timeout", "10s", "failover", "--source", "scus", "--target", "wus", "--group", group, "--yes")
	var recs []audit.Record
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if recs = readTrail(trail); len(recs) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("failover wrote nothing in 5 minutes:\n%s", labtest.Tail(p.stderr(), 20))
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	code := p.wait(t, time.Minute)
	recs = readTrail(trail)
	var actions []string
	for _, rec := range recs {
		actions = append(actions, rec.Action+" "+rec.Result)
	}
	t.Logf("failover killed (exit %d) after %v; stderr:\n%s", code, actions, labtest.Tail(p.stderr(), 8))
	if recs[0].Action != audit.ActionCommit {
		t.Fatalf("the first write is %s, want the commit", recs[0].Action)
	}
	t.Logf("after the kill wus serves %s (600 if the reload ran before the kill)", labtest.Served(t, theLab, "wus", group, topic))

	start := time.Now()
	code, d, _ := failover(t, "--source", "scus", "--target", "wus", "--group", group)
	t.Logf("failover again: exit %d in %s, row %+v", code, time.Since(start).Round(time.Millisecond), d.Plan.Rows)
	if code != 0 || len(d.Plan.Rows) != 1 || labtest.Val(d.Plan.Rows[0].Translated) != "600" {
		t.Fatalf("failover after the kill: exit %d, %+v", code, d)
	}
	if a := d.Plan.Rows[0].Action; a == "write" {
		t.Errorf("the second failover writes again (%s): the first one's record was not found", a)
	}
	labtest.WantServed(t, theLab, "wus", group, topic, "600", "wus serves %s after the second failover, want 600")

	// KoP's next load: a broker of wus gone, or the bundle moved.
	if brokers := theLab.Cluster("wus").Brokers; len(brokers) > 1 {
		i := ownerOf(t, "wus", group)
		start := time.Now()
		labtest.KillBroker(t, theLab, "wus", i)
		other := theLab.Cluster("wus").Broker(1 - i)
		if got := servedVia(t, other, group, topic); got != 600 {
			t.Fatalf("wus broker-%d killed: broker-%d serves %d, want the translated 600", i, 1-i, got)
		}
		t.Logf("wus: broker-%d (owner of the group's offsets partition) killed; broker-%d serves 600 after %s", i, 1-i, time.Since(start).Round(time.Second))
		labtest.StartBroker(t, theLab, "wus", i) // restarted: the clients below dial it again
	} else {
		labtest.LoadOn(t, theLab, "wus", group)
		t.Logf("wus: a standalone: the group's offsets partition loaded afresh by a bundle unload")
	}
	labtest.WantServed(t, theLab, "wus", group, topic, "600", "after KoP's next load wus serves %s, want the translated 600")
	if first := labtest.FirstRecord(t, theLab, "wus", group, topic); first.Offset != 600 || string(first.Key) != "k-600" {
		t.Fatalf("a consumer on wus starts at %d %s, want 600 k-600", first.Offset, first.Key)
	}
}

// waitNoMembers waits until group has no members on cluster (a consumer of the region that
// was gone leaves, or its session expires).
func waitNoMembers(t *testing.T, cluster, group string) {
	t.Helper()
	adm := kadm.NewClient(labtest.Kafka(t, theLab.Cluster(cluster)))
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		gs, err := adm.DescribeGroups(ctx, group)
		cancel()
		if err == nil && gs[group].Err == nil && len(gs[group].Members) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: group %s still has members: %+v %v", cluster, group, gs[group], err)
		}
		time.Sleep(time.Second)
	}
}

// servedVia is what the broker c serves for group's topic/0, asked again (3 minutes at most)
// while the partition has no owner yet (a killed broker's bundles wait for its session to
// expire) or KoP loads it.
func servedVia(t *testing.T, c lab.Cluster, group, topic string) int64 {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		off, ok, err := lab.FetchThroughKoP(ctx, c, group, topic, 0)
		cancel()
		if err == nil && ok {
			return off
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s serves nothing for %s (ok %v): %v", c.Name, c.KafkaBootstrap, group, ok, err)
		}
		time.Sleep(time.Second)
	}
}

// readTrail reads the audit records written so far (a line being written is left out).
func readTrail(p string) []audit.Record {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	var out []audit.Record
	for _, line := range strings.Split(string(b), "\n") {
		var r audit.Record
		if json.Unmarshal([]byte(line), &r) == nil && r.Action != "" {
			out = append(out, r)
		}
	}
	return out
}

// ownerOf is the index of the broker of cluster that owns group's offsets partition.
func ownerOf(t *testing.T, cluster, group string) int {
	t.Helper()
	c := theLab.Cluster(cluster)
	topic := fmt.Sprintf("%s-partition-%d", lab.OffsetsTopic, loader.PartitionFor(group, lab.OffsetsTopicPartitions))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o, err := labtest.PulsarxAdmin(t, c).LookupOwner(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range c.Brokers {
		if strings.HasSuffix(o.BrokerURL, fmt.Sprintf(":%d", b.Service)) {
			return i
		}
	}
	t.Fatalf("%s: owner %s of %s is none of the brokers", cluster, o.BrokerURL, topic)
	return -1
}
