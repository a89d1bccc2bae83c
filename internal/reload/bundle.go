package reload

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// errBundlesChanged is wrapped when a planned bundle's offsets partitions lie, at the
// unload, in a bundle that reaches beyond the planned range.
var errBundlesChanged = errors.New("the bundles changed since the plan")

// currentRanges reads the namespace's bundles again just before pb is unloaded and returns
// those that hold pb's offsets partitions now: pb's own range, or, when pb was split since
// the plan (pulsar-admin namespaces split-bundle, or the load manager's auto-split), the
// bundles within it that hold them. Unloading those touches nothing the plan did not check.
// A partition now in a bundle that reaches beyond pb's range (the bundles were redone)
// gives errBundlesChanged: that bundle holds topics the plan never looked at.
func (e *Executor) currentRanges(ctx context.Context, pb PlannedBundle) ([]string, error) {
	ns := e.Cluster.Namespace()
	bundles, err := e.Admin.Bundles(ctx, ns)
	if err != nil {
		return nil, fmt.Errorf("the bundles of %s could not be read again just before the unload: %w", ns, err)
	}
	planned, err := pulsarx.ParseBundleRange(pb.Range)
	if err != nil {
		return nil, err
	}
	var ranges []string
	for _, part := range pb.OffsetsPartitions {
		b, err := pulsarx.FindBundle(bundles, e.Cluster.PartitionTopic(part))
		if err != nil {
			return nil, fmt.Errorf("the bundles of %s read again just before the unload: %w", ns, err)
		}
		if b.Lo < planned.Lo || b.Hi > planned.Hi {
			return nil, fmt.Errorf("%w: offsets partition %d is now in bundle %s of %s, which reaches beyond the planned %s "+
				"(it holds topics the plan did not check); plan again", errBundlesChanged, part, b.Range, ns, pb.Range)
		}
		if !slices.Contains(ranges, b.Range) {
			ranges = append(ranges, b.Range)
		}
	}
	if len(ranges) == 0 { // a bundle without offsets partitions: unloaded as planned
		ranges = []string{pb.Range}
	}
	slices.Sort(ranges)
	return ranges, nil
}

// unload unloads the bundles of ranges (the planned bundle, or the parts of it that hold its
// offsets partitions after a split) and returns the first unload call's error; br.Unloaded
// is set when one of them was unloaded.
func (e *Executor) unload(ctx context.Context, ranges []string, br *BundleResult) error {
	ns := e.Cluster.Namespace()
	var first error
	for _, r := range ranges {
		e.Log("unloading bundle %s/%s on %s", ns, r, e.Cluster.Name)
		err := e.Admin.UnloadBundle(ctx, ns, r)
		if err == nil {
			br.unloaded = append(br.unloaded, r)
			if !br.Unloaded {
				br.Unloaded = true
				br.UnloadedAt = output.NewTime(e.Now())
			}
			continue
		}
		// KoP's bundle listener drops the bundle's groups on an unload at the FAILURE stage
		// too: a failed unload may have emptied the cache. Look the bundle up and check it
		// like a successful one, so the report says what KoP serves now.
		e.Log("unload of %s on %s failed (%v): KoP may have dropped its groups anyway; looking it up and checking", r, e.Cluster.Name, err)
		if first == nil {
			first = err
		}
	}
	return first
}

// load makes a broker take the bundle again and waits for every offsets partition of it to
// answer; false, with br's status and error set, when either fails.
func (e *Executor) load(ctx context.Context, pb PlannedBundle, ranges []string, br *BundleResult) bool {
	// The load: a lookup of each offsets partition makes a broker take the bundle; KoP's
	// bundle listener then loads every offsets partition in it.
	if err := e.lookup(ctx, pb, br); err != nil {
		br.Status = BundleLoadFailed
		br.Error = fmt.Sprintf("unloaded, but the lookup that loads it again failed (the next client lookup of a topic in the bundle loads it): %v", err)
		return false
	}
	br.Loaded = true
	br.LoadedAt = output.NewTime(e.Now())
	e.Log("bundle %s owned again by %s", pb.Range, br.Owner)

	// Paced: every offsets partition of the bundle must answer before anything else is
	// unloaded. KoP ignores a load of a partition whose previous unload has not finished
	// ("Already loading") and then never loads it.
	if stuck := e.awaitPartitions(ctx, pb, ranges, br); len(stuck) > 0 {
		br.Status = BundleLoadFailed
		br.Error = fmt.Sprintf("looked up, but KoP on %s still answers NOT_COORDINATOR or loading for offsets partitions %v after %s, a second unload and lookup: "+
			"their groups are served nothing; fix: kop-offsets reload --cluster %s --partition %s --yes (or restart the broker that owns them)",
			e.Cluster.Name, stuck, e.Wait, e.Cluster.Name, joinInts(stuck))
		return false
	}
	return true
}

