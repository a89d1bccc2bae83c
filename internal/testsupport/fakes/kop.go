package fakes

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kop-offsets/kop-offsets/internal/kop"
)

// KoP is KoP's Kafka side: a kfake cluster whose group answers come from a table that stands
// for KoP's offsets cache, so that the product's own Kafka code (kop.Fetcher,
// reload.KafkaGroups) is what talks to it. It answers
//   - OffsetFetch with the cached offsets of each group (topics as stored, short names for
//     the default namespace as KoP answers them), COORDINATOR_LOAD_IN_PROGRESS while the group
//     is loading, NOT_COORDINATOR for an unserved group;
//   - DescribeGroups and ListGroups with the groups of the cache or with members: "Stable"
//     with members, else "Empty"; an unknown group is "Dead", as Kafka answers;
//   - ListOffsets (latest) with the log-end offsets set with SetEnd (0 when unset).
//
// Everything else (Metadata, FindCoordinator, ...) is kfake's own.
type KoP struct {
	Cluster *kfake.Cluster

	mu       sync.Mutex
	cache    map[string]map[string]map[int32]int64 // group -> topic -> partition -> offset
	members  map[string]int
	loading  map[string]int  // group -> remaining loading answers (-1: forever)
	unserved map[string]bool // groups answered NOT_COORDINATOR
	broken   bool            // every group answered GROUP_AUTHORIZATION_FAILED
	delay    time.Duration   // each OffsetFetch answer waits this long
	ends     map[string]map[int32]int64
	fetches  int
	asked    [][]string
	brokers  int              // kfake brokers; above 1 each answers only the groups it coordinates
	servedBy map[string]int32 // group -> the broker whose OffsetFetch answer served it last
	down     map[int32]bool   // brokers that close every connection (SetBrokerDown)
}

// NewKoP starts a one-broker fake KoP serving topics (3 partitions each; "topic-1" when
// none is given). It is closed when the test ends.
func NewKoP(t testing.TB, topics ...string) *KoP {
	t.Helper()
	return NewKoPBrokers(t, 1, topics...)
}

