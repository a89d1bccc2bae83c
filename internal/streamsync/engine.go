// Package streamsync is sync mode's engine (watch --sync): it follows every synced cluster's
// offsets topic as it lands (a Store per cluster, fed by watch's followers), and a group's own
// commit, the moment it is read, makes the group's sync due. Due groups are coalesced for a
// short Window (a group committing every 10 ms costs one OffsetCommit per window and target,
// the latest), then decided and translated by package offsetsync from the newest state of
// every cluster, and committed through KoP's OffsetCommit on every target at once, at most
// MaxInFlight groups in flight. Who a group's source is comes from the stream itself (the
// newest own commit) and from DescribeGroups, asked only when the stream says membership may
// have changed (membership). The engine keeps no state of its own beyond what it read: a
// restart replays every offsets topic and syncs every group once.
//
// The path of one commit: the group commits on scus -> KoP appends it to scus's offsets topic
// -> watch's follower of that partition reads it (pulsarx.Reader.Tail) -> Store.Live feeds
// the partition's Replayer and marks the group due -> after Window, step takes the due
// groups: views from every Store, DescribeGroups where membership is not known, Plan
// (offsetsync: source, translation by message identity, the rules) -> Plan.Apply: one
// OffsetCommit per target -> KoP serves it at once and appends it, marked, to the target's
// offsets topic -> the target's Store reads it back (marked: wakes nothing).
package streamsync

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/match"
	"github.com/kop-offsets/kop-offsets/internal/offsetsync"
)

// Describer answers DescribeGroups on one cluster (kop.KafkaGroups).
type Describer interface {
	DescribeGroups(ctx context.Context, groups []string) (map[string]kop.GroupActivity, error)
}

// Lease is a cluster's writer lease (*lease.Lease): held while this process syncs.
type Lease interface {
	Acquire(ctx context.Context) error
	Release()
}

// Cluster is one synced cluster.
type Cluster struct {
	Name           string
	KafkaNamespace string
	Committer      offsetsync.Committer
	Members        Describer
	Data           align.Source // the cluster's copies of the data topics, to translate
	Lease          Lease        // nil: none
}

// Defaults of Options.
const (
	DefaultWindow      = 5 * time.Millisecond
	DefaultMaxInFlight = 128
	DefaultRetry       = time.Second
	DefaultMembersTTL  = time.Minute
	DefaultCallTimeout = 5 * time.Second
	DefaultReadWait    = 500 * time.Millisecond
)

// Options tune an Engine; the zero value works.
type Options struct {
	Groups, Topics []string // globs; none: every group, every topic
	// Window is how long a due group waits for more of its commits before it is synced.
	Window time.Duration
	// MaxInFlight bounds the groups whose OffsetCommits are in flight at once.
	MaxInFlight int
	// Retry is when a group left for later (a failure, data not replicated yet, split
	// brain, members unknown) is synced again, and how often a standby tries the leases.
	Retry time.Duration
	// MembersTTL bounds how long a DescribeGroups answer is used without the stream
	// saying anything of the group.
	MembersTTL  time.Duration
	CallTimeout time.Duration // each DescribeGroups and lease call
	// ReadWait bounds how long a step waits for the reads of the copies its groups
	// translate from: a read still running then goes on in the background, and only the
	// groups whose keys it reads wait for it (a copy that hangs stalls no other group).
	ReadWait         time.Duration
	SplitBrainWindow time.Duration
	MaxMessages      int64 // first translation's reads per copy (align.DefaultMaxMessages)
	DryRun           bool  // decide and report, commit nothing
	// Now is the clock commit timestamps are compared with (split brain, the Pool's
	// sweeps); the engine's own timing (windows, retries, leases) is the wall clock.
	Now      func() time.Time
	Observer Observer // nil: nothing observed
}

// Observer is told what the engine does (watch's metrics and logs). Its methods are called
// from one goroutine at a time.
type Observer interface {
	Result(res offsetsync.Result)
	// Active: whether this process holds every lease; cluster and err say why not.
	Active(active bool, cluster string, err error)
	DescribeFailed(cluster string, groups int, err error)
	Step(st StepStats)
	// Received: n offsets of a synced group's own commits on cluster were read (what its
	// syncs carry: coalesced, the offsets committed for them are never more).
	Received(cluster string, n int)
}

// StepStats is what one step did and where its time went.
type StepStats struct {
	Groups, Sent int
	// Apply is the time the step waited for room among the commits in flight (it does not
	// wait for its own commits).
	Describe, Read, Plan, Apply, All time.Duration
}

// Engine syncs groups as their commits are read. New, then Store(c) to its followers, then
// Run; SetUp and Resync from the watch cycle.
type Engine struct {
	o        Options
	clusters []Cluster
	stores   map[string]*Store
	syncer   *offsetsync.Syncer
	members  *membership
	obs      Observer
	kick     chan struct{}

	q *queue

	health *health

	sem       chan struct{}  // a slot per group whose commits are in flight
	flying    sync.WaitGroup // the goroutines of those commits
	recording sync.Mutex     // record, one result at a time

	leases *leases
	acked  acked // commits acknowledged, not read back yet
	asker  *describer
}

