//go:build kop

package kop

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
)

// movePhase is one cluster's offsets partitions moved to another broker: when the unloads
// began and returned, when the new owner held every bundle, when KoP served the moved
// partitions again and when wus served scus's newest commit after that.
type movePhase struct {
	cluster                        string
	began, unloaded, owned, served time.Time
	caughtUp                       time.Duration
	bundles                        []string // what moved, for the log
}

// moveOffsetsPartitions moves every bundle of public/__kafka on cluster that holds one of
// parts to another broker: each is unloaded with Pulsar's destinationBroker (the admin
// API's PUT .../unload?destinationBroker=, which the lab's Pulsar 4.0.8 honours on the next
// lookup, docs/kop-facts.md; pulsaradmin v0.19's UnloadNamespaceBundle has no such
// parameter), then its partitions are looked up until a
// broker other than the one before owns it, and KoP's FindCoordinator must name that
// broker's listener. at is called before the unloads, after they returned and once the new
// owners hold the bundles.
func moveOffsetsPartitions(t *testing.T, cluster string, parts []int32, at func(stage string)) movePhase {
	t.Helper()
	c := theLab.Cluster(cluster)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	byBundle := offsetsBundles(ctx, t, c, parts)
	from, to, dest := map[string]int{}, map[string]int{}, map[string]string{}
	for b, ps := range byBundle {
		i, err := partitionOwner(ctx, t, c, ps[0])
		if err != nil || i < 0 {
			t.Fatalf("%s: the owner of bundle %s (offsets partition %d) before the move: broker index %d, %v", cluster, b, ps[0], i, err)
		}
		from[b], dest[b] = i, brokerIDOf(ctx, t, c, (i+1)%c.BrokerCount())
	}
	m := movePhase{cluster: cluster}
	at("before")
	m.began = time.Now()
	for b := range byBundle {
		unloadTo(ctx, t, c, b, dest[b])
	}
	m.unloaded = time.Now()
	at("unloaded")
	for b, ps := range byBundle {
		to[b] = waitMoved(ctx, t, c, b, ps, from[b])
	}
	m.owned = time.Now()
	at("moved")
	for b, ps := range byBundle {
		for _, p := range ps {
			if owner, reloaded := kopServesMoved(ctx, t, c, p); reloaded {
				to[b] = owner
			}
		}
	}
	m.served = time.Now()
	for b, ps := range byBundle {
		m.bundles = append(m.bundles, fmt.Sprintf("bundle %s (offsets partitions %v) broker-%d -> broker-%d, KoP's coordinator %s",
			b, ps, from[b], to[b], coordinatorOn(ctx, t, c, ps[0], to[b])))
	}
	slices.Sort(m.bundles)
	return m
}

// offsetsBundles maps each public/__kafka bundle of c holding one of parts to those parts.
func offsetsBundles(ctx context.Context, t *testing.T, c lab.Cluster, parts []int32) map[string][]int32 {
	t.Helper()
	adm := labtest.PulsarxAdmin(t, c)
	out := map[string][]int32{}
	for _, p := range parts {
		b, err := adm.BundleForTopic(ctx, pulsarx.PartitionTopic(lab.OffsetsTopic, p))
		if err != nil {
			t.Fatalf("%s: the bundle of offsets partition %d: %v", c.Name, p, err)
		}
		out[b.Range] = append(out[b.Range], p)
	}
	return out
}

// twoBundles returns p and an offsets partition in another bundle of c (p's neighbour when c
// has one bundle).
func twoBundles(t *testing.T, c lab.Cluster, p int32) (int32, int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := int32(lab.OffsetsTopicPartitions)
	for i := int32(1); i < n; i++ {
		q := (p + i) % n
		if len(offsetsBundles(ctx, t, c, []int32{p, q})) == 2 {
			return p, q
		}
	}
	t.Logf("%s: every offsets partition in one bundle: the groups share it", c.Name)
	return p, (p + 1) % n
}

// partitionOwner is the index of the broker of c owning offsets partition p, by a lookup
// (which gives an unowned bundle an owner); -1 when the owner is none of c's brokers.
func partitionOwner(ctx context.Context, t *testing.T, c lab.Cluster, p int32) (int, error) {
	t.Helper()
	o, err := labtest.PulsarxAdmin(t, c).LookupOwner(ctx, pulsarx.PartitionTopic(lab.OffsetsTopic, p))
	if err != nil {
		return -1, err
	}
	for i, b := range c.Brokers {
		if strings.HasSuffix(o.BrokerURL, fmt.Sprintf(":%d", b.Service)) || o.HTTPURL == b.AdminURL {
			return i, nil
		}
	}
	return -1, fmt.Errorf("owner %+v is none of %s's brokers", o, c.Name)
}

