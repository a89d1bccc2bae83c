package streamsync

// Fakes shared by this package's tests: a cluster's offsets topic fed into its Store as
// watch's followers feed it, a KoP front door (Committer and Describer) that records what it
// is asked, a Lease, an Observer, and an engine of two clusters, scus and wus, whose copies of
// topic-1 differ by 300 messages (scus offset N is wus offset N-300).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
	"github.com/kop-offsets/kop-offsets/internal/offsetsync"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

const (
	testParts = int32(4) // offsets-topic partitions of every test cluster
	testNS    = "public/default"
	topic1    = "persistent://public/default/topic-1"
	// extra is how many messages of topic-1 scus holds before the ones both hold.
	extra = 300
)

var errDown = errors.New("connection refused")

// commitBase is when the commits the tests write were made: an hour ago, one millisecond per
// offset, so a higher offset is a newer commit.
var commitBase = time.Now().Add(-time.Hour).Truncate(time.Second)

// commitOf is the group's own commit of offset off on topic-1 partition p.
func commitOf(group string, p int32, off int64) kop.OffsetCommit {
	return kop.OffsetCommit{Group: group, Topic: topic1, Partition: p, Offset: off,
		CommitTime: commitBase.Add(time.Duration(off) * time.Millisecond)}
}

// groupMessage is a group record of group with members members, as KoP writes one when a
// rebalance completes or the group goes empty (as watch's memTail.group builds it).
func groupMessage(p int32, seq int, group string, members int) loader.Message {
	key := (&kmsg.GroupMetadataKey{Version: 2, Group: group}).AppendTo(nil)
	v := kmsg.GroupMetadataValue{Version: 1, ProtocolType: "consumer", Generation: int32(seq + 1)}
	if members > 0 {
		v.Protocol, v.Leader = kmsg.StringPtr("range"), kmsg.StringPtr("m-0")
	}
	for i := range members {
		v.Members = append(v.Members, kmsg.GroupMetadataValueMember{MemberID: fmt.Sprintf("m-%d", i), ClientID: "c", ClientHost: "/127.0.0.1"})
	}
	val := kop.EncodeBatch(key, v.AppendTo(nil), time.Now())
	return loader.Message{Partition: p, MessageID: fmt.Sprintf("1:%d:%d:-1", seq, p), Key: kop.PulsarKey(group), Value: val}
}

// offsetsTopic numbers one cluster's offsets-topic messages per partition, in the order they
// are written, as a reader reads them.
type offsetsTopic struct {
	mu  sync.Mutex
	seq map[int32]int
}

func (o *offsetsTopic) next(p int32) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seq == nil {
		o.seq = map[int32]int{}
	}
	n := o.seq[p]
	o.seq[p]++
	return n
}

// commitMessage is c as the reader of its partition reads it, and that partition.
func (o *offsetsTopic) commitMessage(c kop.OffsetCommit) (int32, loader.Message) {
	p := loader.PartitionFor(c.Group, testParts)
	return p, kop.Message(p, o.next(p), c)
}

// groupsWithPartitions returns n group names, prefix-numbered, whose offsets partitions
// (of testParts) are all equal (same) or all different (!same).
func groupsWithPartitions(prefix string, n int, same bool) []string {
	var out []string
	seen := map[int32]bool{}
	var first int32 = -1
	for i := 0; len(out) < n && i < 10_000; i++ {
		g := fmt.Sprintf("%s%d", prefix, i)
		p := loader.PartitionFor(g, testParts)
		switch {
		case same && first < 0:
			first = p
		case same && p != first:
			continue
		case !same && seen[p]:
			continue
		}
		seen[p] = true
		out = append(out, g)
	}
	return out
}

// commitCall is one OffsetCommit the fake KoP was sent.
type commitCall struct {
	group string
	cs    []kop.SyncCommit
}

// fakeCluster is one cluster: its offsets topic, fed into its Store as watch's followers
// do, and its KoP front door. A commit sent to it is appended to its offsets topic and fed to
// its Store as a live message, as KoP does (the tool's commits come back, marked).
type fakeCluster struct {
	name  string
	store *Store
	topic offsetsTopic
	feed  sync.Mutex // one message fed at a time, in the order they are numbered

	mu            sync.Mutex
	members       map[string]int
	describeErr   error
	describeCalls int
	described     [][]string
	commits       []commitCall
	commitErr     error
	// describing, when set, is called at the start of each DescribeGroups, outside mu.
	describing func()
	// holdReadBack: the commits sent are not read back live until releaseReadBack (a
	// target's offsets topic read back later than the commit is acknowledged).
	holdReadBack bool
	held         []kop.OffsetCommit
}

func (f *fakeCluster) setHoldReadBack(hold bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.holdReadBack = hold
}

// releaseReadBack reads the held commits back live.
func (f *fakeCluster) releaseReadBack() {
	f.mu.Lock()
	held := f.held
	f.held, f.holdReadBack = nil, false
	f.mu.Unlock()
	f.live(held...)
}

