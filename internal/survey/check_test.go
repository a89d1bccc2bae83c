package survey

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

const topic1 = "persistent://public/default/topic-1"

// newKoP is a fake KoP serving topic-1, whose partition 0 ends at endOffset.
func newKoP(t *testing.T, endOffset int64) *fakes.KoP {
	k := fakes.NewKoP(t)
	k.SetEnd("topic-1", 0, endOffset)
	return k
}

// fetcher is the product's fetcher of k, with its client options.
func fetcher(t *testing.T, k *fakes.KoP) *kop.Fetcher {
	return k.Fetcher(t, 2*time.Second, kop.ClientOpts(10*time.Second)...)
}

func commit(group string, p int32, off int64) kop.OffsetCommit {
	return kop.OffsetCommit{Group: group, Topic: topic1, Partition: p, Offset: off, CommitTime: time.UnixMilli(1700000000000 + off)}
}

// TestUserScenarioStaleCache: wus's offsets topic holds 10900 (replicated), KoP on wus
// still serves 500.
func TestUserScenarioStaleCache(t *testing.T) {
	scusKoP, wusKoP := newKoP(t, 11000), newKoP(t, 11000)
	scusKoP.Set("orders", "topic-1", 0, 10900)
	wusKoP.Set("orders", "topic-1", 0, 500)
	scus := fakes.NewMemReader(8).Commit(commit("orders", 0, 500), commit("orders", 0, 10900))
	wus := fakes.NewMemReader(8).Commit(commit("orders", 0, 500), commit("orders", 0, 10900))
	rep, err := Run(context.Background(), []Cluster{
		{Name: "scus", KafkaNamespace: "public/default", Reader: scus, Fetcher: fetcher(t, scusKoP), Replication: StaticReplication{}},
		{Name: "wus", KafkaNamespace: "public/default", Reader: wus, Fetcher: fetcher(t, wusKoP), Replication: StaticReplication{}},
	}, Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 1 {
		t.Fatalf("rows %+v errors %+v", rep.Rows, rep.Errors)
	}
	r := rep.Rows[0]
	s, w := r.Cell("scus"), r.Cell("wus")
	if r.Status != verdict.StatusStaleCache || s.Status != verdict.StatusOK || w.Status != verdict.StatusStaleCache ||
		*w.Cached != 500 || *w.Persisted != 10900 || *s.Cached != 10900 || *w.LogEndOffset != 11000 || *w.Lag != 10500 ||
		r.Topic != "topic-1" || r.OffsetsPartition != loader.PartitionFor("orders", 8) || rep.ExitCode != outcome.Found {
		t.Errorf("%+v\nscus %+v\nwus %+v exit %d", r, s, w, rep.ExitCode)
	}
	// Only the group's offsets partition was read.
	if len(scus.Reads) != 0 {
		// a filter was not given: all 8 partitions
		if len(scus.Reads) != 8 {
			t.Errorf("reads %v", scus.Reads)
		}
	}
	rep2, _ := Run(context.Background(), []Cluster{{Name: "scus", Reader: wus, Fetcher: fetcher(t, wusKoP)}},
		Options{Now: testNow, Groups: []string{"orders"}, FailOn: []verdict.Status{verdict.StatusDiverged}})
	if rep2.ExitCode != outcome.OK || rep2.Rows[0].Status != verdict.StatusStaleCache {
		t.Errorf("fail-on diverged only: exit %d %+v", rep2.ExitCode, rep2.Rows)
	}
	if wus.Reads[loader.PartitionFor("orders", 8)] != 2 || len(wus.Reads) != 8 {
		t.Errorf("literal group must read only its partition: %v", wus.Reads)
	}
}

func TestCoordinatorLoadingRetriedThenUnavailable(t *testing.T) {
	k := newKoP(t, 10)
	k.Set("a", "topic-1", 0, 5)
	k.Set("b", "topic-1", 0, 6)
	k.SetLoading("a", 2)  // answers after two retries
	k.SetLoading("b", -1) // never
	r := fakes.NewMemReader(8).Commit(commit("a", 0, 5), commit("b", 0, 6))
	f := fetcher(t, k)
	f.CoordinatorWait = 1500 * time.Millisecond
	start := time.Now()
	rep, err := Run(context.Background(), []Cluster{{Name: "scus", KafkaNamespace: "public/default", Reader: r, Fetcher: f}}, Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("retry not bounded: %v", time.Since(start))
	}
	got := map[string]verdict.Status{}
	for _, row := range rep.Rows {
		got[row.Group] = row.Status
	}
	if got["a"] != verdict.StatusOK || got["b"] != verdict.StatusCoordinatorUnavailable || rep.ExitCode != outcome.Found {
		t.Errorf("%v exit %d %+v", got, rep.ExitCode, rep.Rows)
	}
}

func TestUnreachableCluster(t *testing.T) {
	k := newKoP(t, 10)
	k.Set("g", "topic-1", 0, 7)
	ok := fakes.NewMemReader(8).Commit(commit("g", 0, 7))
	dead := fakes.NewMemReader(8)
	dead.Err = errors.New("dial tcp 127.0.0.1:1: connection refused")
	rep, err := Run(context.Background(), []Cluster{
		{Name: "scus", KafkaNamespace: "public/default", Reader: ok, Fetcher: fetcher(t, k)},
		{Name: "wus", KafkaNamespace: "public/default", Reader: dead},
	}, Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ExitCode != outcome.Unreachable || len(rep.Errors) != 1 || rep.Errors[0].Cluster != "wus" || len(rep.Rows) != 1 {
		t.Fatalf("%+v", rep)
	}
	s, w := rep.Rows[0].Cell("scus"), rep.Rows[0].Cell("wus")
	if s.Status != verdict.StatusOK || *s.Persisted != 7 || *s.Cached != 7 || w.Status != verdict.StatusError || w.Error == "" {
		t.Errorf("scus %+v wus %+v", s, w)
	}
}

func TestReplicationLagAndMissing(t *testing.T) {
	p := loader.PartitionFor("g", 8)
	scus := fakes.NewMemReader(8).Commit(commit("g", 0, 20), commit("a", 0, 3))
	wus := fakes.NewMemReader(8).Commit(commit("g", 0, 10))
	run := func(backlog int64) *Report {
		rep, err := Run(context.Background(), []Cluster{
			{Name: "scus", Reader: scus, Replication: StaticReplication{p: {"wus": {Backlog: backlog, Connected: true}}}},
			{Name: "wus", Reader: wus, Replication: StaticReplication{}},
		}, Options{Now: testNow, Source: "scus", Topics: []string{"topic-*"}})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	rep := run(4)
	st := map[string]verdict.Status{}
	for _, r := range rep.Rows {
		st[r.Group] = r.Status
	}
	if st["g"] != verdict.StatusReplicationLag || st["a"] != verdict.StatusMissing {
		t.Errorf("%v", st)
	}
	rep = run(0)
	if rep.Rows[1].Group != "g" || rep.Rows[1].Status != verdict.StatusDiverged {
		t.Errorf("%+v", rep.Rows[1])
	}
	if _, err := Run(context.Background(), []Cluster{{Name: "scus", Reader: scus}}, Options{Now: testNow, Source: "nope"}); err == nil {
		t.Error("unknown source accepted")
	}
}

// TestMisaligned: scus held 10 messages before replication began, so wus numbers every
// later message 10 lower; the commit replicated from scus names another message on wus.
func TestMisaligned(t *testing.T) {
	scus := fakes.NewMemReader(8).Commit(commit("g", 0, 60))
	wus := fakes.NewMemReader(8).Replicated("scus", commit("g", 0, 60))
	copies := func(wusIDs []uint64) []Cluster {
		return []Cluster{
			{Name: "scus", Reader: scus, Copies: fakes.MemCopies{Topics: map[string][]uint64{"topic-1": fakes.Sequence(0, 100)}}},
			{Name: "wus", Reader: wus, Copies: fakes.MemCopies{Topics: map[string][]uint64{"topic-1": wusIDs}}},
		}
	}
	rep, _ := Run(context.Background(), copies(fakes.Sequence(10, 100)), Options{Now: testNow})
	r := rep.Rows[0]
	c := r.Cell("wus")
	if r.Status != verdict.StatusMisaligned || c.Status != verdict.StatusMisaligned || c.Origin != "scus" ||
		c.Translated == nil || *c.Translated != 50 || rep.ExitCode != outcome.Found {
		t.Fatalf("row %s, wus %+v, exit %d", r.Status, c, rep.ExitCode)
	}
	for _, want := range []string{"scus offset 60 is wus offset 50", "10 consumed messages are not on wus", "kop-offsets failover --source scus --target wus --group g"} {
		if !strings.Contains(c.Detail, want) {
			t.Errorf("detail %q lacks %q", c.Detail, want)
		}
	}
	if sc := r.Cell("scus"); sc.Status != verdict.StatusOK || sc.Origin != "" || sc.Translated != nil {
		t.Errorf("scus %+v", sc)
	}

	// Aligned copies: the number means the same message, the row is ok.
	rep, _ = Run(context.Background(), copies(fakes.Sequence(0, 100)), Options{Now: testNow})
	if c := rep.Rows[0].Cell("wus"); rep.Rows[0].Status != verdict.StatusOK || c.Translated == nil || *c.Translated != 60 {
		t.Fatalf("aligned: %s %+v", rep.Rows[0].Status, c)
	}
	// --alignment=false: not looked at.
	rep, _ = Run(context.Background(), copies(fakes.Sequence(10, 100)), Options{Now: testNow, SkipAlignment: true})
	if c := rep.Rows[0].Cell("wus"); rep.Rows[0].Status != verdict.StatusOK || c.Translated != nil {
		t.Fatalf("skipped: %s %+v", rep.Rows[0].Status, c)
	}
	// After a failover: wus holds its own record at the translated 50. The numbers differ
	// by design; compared in each cluster's numbering the row is ok, not diverged.
	failedOver := copies(fakes.Sequence(10, 100))
	failedOver[1].Reader = fakes.NewMemReader(8).Replicated("scus", commit("g", 0, 60)).Commit(commit("g", 0, 50))
	rep, _ = Run(context.Background(), failedOver, Options{Now: testNow})
	if r := rep.Rows[0]; r.Status != verdict.StatusOK || rep.ExitCode != outcome.OK {
		t.Fatalf("after failover: %s scus %+v wus %+v", r.Status, r.Cell("scus"), r.Cell("wus"))
	}
	// Without alignment the raw numbers disagree.
	rep, _ = Run(context.Background(), failedOver, Options{Now: testNow, SkipAlignment: true})
	if r := rep.Rows[0]; r.Status != verdict.StatusDiverged {
		t.Fatalf("after failover, raw: %s", r.Status)
	}
	// No way to read wus's copy: unknown, said so, not guessed.
	cls := copies(nil)
	cls[1].Copies = nil
	rep, _ = Run(context.Background(), cls, Options{Now: testNow})
	if c := rep.Rows[0].Cell("wus"); rep.Rows[0].Status != verdict.StatusOK || !strings.HasPrefix(c.Alignment, "unknown: cluster wus: no Kafka listener") {
		t.Fatalf("unknown: %s %+v", rep.Rows[0].Status, c)
	}
}

func TestGroups(t *testing.T) {
	k := newKoP(t, 1)
	k.Set("live", "topic-1", 0, 1) // KoP lists the groups of its cache
	r := fakes.NewMemReader(8).Commit(commit("live", 0, 1), commit("old", 0, 4))
	f := fetcher(t, k)
	f.Describe = true
	rep := Groups(context.Background(), []Cluster{{Name: "scus", Reader: r, Fetcher: f}}, nil, 2)
	if len(rep.Groups) != 2 || rep.Groups[0].Group != "live" || rep.Groups[0].Clusters["scus"].Where != WhereBoth ||
		rep.Groups[1].Clusters["scus"].Where != WherePersisted || *rep.Groups[0].Clusters["scus"].State != "Empty" || rep.ExitCode != 0 {
		t.Errorf("%+v", rep)
	}
}

// testNow is an hour after the tests' commits (their expiry is 3 days after them).
var testNow = time.UnixMilli(1700000000000).Add(time.Hour)

// KoP keeps answering "loading" for offsets partition 3 (it dropped the load): check names
// the partition, with the answer and the fix, apart from the rows, and exits 1.
func TestUnservedPartition(t *testing.T) {
	k := newKoP(t, 10)
	k.SetLoading(loader.ProbeGroup(3, 8), -1) // forever
	g := groupIn3()
	k.SetLoading(g, -1)
	rd := fakes.NewMemReader(8).Commit(commit(g, 0, 5))
	owner := func(_ context.Context, p int32) (string, error) { return fmt.Sprintf("broker-of-%d:8080", p), nil }
	rep, err := Run(context.Background(), []Cluster{{Name: "scus", Reader: rd, Fetcher: fetcher(t, k), Owner: owner}}, Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Unserved) != 1 || rep.Unserved[0].OffsetsPartition != 3 || rep.Unserved[0].Cluster != "scus" || rep.Unserved[0].Owner != "broker-of-3:8080" ||
		!strings.Contains(rep.Unserved[0].Answer, "COORDINATOR_LOAD_IN_PROGRESS") || !strings.Contains(rep.Unserved[0].Fix, "reload --cluster scus --partition 3") {
		t.Fatalf("unserved: %+v", rep.Unserved)
	}
	if rep.ExitCode != outcome.Found || rep.Rows[0].Status != verdict.StatusCoordinatorUnavailable {
		t.Fatalf("exit %d, rows %+v", rep.ExitCode, rep.Rows)
	}
	// The probe groups are no rows.
	if len(rep.Rows) != 1 {
		t.Fatalf("rows: %+v", rep.Rows)
	}
}

// groupIn3 is a group of offsets partition 3 of 8.
func groupIn3() string {
	for i := 0; ; i++ {
		if g := fmt.Sprintf("g-%d", i); loader.PartitionFor(g, 8) == 3 {
			return g
		}
	}
}

// brokerDown is a fake KoP on two brokers serving 500 to group up (coordinated by broker 0)
// and down (broker 1), with broker 1 down, and a fetcher that gives up on it quickly.
func brokerDown(t *testing.T) (k *fakes.KoP, f *kop.Fetcher, up, down string) {
	k = fakes.NewKoPBrokers(t, 2, "topic-1")
	for i := 0; up == "" || down == ""; i++ {
		switch g := fmt.Sprintf("g-%d", i); {
		case k.Cluster.CoordinatorFor(g) == 0 && up == "":
			up = g
		case k.Cluster.CoordinatorFor(g) == 1 && down == "":
			down = g
		}
	}
	for _, g := range []string{up, down} {
		k.Set(g, "topic-1", 0, 500)
	}
	k.SetBrokerDown(1, true)
	f = k.Fetcher(t, time.Second, append(kop.ClientOpts(5*time.Second), kgo.RequestRetries(2),
		kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }))...)
	return k, f, up, down
}

// TestOneBrokerDownOthersAnswer: KoP on two brokers, one of them down. The groups the other
// broker coordinates are still listed, asked and judged (a stale cache found); the down
// broker is named and the run is unreachable (exit 3), not blind on the whole cluster.
func TestOneBrokerDownOthersAnswer(t *testing.T) {
	k, f, up, down := brokerDown(t)
	k.SetEnd("topic-1", 0, 11000)
	reader := fakes.NewMemReader(8).Commit(commit(up, 0, 10900), commit(down, 0, 10900))
	rep, err := Run(context.Background(), []Cluster{{Name: "wus", KafkaNamespace: "public/default", Reader: reader, Fetcher: f}}, Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	byGroup := map[string]verdict.Row{}
	for _, r := range rep.Rows {
		byGroup[r.Group] = r
	}
	if r := byGroup[up]; r.Status != verdict.StatusStaleCache || *r.Cell("wus").Cached != 500 {
		t.Errorf("the answering broker's group: %+v %+v", r, r.Cell("wus"))
	}
	if r := byGroup[down]; r.Status != verdict.StatusError {
		t.Errorf("the down broker's group: %+v %+v", r, r.Cell("wus"))
	}
	named := false
	for _, e := range rep.Errors {
		named = named || (e.Cluster == "wus" && strings.Contains(e.Error, "broker 1"))
	}
	if !named || rep.ExitCode != outcome.Unreachable {
		t.Errorf("errors %+v exit %d: want the down broker named and exit %d", rep.Errors, rep.ExitCode, outcome.Unreachable)
	}
}

// A group whose coordinator is down, on a cluster whose offsets topic is unreadable too (a
// crashed broker still owns an offsets partition), has no row; check names it in a warning
// (seen on the 2x2 KoP lab with one broker killed: the named groups vanished).
func TestOneBrokerDownTopicUnreadableNamesRowlessGroups(t *testing.T) {
	_, f, up, down := brokerDown(t)
	reader := fakes.NewMemReader(8)
	reader.Err = errors.New("create reader: connection error")
	rep, err := Run(context.Background(), []Cluster{{Name: "wus", KafkaNamespace: "public/default", Reader: reader, Fetcher: f}},
		Options{Now: testNow, Groups: []string{up, down}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 1 || rep.Rows[0].Group != up || *rep.Rows[0].Cell("wus").Cached != 500 {
		t.Errorf("rows %+v: want only the answering broker's %s", rep.Rows, up)
	}
	named := slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.Contains(w, "no row") && strings.Contains(w, down) })
	if !named || rep.ExitCode != outcome.Unreachable {
		t.Errorf("warnings %q exit %d: want %s named as rowless, exit %d", rep.Warnings, rep.ExitCode, down, outcome.Unreachable)
	}
}
