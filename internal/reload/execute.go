package reload

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/loader"

	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/output"
)

// OffsetFetcher answers OffsetFetch for one group on the cluster being reloaded.
type OffsetFetcher interface {
	// FetchOffsets returns every committed offset KoP serves for group, with topics as short
	// Kafka names (loader.ShortName for the cluster's kafkaNamespace). Coordinator errors
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
	Reader   loader.OffsetTopicReader
	Ordering loader.TxnOrdering
	// Persisted, when set, reads the offsets topic instead of Reader, as Planner.Persisted.
	Persisted PartitionReplayer
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
		e.Sleep = Sleep
	}
	if e.Log == nil {
		e.Log = func(string, ...any) {}
	}
	e.Cluster = e.Cluster.withDefaults()
}

// Sleep waits d, or until ctx is done (then its error): the Executor's default Sleep.
func Sleep(ctx context.Context, d time.Duration) error {
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
