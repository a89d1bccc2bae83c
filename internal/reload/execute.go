package reload

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kop-offsets/kop-offsets/internal/offsets"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// OffsetFetcher answers OffsetFetch for one group on the cluster being reloaded.
type OffsetFetcher interface {
	// FetchOffsets returns every committed offset KoP serves for group, with topics as short
	// Kafka names (offsets.ShortName for the cluster's kafkaNamespace). Coordinator errors
	// (COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE) are returned
	// as the kerr errors; an error that is no kerr.Error means KoP could not be reached.
	FetchOffsets(ctx context.Context, group string) ([]TopicOffset, error)
}

// Defaults of Executor.
const (
	DefaultWait         = 60 * time.Second
	DefaultPollInterval = 500 * time.Millisecond
	// minFetchTimeout is the least time one OffsetFetch gets, even at the end of the wait.
	minFetchTimeout = 2 * time.Second
)

// Bundle statuses in an Execution.
const (
	BundleRefused      = "refused"       // the plan refused it, or the checks just before the unload did: not touched
	BundleNotAttempted = "not_attempted" // an earlier bundle failed or the run was interrupted: not touched
	BundleUnloadFailed = "unload_failed" // the unload call failed: see Error (KoP may still have dropped the bundle's groups: it was looked up and checked); or, Unloaded false, the bundles could not be read again before it
	BundleLoadFailed   = "load_failed"   // unloaded, but a lookup failed: the next client lookup loads it
	BundleVerified     = "verified"      // unloaded, loaded, KoP serves the persisted offsets
	BundleCacheDiffers = "cache_differs" // unloaded, loaded, KoP still serves other values (or keeps loading)
	BundleUnverified   = "unverified"    // unloaded, loaded, but KoP (or the offsets topic) could not be asked
)

// Group statuses in an Execution.
const (
	GroupFresh                  = "fresh"                   // KoP serves exactly the persisted offsets
	GroupCacheDiffers           = "cache_differs"           // KoP answered other values after the wait
	GroupCoordinatorUnavailable = "coordinator_unavailable" // KoP kept answering loading/not coordinator
	GroupUnverified             = "unverified"              // KoP could not be asked
	GroupNotReloaded            = "not_reloaded"            // its bundle was not reloaded
)

// Error kinds of a CacheAnswer.
const (
	ErrorKindCoordinator = "coordinator_unavailable"
	ErrorKindUnreachable = "unreachable"
	ErrorKindKafka       = "error"
)