func (e *Executor) partitions() int32 {
	if e.Partitions > 0 {
		return e.Partitions
	}
	return 1 // unknown: no partition is failed-to-load for the prediction
}

// lookup makes a broker take the bundle: a lookup of each of its offsets partitions. It sets
// br.Owner to the broker(s) these lookups answered, never to an earlier answer: after each
// unload the bundle may come back on another broker, and the load manager may move it while
// it is looked up (then the partitions answer different owners, all of them listed).
// Nothing else is pinned to a broker: the unload goes to the bundle through the admin API,
// and KoP is asked through the Kafka client, which follows FindCoordinator to the new owner.
func (e *Executor) lookup(ctx context.Context, pb PlannedBundle, br *BundleResult) error {
	var owners []string
	for _, part := range pb.OffsetsPartitions {
		owner, err := e.lookupOwner(ctx, e.Cluster.PartitionTopic(part))
		if err != nil {
			return err
		}
		if o := cmp.Or(owner.BrokerURL, owner.BrokerURLTLS, owner.HTTPURL); o != "" && !slices.Contains(owners, o) {
			owners = append(owners, o)
		}
	}
	was := br.Owner
	br.Owner = strings.Join(owners, ",")
	if len(owners) > 1 {
		e.Log("the offsets partitions of bundle %s on %s answered different owners (%s): the bundle moved while it was looked up", pb.Range, e.Cluster.Name, br.Owner)
	}
	if was != "" && was != br.Owner {
		e.Log("bundle %s on %s came back on %s (it was on %s)", pb.Range, e.Cluster.Name, br.Owner, was)
	}
	return nil
}

// lookupRetries is how many times a failed lookup is tried again, after 1, 2 and 4 s: right
// after an unload the broker that gave the bundle up may still hold its ownership lock in the
// metadata store, and a lookup then fails (http 500, LockBusyException "already locked";
// seen on the 2x2 lab after an unload of a bundle split a moment before).
const lookupRetries = 3

// lookupOwner is Admin.LookupOwner, tried again lookupRetries times on an error.
func (e *Executor) lookupOwner(ctx context.Context, topic string) (pulsarx.Owner, error) {
	backoff := time.Second
	for attempt := 0; ; attempt++ {
		owner, err := e.Admin.LookupOwner(ctx, topic)
		if err == nil || attempt == lookupRetries || ctx.Err() != nil {
			return owner, err
		}
		e.Log("lookup of %s on %s failed (%v): trying again in %s", topic, e.Cluster.Name, err, backoff)
		if e.Sleep(ctx, backoff) != nil {
			return owner, err
		}
		backoff *= 2
	}
}

// awaitPartitions waits until KoP answers OffsetFetch without a coordinator error for a
// probe group of every offsets partition of the bundle (a group name that hashes there and
// has no offsets: the answer is empty once the partition is loaded). A partition still not
// answering after Wait gets one more unload and lookup, then another Wait. It returns the
// partitions that never answered; none without a Fetcher (nothing to ask: Pause paces).
func (e *Executor) awaitPartitions(ctx context.Context, pb PlannedBundle, ranges []string, br *BundleResult) []int32 {
	if e.Fetcher == nil || e.Partitions <= 0 {
		return nil
	}
	stuck := e.pollPartitions(ctx, pb.OffsetsPartitions)
	if len(stuck) == 0 || ctx.Err() != nil {
		return stuck
	}
	e.Log("offsets partitions %v of %s on %s do not answer after %s: unloading and looking the bundle up once more", stuck, pb.Range, e.Cluster.Name, e.Wait)
	for _, r := range ranges {
		if err := e.Admin.UnloadBundle(ctx, e.Cluster.Namespace(), r); err != nil {
			e.Log("second unload of %s failed: %v", r, err)
		}
	}
	if err := e.lookup(ctx, pb, br); err != nil {
		e.Log("second lookup of %s failed: %v", pb.Range, err)
		return stuck
	}
	return e.pollPartitions(ctx, stuck)
}

func (e *Executor) pollPartitions(ctx context.Context, parts []int32) []int32 {
	deadline := e.Now().Add(e.Wait)
	pending := slices.Clone(parts)
	for {
		var still []int32
		for _, part := range pending {
			a := e.fetch(ctx, loader.ProbeGroup(part, e.Partitions), deadline)
			switch a.ErrorKind {
			case ErrorKindCoordinator:
				still = append(still, part)
			case ErrorKindUnreachable:
				// KoP cannot be asked at all: not a stuck partition; verification reports it.
				e.Log("offsets partition %d on %s: KoP cannot be asked (%s)", part, e.Cluster.Name, a.Error)
				return nil
			}
		}
		pending = still
		if len(pending) == 0 || !e.Now().Before(deadline) || ctx.Err() != nil {
			return pending
		}
		if err := e.Sleep(ctx, min(e.PollInterval, deadline.Sub(e.Now()))); err != nil {
			return pending
		}
	}
}

func joinInts(v []int32) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}
