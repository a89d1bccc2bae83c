package reload

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/kop-offsets/kop-offsets/internal/kop"
)

// GroupDescriber answers DescribeGroups on one cluster's KoP listeners.
type GroupDescriber interface {
	// DescribeGroups returns the activity of each group it could describe. A group absent
	// from the map, or with Err set, is unknown. An error means no group could be described.
	DescribeGroups(ctx context.Context, groups []string) (map[string]GroupActivity, error)
}

// GroupActivity is what DescribeGroups said about one group on one cluster.
type GroupActivity = kop.GroupActivity

var (
	_ GroupDescriber = kop.KafkaGroups{}
	_ OffsetFetcher  = kop.KafkaGroups{}
)

// Activity statuses of a group on one cluster.
const (
	ActivityIdle    = "idle"    // described, no members
	ActivityLive    = "live"    // described, with members
	ActivityUnknown = "unknown" // KoP did not answer for the group: not proven idle
	// ActivityUnserved: KoP on the cluster does not coordinate the group (it answers
	// NOT_COORDINATOR or loading for it): no member can be in it there, so a reload takes
	// nothing from anybody; it is what brings the group back.
	ActivityUnserved = "unserved"
)

// Activity is a group's activity on one cluster.
type Activity struct {
	Status  string `json:"status"` // idle, live, unknown
	State   string `json:"state,omitempty"`
	Members *int   `json:"members,omitempty"`
	Error   string `json:"error,omitempty"`
}

func summarize(a map[string]Activity) string {
	st := ActivityIdle
	for _, x := range a {
		switch x.Status {
		case ActivityLive:
			return ActivityLive
		case ActivityUnknown:
			st = ActivityUnknown
		}
	}
	return st
}

// describeAll asks every cluster, in parallel, about every group. Failures become unknown.
// The groups of here's unserved offsets partitions are not asked there: they are unserved.
func describeAll(ctx context.Context, ds map[string]GroupDescriber, all []string, here string, unservedHere []string) map[string]map[string]Activity {
	out := make(map[string]map[string]Activity, len(ds))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, d := range ds {
		wg.Go(func() {
			var unserved []string
			if name == here {
				unserved = unservedHere
			}
			res := describeOn(ctx, d, all, unserved)
			mu.Lock()
			out[name] = res
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// describeOn asks one cluster's describer about all groups but the unserved ones, which
// are unserved there without asking.
func describeOn(ctx context.Context, d GroupDescriber, all, unserved []string) map[string]Activity {
	groups := all
	res := make(map[string]Activity, len(all))
	if len(unserved) > 0 {
		skip := make(map[string]bool, len(unserved))
		for _, g := range unserved {
			skip[g] = true
		}
		groups = slices.DeleteFunc(slices.Clone(all), func(g string) bool { return skip[g] })
		for _, g := range unserved {
			res[g] = Activity{Status: ActivityUnserved, Error: "its offsets partition is not served by KoP here"}
		}
	}
	var got map[string]GroupActivity
	var err error
	switch {
	case len(groups) == 0:
	case d == nil:
		err = errors.New("no kafkaBootstrap configured")
	default:
		got, err = d.DescribeGroups(ctx, groups)
	}
	for _, g := range groups {
		res[g] = activityOf(got, g, err)
	}
	return res
}

// activityOf is group g's activity from a DescribeGroups answer (got, err).
func activityOf(got map[string]GroupActivity, g string, err error) Activity {
	ga, ok := got[g]
	switch {
	case err != nil:
		return Activity{Status: ActivityUnknown, Error: err.Error()}
	case !ok:
		return Activity{Status: ActivityUnknown, Error: "not in the DescribeGroups answer"}
	case ga.Err != nil:
		return Activity{Status: ActivityUnknown, State: ga.State, Error: ga.Err.Error()}
	}
	m := ga.Members
	a := Activity{Status: ActivityIdle, State: ga.State, Members: &m}
	if m > 0 {
		a.Status = ActivityLive
	}
	return a
}