// New returns the engine of clusters.
func New(clusters []Cluster, o Options) *Engine {
	o.Window = cmp.Or(o.Window, DefaultWindow)
	o.MaxInFlight = cmp.Or(o.MaxInFlight, DefaultMaxInFlight)
	o.Retry = cmp.Or(o.Retry, DefaultRetry)
	o.MembersTTL = cmp.Or(o.MembersTTL, DefaultMembersTTL)
	o.CallTimeout = cmp.Or(o.CallTimeout, DefaultCallTimeout)
	o.ReadWait = cmp.Or(o.ReadWait, DefaultReadWait)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	o.Observer = &serialObserver{o: o.Observer}
	pool := &align.Pool{Sources: map[string]align.Source{}, MaxMessages: o.MaxMessages, Now: o.Now}
	e := &Engine{o: o, stores: map[string]*Store{}, members: newMembership(o.MembersTTL), obs: o.Observer,
		kick: make(chan struct{}, 1), q: newQueue(o.Retry), health: newHealth(), sem: make(chan struct{}, o.MaxInFlight),
		syncer: &offsetsync.Syncer{Pool: pool, Window: o.SplitBrainWindow, Now: o.Now}}
	e.leases = &leases{e: e}
	for _, c := range clusters {
		if o.DryRun {
			c.Committer = dryCommitter{}
		}
		e.clusters = append(e.clusters, c)
		e.stores[c.Name] = NewStore(c.Name, engineEvents{e})
		pool.Sources[c.Name] = c.Data
		e.syncer.Clusters = append(e.syncer.Clusters, offsetsync.Cluster{Name: c.Name, KafkaNamespace: c.KafkaNamespace, Committer: c.Committer})
	}
	e.asker = &describer{clusters: e.clusters, members: e.members, health: e.health, obs: e.obs,
		callTimeout: o.CallTimeout, retry: o.Retry, all: e.all}
	return e
}

// Store returns the Store of cluster name (nil when it is not synced).
func (e *Engine) Store(name string) *Store { return e.stores[name] }

// engineEvents is the Engine as its Stores' Events.
type engineEvents struct{ e *Engine }

func (ev engineEvents) Dirty(cluster string, groups []string, members bool) {
	ev.e.dirty(cluster, groups, members)
}
func (ev engineEvents) Wake() { ev.e.wake() }

// Received tells the Observer of the commits read of a group synced (Options.Groups).
func (ev engineEvents) Received(cluster, group string, n int) {
	if match.Any(ev.e.o.Groups, group) {
		ev.e.obs.Received(cluster, n)
	}
}

// dirty makes groups due (events, from the Stores).
func (e *Engine) dirty(cluster string, groups []string, members bool) {
	if members {
		e.members.forget(cluster, groups)
	}
	e.q.add(slices.DeleteFunc(slices.Clone(groups), func(g string) bool { return !match.Any(e.o.Groups, g) }))
	e.wake()
}

func (e *Engine) wake() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// SetUp records whether cluster answers (the watch cycle's probe). A cluster back, or seen
// up for the first time, makes every group due: it missed what the others committed.
func (e *Engine) SetUp(cluster string, up bool) {
	if e.health.set(cluster, up) {
		e.all()
	}
	if !up {
		e.health.failed(cluster, time.Now(), e.o.Retry) // asked again once the pause ends
	}
	e.wake()
}

// Resync makes every group due and asks every group's members again.
func (e *Engine) Resync() {
	e.members.clear()
	e.all()
}

// all makes every group any Store holds due.
func (e *Engine) all() {
	var groups []string
	for _, s := range e.stores {
		groups = append(groups, s.Groups()...)
	}
	e.dirty("", groups, false)
}

// ready reports whether every cluster's state is known and every cluster up has replayed its
// offsets topic.
func (e *Engine) ready() bool {
	for _, c := range e.clusters {
		u, known := e.health.state(c.Name)
		if !known || (u && !e.stores[c.Name].Complete()) {
			return false
		}
	}
	return true
}

// dryCommitter commits nothing (DryRun).
type dryCommitter struct{}

func (dryCommitter) Commit(context.Context, string, []kop.SyncCommit) error   { return nil }
func (dryCommitter) Delete(context.Context, string, map[string][]int32) error { return nil }
func (dryCommitter) DeleteGroup(context.Context, string) error                { return nil }

// serialObserver calls o one call at a time: results are recorded from the goroutines of
// the commits in flight, the rest from the step's.
type serialObserver struct {
	mu sync.Mutex
	o  Observer
}

func (s *serialObserver) Result(res offsetsync.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.o.Result(res)
}
func (s *serialObserver) Active(active bool, cluster string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.o.Active(active, cluster, err)
}
func (s *serialObserver) DescribeFailed(cluster string, groups int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.o.DescribeFailed(cluster, groups, err)
}
func (s *serialObserver) Step(st StepStats) { s.mu.Lock(); defer s.mu.Unlock(); s.o.Step(st) }
func (s *serialObserver) Received(cluster string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.o.Received(cluster, n)
}

type nopObserver struct{}

func (nopObserver) Result(offsetsync.Result)          {}
func (nopObserver) Active(bool, string, error)        {}
func (nopObserver) DescribeFailed(string, int, error) {}
func (nopObserver) Step(StepStats)                    {}
func (nopObserver) Received(string, int)              {}