// Executor carries out a Plan on its cluster.
type Executor struct {
	Cluster ClusterRef
	Admin   BundleAdmin
	// Fetcher asks the cluster's KoP; nil when the cluster has no kafkaBootstrap: the
	// reload then cannot be verified.
	Fetcher OffsetFetcher
	// Reader reads the offsets topic again after the load: the values KoP must now serve.
	Reader   offsets.OffsetTopicReader
	Ordering offsets.TxnOrdering
	// Wait bounds the verification of each bundle (default DefaultWait).
	Wait time.Duration
	// Pause is slept between two bundles.
	Pause time.Duration
	// AcceptLoss lets a bundle be unloaded although KoP, asked again just before the
	// unload, serves more than its loader would load (the plan's refusal, re-checked).
	AcceptLoss bool
	// Partitions is the offsets topic's partition count (the plan's), for probe groups.
	Partitions int32
	// PollInterval is the time between two OffsetFetch rounds (default DefaultPollInterval).
	PollInterval time.Duration
	// Log receives progress lines (stderr); nil discards them.
	Log func(format string, args ...any)
	// Now and Sleep are for tests.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

// Execution is what a reload did.
type Execution struct {
	Bundles []BundleResult `json:"bundles"`
	Groups  []GroupResult  `json:"groups"`
	// Unloaded lists every bundle that was unloaded (for a planned bundle split since the
	// plan, the parts of it, among BundleResult.SplitInto, whose unload succeeded);
	// NotUnloaded every planned bundle that was not (refused, not attempted, or its unload
	// failed).
	Unloaded    []string        `json:"unloaded"`
	NotUnloaded []string        `json:"notUnloaded"`
	ExitCode    outcome.Outcome `json:"exitCode"`
}

// BundleResult is what happened to one bundle.
type BundleResult struct {
	Range             string       `json:"range"`
	Status            string       `json:"status"`
	OffsetsPartitions []int32      `json:"offsetsPartitions"`
	Unloaded          bool         `json:"unloaded"`
	Loaded            bool         `json:"loaded"`
	Owner             string       `json:"owner,omitempty"` // broker the lookups answered
	UnloadedAt        *output.Time `json:"unloadedAt,omitempty"`
	LoadedAt          *output.Time `json:"loadedAt,omitempty"`
	VerifiedAt        *output.Time `json:"verifiedAt,omitempty"`
	Error             string       `json:"error,omitempty"`
	// SplitInto: the planned bundle no longer existed at the unload (it was split since the
	// plan); these bundles, within its range, hold its offsets partitions now and were
	// unloaded in its place. Empty when the planned bundle itself was unloaded.
	SplitInto []string `json:"splitInto,omitempty"`

	unloaded []string // the ranges whose unload call succeeded
}

// GroupResult is one group before and after.
type GroupResult struct {
	Group     string `json:"group"`
	Bundle    string `json:"bundle"`
	Requested bool   `json:"requested"`
	// Before is what KoP answered before the unload.
	Before *CacheAnswer `json:"before"`
	// Persisted is what the offsets topic holds after the load.
	Persisted []TopicOffset `json:"persisted"`
	// After is KoP's last answer during the wait.
	After  *CacheAnswer `json:"after"`
	Status string       `json:"status"`
	// CommittedSince: the group committed on this cluster after the load; KoP serves its own
	// newer offsets, which the topic holds (live.go).
	CommittedSince bool `json:"committedSince,omitempty"`
}

// CacheAnswer is KoP's answer to OffsetFetch for a group.
type CacheAnswer struct {
	Offsets   []TopicOffset `json:"offsets"`
	Error     string        `json:"error,omitempty"`
	ErrorKind string        `json:"errorKind,omitempty"`
}

func (e *Executor) defaults() {
	if e.Wait <= 0 {
		e.Wait = DefaultWait
	}
	if e.PollInterval <= 0 {
		e.PollInterval = DefaultPollInterval
	}
	if e.Now == nil {
		e.Now = time.Now
	}
	if e.Sleep == nil {
		e.Sleep = sleepCtx
	}
	if e.Log == nil {
		e.Log = func(string, ...any) {}
	}
	e.Cluster = e.Cluster.withDefaults()
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Execute reloads the given bundles of plan (normally plan.Executable()), one after the
// other: unload, a lookup of each offsets partition in it (the load), then OffsetFetch for
// its groups until KoP serves what the offsets topic now holds or Wait passes. It stops at
// the first bundle that does not end verified, so that nothing more is disturbed while
// something is wrong; the Execution says exactly which bundles were unloaded.
//
// Outcome: Unreachable when an endpoint failed (admin, KoP, offsets topic), else
// WriteFailed when KoP still serves other values after the wait, else OK.
func (e *Executor) Execute(ctx context.Context, plan *Plan, bundles []PlannedBundle) *Execution {
	e.defaults()
	if e.Partitions <= 0 {
		e.Partitions = plan.OffsetsPartitions
	}
	ex := &Execution{Bundles: []BundleResult{}, Groups: []GroupResult{}, Unloaded: []string{}, NotUnloaded: []string{}}
	run := map[string]bool{}
	for _, b := range bundles {
		run[b.Range] = true
	}
	stopped := false
	done := 0
	for _, pb := range plan.Bundles {
		br := BundleResult{Range: pb.Range, OffsetsPartitions: pb.OffsetsPartitions}
		var grs []GroupResult
		switch {
		case pb.Refused && !run[pb.Range]:
			br.Status = BundleRefused
			br.Error = pb.Reason
		case !run[pb.Range]:
			br.Status = BundleNotAttempted
			br.Error = "not selected for this run"
		case stopped:
			br.Status = BundleNotAttempted
			br.Error = "an earlier bundle did not end verified"
		case ctx.Err() != nil:
			br.Status = BundleNotAttempted
			br.Error = "interrupted: " + ctx.Err().Error()
		default:
			if done > 0 && e.Pause > 0 {
				e.Log("pausing %s before bundle %s", e.Pause, pb.Range)
				if err := e.Sleep(ctx, e.Pause); err != nil {
					br.Status = BundleNotAttempted
					br.Error = "interrupted: " + err.Error()
					break
				}
			}
			br, grs = e.reloadBundle(ctx, plan, pb)
			done++
			if br.Status != BundleVerified {
				stopped = true
			}
		}
		if grs == nil {
			for _, g := range plan.GroupsIn(pb.Range) {
				grs = append(grs, GroupResult{Group: g.Group, Bundle: g.Bundle, Requested: g.Requested, Persisted: g.Persisted, Status: GroupNotReloaded})
			}
		}
		switch {
		case br.Unloaded && len(br.SplitInto) > 0:
			ex.Unloaded = append(ex.Unloaded, br.unloaded...)
		case br.Unloaded:
			ex.Unloaded = append(ex.Unloaded, br.Range)
		default:
			ex.NotUnloaded = append(ex.NotUnloaded, br.Range)
		}
		ex.Bundles = append(ex.Bundles, br)
		ex.Groups = append(ex.Groups, grs...)
	}
	ex.ExitCode = outcome.OK
	for _, b := range ex.Bundles {
		switch b.Status {
		case BundleUnloadFailed, BundleLoadFailed, BundleUnverified:
			ex.ExitCode = outcome.Unreachable
		case BundleCacheDiffers:
			if ex.ExitCode == outcome.OK {
				ex.ExitCode = outcome.WriteFailed
			}
		case BundleRefused:
			if run[b.Range] && ex.ExitCode == outcome.OK { // refused at execution time
				ex.ExitCode = outcome.WriteFailed
			}
		}
	}
	return ex
}

func (e *Executor) reloadBundle(ctx context.Context, plan *Plan, pb PlannedBundle) (BundleResult, []GroupResult) {
	br := BundleResult{Range: pb.Range, OffsetsPartitions: pb.OffsetsPartitions}
	grs, late := e.recheck(ctx, plan, plan.GroupsIn(pb.Range))
	if len(late) > 0 && !e.AcceptLoss && !plan.AcceptLoss {
		br.Status = BundleRefused
		br.Error = "not unloaded: since the plan, " + lossRefusal(late)
		return br, grs
	}
	ranges, err := e.currentRanges(ctx, pb)
	switch {
	case errors.Is(err, errBundlesChanged):
		br.Status, br.Error = BundleRefused, "not unloaded: "+err.Error()
		return br, grs
	case err != nil:
		br.Status, br.Error = BundleUnloadFailed, "not unloaded: "+err.Error()
		return br, grs
	case len(ranges) != 1 || ranges[0] != pb.Range:
		br.SplitInto = ranges
		e.Log("bundle %s on %s was split since the plan: unloading the bundles within it that hold its offsets partitions %v: %s",
			pb.Range, e.Cluster.Name, pb.OffsetsPartitions, strings.Join(ranges, ", "))
	}
	unloadErr := e.unload(ctx, ranges, &br)
	if e.load(ctx, pb, ranges, &br) {
		e.verify(ctx, pb, &br, grs)
	}
	if unloadErr != nil {
		msg := "the unload call failed: " + unloadErr.Error() + "; KoP drops a bundle's groups even when its unload fails, so the bundle was looked up again and checked"
		if br.Status != BundleVerified {
			msg += ": " + br.Error
		} else {
			msg += ": KoP serves the predicted offsets"
		}
		br.Status, br.Error = BundleUnloadFailed, msg
	}
	return br, grs
}

// recheck starts the results of the bundle's groups with what KoP serves them now and
// returns the losses a reload would cause that the plan did not see.
func (e *Executor) recheck(ctx context.Context, plan *Plan, groups []AffectedGroup) ([]GroupResult, []Loss) {
	grs := make([]GroupResult, len(groups))
	var late []Loss
	var ask []int
	for i, g := range groups {
		grs[i] = GroupResult{Group: g.Group, Bundle: g.Bundle, Requested: g.Requested, Persisted: g.Persisted, Status: GroupNotReloaded}
		if g.Served != nil && g.Served.ErrorKind == ErrorKindCoordinator {
			// KoP served the group nothing at the plan (its partition is not served): a load
			// cannot take anything from it, and asking each such group again would wait
			// for each one's timeout.
			grs[i].Before = g.Served
		} else if e.Fetcher != nil {
			ask = append(ask, i)
		}
	}
	e.fetchAll(ctx, grs, ask, e.Now().Add(minFetchTimeout), func(gr *GroupResult, a *CacheAnswer) { gr.Before = a })
	for i, g := range groups {
		if grs[i].Before != nil {
			// The plan's comparison again, with what KoP serves right now: a commit since
			// the plan may have moved the cache ahead of what the loader will bring.
			for _, l := range losses(g, grs[i].Before, func(string, int32) string {
				return "KoP serves it now, the plan's prediction does not have it"
			}) {
				if !plan.isIntended(l.Group, l.Topic, l.Partition, l.Predicted) {
					late = append(late, l)
				}
			}
		}
	}
	return grs, e.recheckLive(ctx, groups, late)
}

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

// verify waits for KoP to serve each group of the loaded bundle what its offsets topic holds
// and sets the statuses.
func (e *Executor) verify(ctx context.Context, pb PlannedBundle, br *BundleResult, grs []GroupResult) {
	if len(grs) == 0 {
		br.Status = BundleVerified
		br.VerifiedAt = output.NewTime(e.Now())
		return
	}
	unverified := func(msg string) {
		br.Status, br.Error = BundleUnverified, msg
		for i := range grs {
			grs[i].Status = GroupUnverified
		}
	}
	if e.Fetcher == nil {
		unverified("cannot verify: the cluster has no kafkaBootstrap")
		return
	}
	// What KoP must now serve: the offsets topic as it is after the load.
	if err := e.persisted(ctx, pb, grs); err != nil {
		unverified(fmt.Sprintf("unloaded and loaded, but the offsets topic could not be read to verify: %v", err))
		return
	}
	e.Log("waiting up to %s for KoP on %s to serve the persisted offsets of %d groups", e.Wait, e.Cluster.Name, len(grs))
	e.judge(ctx, br, grs, e.awaitFresh(ctx, pb, grs))
}

// awaitFresh asks KoP for the groups until each serves its persisted offsets or Wait has
// passed, marks the fresh ones and returns the indexes of the others.
func (e *Executor) awaitFresh(ctx context.Context, pb PlannedBundle, grs []GroupResult) []int {
	deadline := e.Now().Add(e.Wait)
	pending := make([]int, len(grs))
	for i := range grs {
		pending[i] = i
	}
	fresh := func(pending []int) []int {
		var still []int
		for _, i := range pending {
			if a := grs[i].After; a != nil && a.Error == "" && sameOffsets(a.Offsets, grs[i].Persisted) {
				grs[i].Status = GroupFresh
				continue
			}
			still = append(still, i)
		}
		return still
	}
	for {
		e.fetchAll(ctx, grs, pending, deadline, func(gr *GroupResult, a *CacheAnswer) { gr.After = a })
		pending = e.movedOn(ctx, pb, grs, fresh(pending))
		if len(pending) == 0 || !e.Now().Before(deadline) || ctx.Err() != nil {
			break
		}
		if err := e.Sleep(ctx, min(e.PollInterval, deadline.Sub(e.Now()))); err != nil {
			break
		}
	}
	if len(pending) > 0 && ctx.Err() == nil {
		// Commits may have landed since the load: compare the last answers with the topic
		// once more before calling the cache stale.
		if err := e.persisted(ctx, pb, grs); err == nil {
			pending = fresh(pending)
		}
	}
	return pending
}

// judge sets the status of the groups still pending after the wait, and the bundle's.
func (e *Executor) judge(ctx context.Context, br *BundleResult, grs []GroupResult, pending []int) {
	unverified, differs := 0, 0
	for _, i := range pending {
		a := grs[i].After
		switch {
		case a == nil || a.ErrorKind == ErrorKindUnreachable || a.ErrorKind == ErrorKindKafka:
			grs[i].Status = GroupUnverified
			unverified++
		case a.ErrorKind == ErrorKindCoordinator:
			grs[i].Status = GroupCoordinatorUnavailable
			differs++
		default:
			grs[i].Status = GroupCacheDiffers
			differs++
		}
	}
	switch {
	case unverified > 0:
		br.Status = BundleUnverified
		br.Error = fmt.Sprintf("unloaded and loaded, but KoP on %s could not be asked for %d of %d groups within %s: the cache is not proven fresh", e.Cluster.Name, unverified, len(grs), e.Wait)
		if ctx.Err() != nil {
			br.Error += " (interrupted)"
		}
	case differs > 0:
		br.Status = BundleCacheDiffers
		br.Error = fmt.Sprintf("unloaded and loaded, but after %s KoP on %s still does not serve the persisted offsets of %d of %d groups", e.Wait, e.Cluster.Name, differs, len(grs))
	default:
		br.Status = BundleVerified
		br.VerifiedAt = output.NewTime(e.Now())
	}
}

// persisted replays the bundle's partitions and stores in grs what each group's load
// brings (the loader model's prediction, which verification compares KoP with).
func (e *Executor) persisted(ctx context.Context, pb PlannedBundle, grs []GroupResult) error {
	po, err := replay(ctx, e.Reader, pb.OffsetsPartitions, e.Ordering)
	if err != nil {
		return err
	}
	n := e.partitions()
	for i := range grs {
		grs[i].Persisted = predictedOffsets(po, grs[i].Group, n, e.Cluster.KafkaNamespace)
	}
	return nil
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
			a := e.fetch(ctx, offsets.ProbeGroup(part, e.Partitions), deadline)
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

func (e *Executor) fetch(ctx context.Context, group string, deadline time.Time) *CacheAnswer {
	if d := e.Now().Add(minFetchTimeout); deadline.Before(d) {
		deadline = d
	}
	fctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	return askCache(fctx, e.Fetcher, group)
}

// askCache is one OffsetFetch of group as a CacheAnswer: sorted offsets, or the error and
// its kind.
func askCache(ctx context.Context, f OffsetFetcher, group string) *CacheAnswer {
	offs, err := f.FetchOffsets(ctx, group)
	if err != nil {
		return &CacheAnswer{Offsets: []TopicOffset{}, Error: err.Error(), ErrorKind: ErrorKind(err)}
	}
	sortTopicOffsets(offs)
	return &CacheAnswer{Offsets: offs}
}

// ErrorKind classifies an OffsetFetch error: coordinator_unavailable for KoP's loading /
// not-coordinator answers, error for any other Kafka error code, unreachable otherwise.
func ErrorKind(err error) string {
	switch {
	case errors.Is(err, kerr.CoordinatorLoadInProgress), errors.Is(err, kerr.NotCoordinator),
		errors.Is(err, kerr.CoordinatorNotAvailable):
		return ErrorKindCoordinator
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ErrorKindKafka
	}
	return ErrorKindUnreachable
}

func sortTopicOffsets(s []TopicOffset) {
	slices.SortFunc(s, func(a, b TopicOffset) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
}

// sameOffsets reports whether KoP's answer equals the persisted offsets exactly (topic,
// partition and offset: where a persisted commit came from is not part of KoP's answer).
func sameOffsets(cached, persisted []TopicOffset) bool {
	a, b := slices.Clone(cached), slices.Clone(persisted)
	sortTopicOffsets(a)
	sortTopicOffsets(b)
	return slices.EqualFunc(a, b, func(x, y TopicOffset) bool {
		return x.Topic == y.Topic && x.Partition == y.Partition && x.Offset == y.Offset
	})
}

// fetchAll asks KoP about the groups grs[i] of idx, a few at a time, and stores each answer
// with set.
func (e *Executor) fetchAll(ctx context.Context, grs []GroupResult, idx []int, deadline time.Time, set func(*GroupResult, *CacheAnswer)) {
	eachConcurrently(len(idx), func(k int) {
		i := idx[k]
		set(&grs[i], e.fetch(ctx, grs[i].Group, deadline))
	})
}
