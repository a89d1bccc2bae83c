//go:build kop

package kop

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kop-offsets/kop-offsets/internal/audit"
	"github.com/kop-offsets/kop-offsets/internal/commands/synccmd"
	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
)

// syncSetUp runs `sync setup --yes` with args (the offsets topic no longer replicates
// between scus and wus; every group is seeded) and gives replication back at the end of the
// test (every other test needs it).
func syncSetUp(t *testing.T, args ...string) synccmd.Result {
	t.Helper()
	t.Cleanup(func() {
		if code, out := cli.Run(t, "sync", "setup", "--undo", "--yes", "--audit-file", ""); code != 0 {
			t.Errorf("sync setup --undo: exit %d: %s", code, out)
		}
	})
	code, out := cli.Run(t, append([]string{"sync", "setup", "--yes", "--audit-file", "", "-o", "json"}, args...)...)
	var res synccmd.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 {
		t.Fatalf("sync setup: exit %d (%v): %s", code, err, out)
	}
	return res
}

// served samples what KoP on cluster serves for group's topic/0, with when.
type served struct {
	mu  sync.Mutex
	at  []time.Time
	off []int64
}

func (s *served) add(o int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at, s.off = append(s.at, time.Now()), append(s.off, o)
}

// firstAtLeast is when a sample first showed o or more, after from.
func (s *served) firstAtLeast(o int64, from time.Time) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, v := range s.off {
		if v >= o && !s.at[i].Before(from) {
			return s.at[i], true
		}
	}
	return time.Time{}, false
}

func (s *served) values() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.off)
}

// sample asks KoP on cluster what it serves for group every 100 ms until ctx ends.
func sample(ctx context.Context, cluster, group, topic string) *served {
	s := &served{}
	go func() {
		for ctx.Err() == nil {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			off, ok, err := lab.FetchThroughKoP(cctx, theLab.Cluster(cluster), group, topic, 0)
			cancel()
			if err == nil && ok {
				s.add(off)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return s
}

// percentile is the p-th percentile (0 to 1) of ds, sorted in place.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return -1
	}
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(p*float64(len(ds))))]
}