func newFakeCluster(name string) *fakeCluster {
	return &fakeCluster{name: name, members: map[string]int{}}
}

// start replays the cluster's offsets topic, cs its messages, and catches every partition up.
func (f *fakeCluster) start(cs ...kop.OffsetCommit) {
	f.feed.Lock()
	defer f.feed.Unlock()
	f.store.SetPartitions(testParts)
	for p := range testParts {
		f.store.Begin(p)
	}
	for _, c := range cs {
		p, m := f.topic.commitMessage(c)
		f.store.Replayed(p, m)
	}
	for p := range testParts {
		f.store.CaughtUp(p)
	}
}

// live feeds the commits as read live from the offsets topic.
func (f *fakeCluster) live(cs ...kop.OffsetCommit) {
	f.feed.Lock()
	defer f.feed.Unlock()
	for _, c := range cs {
		p, m := f.topic.commitMessage(c)
		feedLive(f.store, p, pulsarx.TailMessage{Message: m})
	}
}

// liveGroup feeds a group record of group, as read live.
func (f *fakeCluster) liveGroup(group string, members int) {
	f.feed.Lock()
	defer f.feed.Unlock()
	p := loader.PartitionFor(group, testParts)
	feedLive(f.store, p, pulsarx.TailMessage{Message: groupMessage(p, f.topic.next(p), group, members)})
}

func (f *fakeCluster) setMembers(group string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.members[group] = n
}

func (f *fakeCluster) setDescribeErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.describeErr = err
}

func (f *fakeCluster) setCommitErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.commitErr = err
}

func (f *fakeCluster) Commit(_ context.Context, group string, cs []kop.SyncCommit) error {
	f.mu.Lock()
	err := f.commitErr
	f.mu.Unlock()
	if err != nil {
		return err
	}
	// KoP appends the commit to the offsets topic: read back live, before the call returns
	// (unless held).
	var back []kop.OffsetCommit
	for _, c := range cs {
		back = append(back, kop.OffsetCommit{Group: group, Topic: "persistent://" + testNS + "/" + c.Topic, Partition: c.Partition,
			Offset: c.Offset, Metadata: c.Metadata, CommitTime: time.Now()})
	}
	f.mu.Lock()
	hold := f.holdReadBack
	if hold {
		f.held = append(f.held, back...)
	}
	f.mu.Unlock()
	if !hold {
		f.live(back...)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.commits = append(f.commits, commitCall{group: group, cs: slices.Clone(cs)})
	return nil
}

func (f *fakeCluster) Delete(context.Context, string, map[string][]int32) error { return nil }
func (f *fakeCluster) DeleteGroup(context.Context, string) error                { return nil }

func (f *fakeCluster) DescribeGroups(_ context.Context, groups []string) (map[string]kop.GroupActivity, error) {
	if f.describing != nil {
		f.describing()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.describeCalls++
	f.described = append(f.described, slices.Clone(groups))
	if f.describeErr != nil {
		return nil, f.describeErr
	}
	out := map[string]kop.GroupActivity{}
	for _, g := range groups {
		out[g] = kop.GroupActivity{State: "Empty", Members: f.members[g]}
	}
	return out, nil
}

// commitsOf returns every offset committed for group, in the order sent.
func (f *fakeCluster) commitsOf(group string) []kop.SyncCommit {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []kop.SyncCommit
	for _, c := range f.commits {
		if c.group == group {
			out = append(out, c.cs...)
		}
	}
	return out
}

// commitCalls is how many OffsetCommits were sent.
func (f *fakeCluster) commitCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.commits)
}

// describes returns how many DescribeGroups were asked, and the groups of the last.
func (f *fakeCluster) describes() (int, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var last []string
	if len(f.described) > 0 {
		last = f.described[len(f.described)-1]
	}
	return f.describeCalls, last
}

// hasCommit holds when group's offset off was committed on topic-1 partition p of f.
func (f *fakeCluster) hasCommit(group string, p int32, off int64) func() bool {
	return func() bool {
		for _, c := range f.commitsOf(group) {
			if c.Topic == "topic-1" && c.Partition == p && c.Offset == off {
				return true
			}
		}
		return false
	}
}

// fakeLease is a writer lease another process may hold (Acquire then fails with err).
type fakeLease struct {
	mu       sync.Mutex
	err      error
	attempts int
	held     bool
	releases int
}

func (l *fakeLease) Acquire(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.attempts++
	if l.err != nil {
		return l.err
	}
	l.held = true
	return nil
}

func (l *fakeLease) Release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held = false
	l.releases++
}

func (l *fakeLease) setErr(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.err = err
}

func (l *fakeLease) state() (attempts int, held bool, releases int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.attempts, l.held, l.releases
}

type activeCall struct {
	active  bool
	cluster string
	err     error
}