// brokerIDOf is broker i of c as Pulsar names it among the active brokers ("host:webport").
func brokerIDOf(ctx context.Context, t *testing.T, c lab.Cluster, i int) string {
	t.Helper()
	ids, err := labtest.PulsarxAdmin(t, c).ActiveBrokers(ctx, c.Name)
	if err != nil {
		t.Fatalf("%s: active brokers: %v", c.Name, err)
	}
	for _, id := range ids {
		if strings.HasSuffix(id, fmt.Sprintf(":%d", c.Brokers[i].Web)) {
			return id
		}
	}
	t.Fatalf("%s: broker-%d (web port %d) is not among the active brokers %v", c.Name, i, c.Brokers[i].Web, ids)
	return ""
}

// unloadTo unloads bundle of public/__kafka on c to broker dest (Pulsar's destinationBroker),
// through c's admin URL with the lab's transport (TLS and token on an auth lab).
func unloadTo(ctx context.Context, t *testing.T, c lab.Cluster, bundle, dest string) {
	t.Helper()
	if err := lab.UnloadBundleTo(ctx, c, bundle, dest); err != nil {
		t.Fatal(err)
	}
}

// waitMoved looks the partitions of bundle up (2 minutes at most) until a broker other than
// from owns them, and returns its index. A lookup right after an unload can fail while the
// old owner still holds the lock (docs/kop-facts.md): it is asked again.
func waitMoved(ctx context.Context, t *testing.T, c lab.Cluster, bundle string, parts []int32, from int) int {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		owners := map[int]bool{}
		var errs []string
		for _, p := range parts {
			i, err := partitionOwner(ctx, t, c, p)
			if err != nil {
				errs = append(errs, err.Error())
			}
			owners[i] = true
		}
		if len(owners) == 1 && len(errs) == 0 && !owners[from] {
			for i := range owners {
				return i
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: bundle %s (offsets partitions %v) unloaded to another broker is owned by broker(s) %v 2 minutes later, was broker-%d (%s)",
				c.Name, bundle, parts, owners, from, strings.Join(errs, "; "))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// kopServesMoved waits until c's KoP serves offsets partition p after its move. KoP can drop
// the load of a partition taken right after an unload (docs/kop-facts.md, issue 15): that is
// KoP's fault, not the sync's; it is logged and the partition reloaded as the tool's reload
// does, and the owner after that reload is returned with true (it may be the old one again).
func kopServesMoved(ctx context.Context, t *testing.T, c lab.Cluster, p int32) (int, bool) {
	t.Helper()
	err := lab.WaitKoPServes(ctx, c, p, time.Minute)
	if err == nil {
		return 0, false
	}
	t.Logf("%s: KoP does not serve offsets partition %d a minute after its move (KoP dropped its load, docs/kop-facts.md): %v; reloading it", c.Name, p, err)
	if err := lab.ReloadOffsetsPartition(ctx, c, p); err != nil {
		t.Fatalf("%s: offsets partition %d not served after its move, nor after a reload: %v", c.Name, p, err)
	}
	i, err := partitionOwner(ctx, t, c, p)
	t.Logf("%s: offsets partition %d served after a reload, owned by broker-%d (%v)", c.Name, p, i, err)
	return i, true
}

// coordinatorOn is the listener KoP's FindCoordinator names for offsets partition p of c,
// asked (30 s at most) until it is broker to's: KoP follows the new owner. It fails the test
// when it never is.
func coordinatorOn(ctx context.Context, t *testing.T, c lab.Cluster, p int32, to int) string {
	t.Helper()
	adm := kafkaAdmin(t, c.Name)
	g := lab.GroupInPartition("lab-probe", p)
	want := c.Brokers[to].Kafka
	var got string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		r := adm.FindGroupCoordinators(ctx, g)[g]
		got = fmt.Sprintf("%s:%d (%v)", r.Host, r.Port, r.Err)
		if r.Err == nil && int(r.Port) == want {
			return fmt.Sprintf("%s:%d", r.Host, r.Port)
		}
	}
	t.Errorf("%s: KoP's FindCoordinator for offsets partition %d names %s, not broker-%d's listener (port %d), 30 s after the move", c.Name, p, got, to, want)
	return got
}