// metric is the sum of the series of name whose labels contain all of labels.
func metric(t *testing.T, listen, name string, labels ...string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + listen + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^` + name + `(\{[^}]*\})? (\S+)$`)
	sum := 0.0
	for _, m := range re.FindAllStringSubmatch(string(body), -1) {
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(m[1], l)
		}
		if v, err := strconv.ParseFloat(m[2], 64); ok && err == nil {
			sum += v
		}
	}
	return sum
}

// TestSyncContinuousConsumer is issue 31 on real KoP: after `sync setup`, a group consumes
// continuously on scus, committing after every poll, on a misaligned topic (300 messages on
// scus alone, then replicated ones: scus N is wus N-300). `watch --sync --interval 1s`
// commits each commit's translation through KoP's OffsetCommit on wus: wus serves it at
// once, with no unload, and every value wus serves is exactly a commit of the group
// translated. The sync process is killed (SIGKILL) mid-stream and restarted: it catches up.
// The consumer moves to wus and starts exactly at the first message it had not consumed;
// its commits there flow back to scus in scus's numbering. A group live on both clusters is
// reported and left alone.
func TestSyncContinuousConsumer(t *testing.T) {
	topic, group, part := settledGroup(t, "sync-live")
	shiftedCopies(t, topic, 300, 200)
	split := labtest.Name("sync-split-group")
	// Before setup the group commits 400 on scus (no members), replicated to wus, whose KoP
	// does not serve it; the seed of setup commits its translation, 100, through wus's KoP.
	labtest.Commit(t, theLab, "scus", group, topic, 400)
	labtest.WaitReplicated(t, theLab, "scus", "wus", part)
	seeded := syncSetUp(t, "--group", group, "--group", split).Seed
	if seeded == nil || seeded.Synced < 1 || seeded.Error != "" {
		t.Fatalf("sync setup's seed: %+v", seeded)
	}
	if got := labtest.Served(t, theLab, "wus", group, topic); got != "100" {
		t.Fatalf("after sync setup's seed wus serves %s for the group, want 100 (scus 400 translated)", got)
	}
	t.Logf("sync setup seeded %d groups (%d synced, %d offsets) in %.1f s: wus serves 100 for scus's 400", seeded.Groups, seeded.Synced, seeded.Offsets, seeded.Seconds)

	bin := labtest.Binary(t)
	cfg := labtest.ConfigCopy(t, theLab, "sync")
	// Two replicas: the first to hold both clusters' writer leases syncs, the other waits.
	trailA, trailB := filepath.Join(t.TempDir(), "a.jsonl"), filepath.Join(t.TempDir(), "b.jsonl")
	syncArgs := func(listen, trail string) []string {
		return []string{"--timeout", "10s", "--verbose", "watch", "--sync", "--interval", "1s", "--listen", listen, "--group", group, "--group", split, "--audit-file", trail}
	}
	listenA, listen := labtest.FreeListen(t), labtest.FreeListen(t)
	p := startProcess(t, bin, "sync-a", cfg, syncArgs(listenA, trailA)...)
	labtest.WaitReady(t, "http://"+listenA+"/readyz", func() error { return nil })
	waitActive(t, listenA, 1)
	p2 := startProcess(t, bin, "sync-b", cfg, syncArgs(listen, trailB)...)
	labtest.WaitReady(t, "http://"+listen+"/readyz", func() error { return nil })
	waitActive(t, listen, 0)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	commits := &commitLog{}
	produced := liveOnScus(ctx, t, topic, group, commits)
	sctx, scancel := context.WithCancel(context.Background())
	defer scancel()
	onWus := sample(sctx, "wus", group, topic)
	time.Sleep(30 * time.Second)

	// The active replica dies mid-stream (SIGKILL); the group goes on committing on scus;
	// the standby takes the leases once they expire with the dead one's connections.
	killedAt := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.wait(t, time.Minute)
	waitActive(t, listen, 1)
	restartAt := time.Now()
	t.Logf("the standby replica took over %s after the active one was killed", restartAt.Sub(killedAt).Round(time.Millisecond))
	// The killed one comes back: it waits as the standby now.
	p3 := startProcess(t, bin, "sync-a", cfg, syncArgs(listenA, trailA)...)
	labtest.WaitReady(t, "http://"+listenA+"/readyz", func() error { return nil })
	waitActive(t, listenA, 0)
	_ = p3
	time.Sleep(20 * time.Second)

	// The consumer stops on scus (the group leaves: no members anywhere).
	cancel()
	stopAt := time.Now()
	last, _, n := commits.before(stopAt.Add(time.Hour))
	waitNoMembers(t, "scus", group)
	// A commit in flight when the consumer stopped may have landed without its answer
	// reaching the client (its context ended): what scus serves now is the group's last.
	if v, err := strconv.ParseInt(labtest.Served(t, theLab, "scus", group, topic), 10, 64); err == nil && v > last {
		t.Logf("scus serves %d: the consumer's last commit landed as it stopped, unacknowledged (the log's last is %d)", v, last)
		commits.add(v)
		last, n = v, n+1
	}
	want := last - 300
	deadline := time.Now().Add(30 * time.Second)
	for {
		if got, ok := onWus.firstAtLeast(want, stopAt); ok {
			t.Logf("after the consumer stopped, wus served the translated %d in %s", want, got.Sub(stopAt).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("wus does not serve %d (scus's last %d translated) 30 s after the group stopped: %v", want, last, tail(onWus.values(), 10))
		}
		time.Sleep(200 * time.Millisecond)
	}
	scancel()
	t.Logf("live: %d messages produced, %d commits on scus, the last %d", produced(), n, last)

	// Exact: every value wus served after the first sync is a commit of the group, translated.
	commits.mu.Lock()
	made := map[int64]bool{}
	for _, o := range commits.off {
		made[o-300] = true
	}
	offs := slices.Clone(commits.off)
	ats := slices.Clone(commits.at)
	commits.mu.Unlock()
	seen, synced := 0, false
	for _, v := range onWus.values() {
		seen++
		synced = synced || made[v]
		if synced && !made[v] {
			t.Errorf("wus served %d: no commit of the group on scus translates to it", v)
		}
	}
	if !synced {
		t.Fatalf("wus never served a translated commit: %v", tail(onWus.values(), 10))
	}
	// Latency: from a commit's acknowledgement on scus to wus serving it (or more).
	var lat, latKill []time.Duration
	missed := 0
	for i, o := range offs {
		at, ok := onWus.firstAtLeast(o-300, ats[i])
		switch {
		case !ok:
			missed++
		case ats[i].After(killedAt.Add(-2*time.Second)) && ats[i].Before(restartAt.Add(10*time.Second)):
			latKill = append(latKill, at.Sub(ats[i])) // committed around the kill: caught up at the restart
		default:
			lat = append(lat, at.Sub(ats[i]))
		}
	}
	t.Logf("sync latency, a commit acknowledged on scus to wus serving it (%d commits, %d wus samples every 100 ms, %d not seen): p50 %s, p99 %s, max %s; "+
		"committed around the kill (2 s before it to 10 s after the takeover): %d, p50 %s, max %s (takeover %s)",
		len(lat), seen, missed, percentile(lat, .5), percentile(lat, .99), percentile(lat, 1), len(latKill), percentile(latKill, .5), percentile(latKill, 1),
		restartAt.Sub(killedAt).Round(time.Millisecond))
	if len(lat) < 10 || percentile(lat, .99) > 5*time.Second {
		t.Errorf("sync latency: %d commits measured, p99 %s (want 10 or more, under 5 s on the lab)", len(lat), percentile(lat, .99))
	}
	// Coalesced: one OffsetCommit a group and cycle at most (the restarted process's count).
	sent := metric(t, listen, "kop_offsets_sync_commits_total", `cluster="wus"`)
	t.Logf("the replica that took over committed %v offsets on wus over %s of about 3 commits a second on scus", sent, stopAt.Sub(restartAt).Round(time.Second))
	if unloads := metric(t, listen, "kop_offsets_watch_reloads_total"); unloads != 0 {
		t.Errorf("%v unloads in sync mode", unloads)
	}

	// The consumer moves to wus: it starts exactly at the first message it had not consumed
	// on scus (scus's last), the same message on both copies. More is produced first: the
	// group had consumed everything.
	produceKeys(t, "scus", topic, "after", 20)
	labtest.WaitEndOffset(t, theLab.Cluster("wus"), topic, endOf(t, "scus", topic)-300)
	next := recordAt(t, "scus", topic, last)
	first := labtest.FirstRecord(t, theLab, "wus", group, topic)
	if first.Offset != want || string(first.Key) != string(next.Key) {
		t.Fatalf("a consumer on wus starts at %d %s, want %d %s (scus %d)", first.Offset, first.Key, want, next.Key, last)
	}
	// Its commit on wus flows back to scus, in scus's numbering.
	wusEnd := endOf(t, "wus", topic)
	labtest.Commit(t, theLab, "wus", group, topic, wusEnd)
	back := strconv.FormatInt(wusEnd+300, 10)
	committedAt := time.Now()
	for got := ""; got != back; got = labtest.Served(t, theLab, "scus", group, topic) {
		if time.Since(committedAt) > 30*time.Second {
			t.Fatalf("scus serves %s 30 s after the group committed %d on wus, want %s; sync stderr:\n%s", got, wusEnd, back, grepLines(p2.stderr(), group, 30))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("wus's commit %d served on scus as %s after %s", wusEnd, back, time.Since(committedAt).Round(time.Millisecond))
	// The audit trail of the replica that took over: each commit it sent, both ways, marked.
	toWus, toScus := syncTrail(t, trailB, "wus", group, "from=scus"), syncTrail(t, trailB, "scus", group, "from=wus")
	if toWus == 0 || toScus == 0 {
		t.Errorf("audit trail %s: %d commit records on wus from scus, %d on scus from wus; want both", trailB, toWus, toScus)
	}
	t.Logf("audit trail of the replica that took over: %d commit records on wus (from scus), %d on scus (from wus)", toWus, toScus)

	// Split brain: members on both clusters, each committing: nothing synced, reported.
	both, bcancel := context.WithCancel(context.Background())
	defer bcancel()
	for _, c := range []string{"scus", "wus"} {
		cl, err := lab.KafkaClient(theLab.Cluster(c), kgo.ConsumerGroup(split), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		go func() {
			for both.Err() == nil {
				fs := cl.PollRecords(both, 10)
				var lastRec *kgo.Record
				fs.EachRecord(func(r *kgo.Record) { lastRec = r })
				if lastRec != nil {
					_ = cl.CommitRecords(both, lastRec)
				}
				time.Sleep(500 * time.Millisecond)
			}
		}()
	}
	deadline = time.Now().Add(time.Minute)
	for metric(t, listen, "kop_offsets_sync_groups_skipped_total", `reason="split_brain"`) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no split brain reported in a minute; sync stderr:\n%s", labtest.Tail(p2.stderr(), 20))
		}
		time.Sleep(time.Second)
	}
	bcancel()
	if strings.Contains(p2.stderr(), `"group":"`+split+`","topic"`) && strings.Contains(p2.stderr(), `"msg":"synced"`) {
		t.Errorf("the split-brain group was synced:\n%s", labtest.Tail(p2.stderr(), 20))
	}
	t.Logf("split brain reported: %s", firstLine(p2.stderr(), "split brain"))
	if os.Getenv("KOP_SYNC_LOG") != "" {
		t.Logf("sync stderr:\n%s", labtest.Tail(p2.stderr(), 200))
	}
}

// syncTrail counts the ok commit records of group on cluster in the audit trail file whose
// metadata carries sync's mark with from (e.g. "from=scus"); a record of the group that
// failed, or is not marked, fails the test.
func syncTrail(t *testing.T, file, cluster, group, from string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r audit.Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("audit trail %s: %v: %q", file, err, l)
		}
		if r.Cluster != cluster || r.Action != audit.ActionCommit || !slices.Contains(r.Groups, group) {
			continue
		}
		if r.Result != audit.ResultOK || len(r.Offsets) == 0 || !strings.HasPrefix(r.Offsets[0].Metadata, "kop-offsets-sync:") {
			t.Errorf("audit trail %s: %s", file, l)
		}
		if strings.Contains(r.Offsets[0].Metadata, from+",") {
			n++
		}
	}
	return n
}

// grepLines is the last n lines of s that contain sub.
func grepLines(s, sub string, n int) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out[max(0, len(out)-n):], "\n")
}

// waitActive waits (2 minutes at most) until the sync replica on listen reports
// kop_offsets_sync_active want.
func waitActive(t *testing.T, listen string, want float64) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for metric(t, listen, "kop_offsets_sync_active") != want {
		if time.Now().After(deadline) {
			t.Fatalf("sync replica on %s: kop_offsets_sync_active is not %v after 2 minutes", listen, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tail(v []int64, n int) []int64 { return v[max(0, len(v)-n):] }

func firstLine(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return fmt.Sprintf("(no line with %q)", sub)
}