type describeFailure struct {
	cluster string
	groups  int
	err     error
}

// stepSeen is one Step, with the queue as it was when the step reported (nothing of the
// engine runs between the step's commits and its report).
type stepSeen struct {
	st        StepStats
	due, late int
}

// fakeObserver records what the engine reports; safe to read from the test goroutine.
type fakeObserver struct {
	q *queue // the engine's, set after New
	// describeFailed, when set, is called at the start of each DescribeFailed, outside mu.
	describeFailed func()

	mu       sync.Mutex
	results  []offsetsync.Result
	actives  []activeCall
	failures []describeFailure
	steps    []stepSeen
	received map[string]int // by cluster
}

func (o *fakeObserver) Result(res offsetsync.Result) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.results = append(o.results, res)
}

func (o *fakeObserver) Active(active bool, cluster string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.actives = append(o.actives, activeCall{active, cluster, err})
}

func (o *fakeObserver) DescribeFailed(cluster string, groups int, err error) {
	if o.describeFailed != nil {
		o.describeFailed()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.failures = append(o.failures, describeFailure{cluster, groups, err})
}

func (o *fakeObserver) Step(st StepStats) {
	s := stepSeen{st: st}
	if o.q != nil {
		s.due, s.late = o.q.size()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.steps = append(o.steps, s)
}

func (o *fakeObserver) Received(cluster string, n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.received == nil {
		o.received = map[string]int{}
	}
	o.received[cluster] += n
}

// receivedOn is how many offsets of own commits were reported read on cluster.
func (o *fakeObserver) receivedOn(cluster string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.received[cluster]
}

// resultsOf returns the results reported for group.
func (o *fakeObserver) resultsOf(group string) []offsetsync.Result {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []offsetsync.Result
	for _, r := range o.results {
		if r.Group == group {
			out = append(out, r)
		}
	}
	return out
}

func (o *fakeObserver) activeCalls() []activeCall {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.actives)
}

func (o *fakeObserver) describeFailures() []describeFailure {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.failures)
}

func (o *fakeObserver) stepsSeen() []stepSeen {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.steps)
}

// engineEnv is an Engine of scus and wus with fake KoPs; Run runs once run is called.
type engineEnv struct {
	t         *testing.T
	e         *Engine
	scus, wus *fakeCluster
	obs       *fakeObserver
	ctx       context.Context
	stop      context.CancelFunc
	done      chan struct{}
}

// newEngineEnv builds the engine; scusLease and wusLease may be nil (no lease).
func newEngineEnv(t *testing.T, o Options, scusLease, wusLease Lease) *engineEnv {
	t.Helper()
	scus, wus := newFakeCluster("scus"), newFakeCluster("wus")
	obs := &fakeObserver{}
	o.Observer = obs
	ccs := []Cluster{
		{Name: "scus", KafkaNamespace: testNS, Committer: scus, Members: scus, Lease: scusLease,
			Data: fakes.MemCopies{Topics: map[string][]uint64{"topic-1": append(fakes.Sequence(1<<40, 1<<40+extra), fakes.Sequence(0, 20_000)...)}}},
		{Name: "wus", KafkaNamespace: testNS, Committer: wus, Members: wus, Lease: wusLease,
			Data: fakes.MemCopies{Topics: map[string][]uint64{"topic-1": fakes.Sequence(0, 20_000)}}},
	}
	e := New(ccs, o)
	obs.q = e.q
	scus.store, wus.store = e.Store("scus"), e.Store("wus")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	env := &engineEnv{t: t, e: e, scus: scus, wus: wus, obs: obs, ctx: ctx, stop: cancel}
	t.Cleanup(env.shutdown)
	return env
}

// up tells the engine both clusters answer.
func (env *engineEnv) up() {
	env.e.SetUp("scus", true)
	env.e.SetUp("wus", true)
}

// run starts Run; shutdown (at cleanup) stops it and waits for it.
func (env *engineEnv) run() {
	env.done = make(chan struct{})
	go func() {
		defer close(env.done)
		env.e.Run(env.ctx)
	}()
}

func (env *engineEnv) shutdown() {
	env.stop()
	if env.done == nil {
		return
	}
	select {
	case <-env.done:
	case <-time.After(5 * time.Second):
		env.t.Error("Run did not return within 5s of its context's end")
	}
}

// waitFor polls cond until it holds, failing the test after 5s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached after 5s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// marked is the metadata of the tool's commit of source offset src synced from cluster
// from, floored on nothing, of a source commit without metadata.
func marked(from string, src int64) string {
	return offsetsync.Mark{From: from, Source: src, HasFloor: true}.Metadata("")
}

// feedLive feeds s a live message as watch's follower does: decoded once, then handed over.
func feedLive(s *Store, p int32, tm pulsarx.TailMessage) {
	recs, _ := offsetlog.Decode(tm.Key, tm.Value)
	s.Live(p, tm, recs)
}