// NewKoPBrokers is NewKoP with n brokers, as KoP on n Pulsar brokers: a group is
// coordinated by one of them (kfake's FindCoordinator answer; MoveCoordinator moves it, as
// a bundle moving to another broker does), and the others answer its OffsetFetch with
// NOT_COORDINATOR, as KoP does for a partition its broker does not own.
func NewKoPBrokers(t testing.TB, n int, topics ...string) *KoP {
	t.Helper()
	if len(topics) == 0 {
		topics = []string{"topic-1"}
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(n), kfake.SeedTopics(3, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	k := &KoP{Cluster: c, cache: map[string]map[string]map[int32]int64{}, members: map[string]int{},
		loading: map[string]int{}, unserved: map[string]bool{}, ends: map[string]map[int32]int64{},
		brokers: n, servedBy: map[string]int32{}, down: map[int32]bool{}}
	k.control(kmsg.OffsetFetch, k.offsetFetch)
	k.control(kmsg.DescribeGroups, k.describeGroups)
	k.control(kmsg.ListGroups, k.listGroups)
	k.control(kmsg.ListOffsets, k.listOffsets)
	return k
}

func (k *KoP) control(key kmsg.Key, answer func(kmsg.Request) kmsg.Response) {
	k.Cluster.ControlKey(int16(key), func(req kmsg.Request) (kmsg.Response, error, bool) {
		k.Cluster.KeepControl()
		k.mu.Lock()
		down := k.down[k.Cluster.CurrentNode()]
		k.mu.Unlock()
		if down {
			return nil, errBrokerDown, true // kfake closes the connection
		}
		return answer(req), nil, true
	})
}

var errBrokerDown = errors.New("fake KoP: broker down")

// SetBrokerDown makes broker node close every connection that asks it for offsets, groups
// or log-end offsets, as a stopped broker that clients still know of.
func (k *KoP) SetBrokerDown(node int32, down bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.down[node] = down
}

// Client returns a client of this KoP capped at the request versions KoP speaks (OffsetFetch
// v8: topics by name), with opts added; it is closed when the test ends.
func (k *KoP) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(k.Cluster.ListenAddrs()...), kgo.MaxVersions(kversion.V3_6_0())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Admin is kadm over Client.
func (k *KoP) Admin(t testing.TB, opts ...kgo.Opt) *kadm.Client {
	t.Helper()
	return kadm.NewClient(k.Client(t, opts...))
}

// Fetcher is the product's fetcher over Client(t, opts...), waiting at most wait for a
// coordinator.
func (k *KoP) Fetcher(t testing.TB, wait time.Duration, opts ...kgo.Opt) *kop.Fetcher {
	t.Helper()
	cl := k.Client(t, opts...)
	return &kop.Fetcher{Admin: kadm.NewClient(cl), Client: cl, CoordinatorWait: wait}
}

// Set caches offset off of group on topic (as KoP names it: short in the default
// namespace) partition p.
func (k *KoP) Set(group, topic string, p int32, off int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	PutOffset(k.cache, group, topic, p, off)
}

// Get is what KoP caches (serves) of group on topic partition p, ok false when nothing.
func (k *KoP) Get(group, topic string, p int32) (int64, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	off, ok := k.cache[group][topic][p]
	return off, ok
}

// PutOffset sets cache[group][topic][p] to off, making the inner maps it needs: the cache of
// a fake KoP, group -> topic -> partition -> offset.
func PutOffset(cache map[string]map[string]map[int32]int64, group, topic string, p int32, off int64) {
	if cache[group] == nil {
		cache[group] = map[string]map[int32]int64{}
	}
	if cache[group][topic] == nil {
		cache[group][topic] = map[int32]int64{}
	}
	cache[group][topic][p] = off
}

// Drop forgets the cached offsets of group (KoP unloaded it, or it expired).
func (k *KoP) Drop(group string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.cache, group)
}

// SetMembers gives group n live members (0: none).
func (k *KoP) SetMembers(group string, n int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.members[group] = n
}

// SetLoading makes the next n OffsetFetch answers for group COORDINATOR_LOAD_IN_PROGRESS
// (-1: all of them, 0: none).
func (k *KoP) SetLoading(group string, n int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.loading[group] = n
}

// SetUnserved makes KoP answer NOT_COORDINATOR for group (its offsets partition is not
// served), or serve it again.
func (k *KoP) SetUnserved(group string, unserved bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.unserved[group] = unserved
}

// SetBroken makes KoP answer every group with an error that is no coordinator error.
func (k *KoP) SetBroken(broken bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.broken = broken
}

// SetDelay makes every OffsetFetch answer wait d (answers are given one at a time).
func (k *KoP) SetDelay(d time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.delay = d
}

// SetEnd sets the log-end offset of topic partition p.
func (k *KoP) SetEnd(topic string, p int32, end int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ends[topic] == nil {
		k.ends[topic] = map[int32]int64{}
	}
	k.ends[topic][p] = end
}

// Fetches counts the OffsetFetch requests answered.
func (k *KoP) Fetches() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.fetches
}

// TakeAsked returns the groups OffsetFetch asked for since the last call, sorted, once each.
func (k *KoP) TakeAsked() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var all []string
	for _, a := range k.asked {
		all = append(all, a...)
	}
	k.asked = nil
	slices.Sort(all)
	return slices.Compact(all)
}

// groupError is the error KoP answers for group, if any; a loading answer is counted.
func (k *KoP) groupError(group string, countLoading bool) int16 {
	switch {
	case k.broken:
		return kerr.GroupAuthorizationFailed.Code
	case k.unserved[group]:
		return kerr.NotCoordinator.Code
	}
	if n := k.loading[group]; n != 0 {
		if n > 0 && countLoading {
			k.loading[group] = n - 1
		}
		return kerr.CoordinatorLoadInProgress.Code
	}
	return 0
}

// MoveCoordinator makes another broker coordinate group (n > 1 brokers) and returns the
// new coordinator's node id. Clients that cached the old one get NOT_COORDINATOR from it.
func (k *KoP) MoveCoordinator(group string) int32 {
	was := k.Cluster.CoordinatorFor(group)
	for {
		k.Cluster.RehashCoordinators()
		if now := k.Cluster.CoordinatorFor(group); now != was || k.brokers < 2 {
			return now
		}
	}
}

// ServedBy is the broker whose OffsetFetch answer last served group without an error (-1:
// none yet).
func (k *KoP) ServedBy(group string) int32 {
	k.mu.Lock()
	defer k.mu.Unlock()
	if n, ok := k.servedBy[group]; ok {
		return n
	}
	return -1
}

func (k *KoP) offsetFetch(kr kmsg.Request) kmsg.Response {
	req := kr.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	node, coordinator := k.Cluster.CurrentNode(), map[string]int32{}
	if k.brokers > 1 {
		for _, rg := range req.Groups {
			coordinator[rg.Group] = k.Cluster.CoordinatorFor(rg.Group)
		}
		if req.Version < 8 {
			coordinator[req.Group] = k.Cluster.CoordinatorFor(req.Group)
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.delay > 0 {
		time.Sleep(k.delay)
	}
	k.fetches++
	if req.Version < 8 { // one group a request, as KoP 2.10 and 3.0 answer (v5, v7)
		k.asked = append(k.asked, []string{req.Group})
		if c, ok := coordinator[req.Group]; ok && c != node {
			resp.ErrorCode = kerr.NotCoordinator.Code
		} else if resp.ErrorCode = k.groupError(req.Group, true); resp.ErrorCode == 0 {
			for _, gt := range k.cachedTopics(req.Group) {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = gt.Topic
				for _, gp := range gt.Partitions {
					rp := kmsg.NewOffsetFetchResponseTopicPartition()
					rp.Partition, rp.Offset, rp.LeaderEpoch = gp.Partition, gp.Offset, gp.LeaderEpoch
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			k.servedBy[req.Group] = node
		}
		return resp
	}
	var asked []string
	for _, rg := range req.Groups {
		asked = append(asked, rg.Group)
		g := kmsg.NewOffsetFetchResponseGroup()
		g.Group = rg.Group
		if c, ok := coordinator[rg.Group]; ok && c != node {
			g.ErrorCode = kerr.NotCoordinator.Code
		} else if g.ErrorCode = k.groupError(rg.Group, true); g.ErrorCode == 0 {
			g.Topics = k.cachedTopics(rg.Group)
			k.servedBy[rg.Group] = node
		}
		resp.Groups = append(resp.Groups, g)
	}
	slices.Sort(asked)
	k.asked = append(k.asked, asked)
	return resp
}

func (k *KoP) cachedTopics(group string) []kmsg.OffsetFetchResponseGroupTopic {
	var out []kmsg.OffsetFetchResponseGroupTopic
	for _, topic := range sortedKeys(k.cache[group]) {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic = topic
		for _, p := range sortedKeys(k.cache[group][topic]) {
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, k.cache[group][topic][p], -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}

// state is the Kafka group state KoP would describe group with.
func (k *KoP) state(group string) string {
	switch _, cached := k.cache[group]; {
	case k.members[group] > 0:
		return "Stable"
	case cached:
		return "Empty"
	}
	return "Dead"
}

func (k *KoP) describeGroups(kr kmsg.Request) kmsg.Response {
	req := kr.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, name := range req.Groups {
		g := kmsg.NewDescribeGroupsResponseGroup()
		g.Group = name
		if g.ErrorCode = k.groupError(name, false); g.ErrorCode == 0 {
			g.State, g.ProtocolType = k.state(name), "consumer"
			for i := range k.members[name] {
				m := kmsg.NewDescribeGroupsResponseGroupMember()
				m.MemberID = name + "-member-" + string(rune('a'+i))
				g.Members = append(g.Members, m)
			}
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp
}

func (k *KoP) listGroups(kr kmsg.Request) kmsg.Response {
	resp := kr.(*kmsg.ListGroupsRequest).ResponseKind().(*kmsg.ListGroupsResponse)
	node := k.Cluster.CurrentNode()
	k.mu.Lock()
	defer k.mu.Unlock()
	known := map[string]bool{}
	for g := range k.cache {
		known[g] = true
	}
	for g, n := range k.members {
		known[g] = known[g] || n > 0
	}
	for _, name := range sortedKeys(known) {
		// Each broker lists the groups it coordinates, as KoP lists those of the offsets
		// partitions its broker owns.
		if !known[name] || (k.brokers > 1 && k.Cluster.CoordinatorFor(name) != node) {
			continue
		}
		g := kmsg.NewListGroupsResponseGroup()
		g.Group, g.ProtocolType, g.GroupState = name, "consumer", k.state(name)
		resp.Groups = append(resp.Groups, g)
	}
	return resp
}

func (k *KoP) listOffsets(kr kmsg.Request) kmsg.Response {
	req := kr.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, rt := range req.Topics {
		t := kmsg.NewListOffsetsResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewListOffsetsResponseTopicPartition()
			p.Partition, p.LeaderEpoch, p.Timestamp = rp.Partition, -1, -1
			if rp.Timestamp == -1 { // latest; earliest and by-time answer 0
				p.Offset = k.ends[rt.Topic][rp.Partition]
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

func sortedKeys[K int32 | string, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// LoadingLeft is how many loading answers group has still to get (-1: all).
func (k *KoP) LoadingLeft(group string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.loading[group]
}
