package reload

import (
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// Plan is what reload will do on one cluster, and its blast radius.
type Plan struct {
	Cluster           string   `json:"cluster"`
	Namespace         string   `json:"namespace"`
	OffsetsTopic      string   `json:"offsetsTopic"`
	OffsetsPartitions int32    `json:"offsetsPartitionCount"`
	Clusters          []string `json:"activityClusters"` // where group activity was asked
	// Patterns are the --group values when any is a glob; RequestedGroups are then the
	// persisted groups they matched.
	Patterns            []string        `json:"groupPatterns,omitempty"`
	RequestedGroups     []string        `json:"requestedGroups,omitempty"`
	RequestedPartitions []int32         `json:"requestedPartitions,omitempty"`
	AllowActive         bool            `json:"allowActive"`
	RefuseLive          bool            `json:"refuseLive,omitempty"`
	AcceptLoss          bool            `json:"acceptLoss"`
	Bundles             []PlannedBundle `json:"bundles"`
	Groups              []AffectedGroup `json:"groups"`

	kafkaNamespace string
	partTopic      func(int32) string
	intended       map[IntendedKey]int64 // the Planner's Intended, for the executor's re-check
}

// PlannedBundle is one bundle the plan unloads.
type PlannedBundle struct {
	Range string `json:"range"`
	// OffsetsPartitions are every offsets partition in the bundle: all are reloaded.
	OffsetsPartitions []int32 `json:"offsetsPartitions"`
	// Groups are every group persisted in those partitions (plus requested groups that
	// hash there): all are reloaded, and those with members rebalance.
	Groups []string `json:"groups"`
	// Active are the groups of the bundle with live members, or unknown activity, on the
	// cluster the plan writes to: a reload there pauses their members while KoP loads (the
	// measured cost is in docs/reload.md). Unknown ones are refused unless AllowActive; live
	// ones are not refused unless RefuseLive.
	Active []string `json:"activeGroups"`
	// LiveElsewhere are the groups with live members on another cluster only (active-passive:
	// the primary consumes, the standby is refreshed). A reload here touches none of their
	// members; their cache here will lag again as they commit. Reported, not refused.
	LiveElsewhere []string `json:"liveElsewhere,omitempty"`
	// Losses are the rows a reload would move back or drop (KoP serves more now than its
	// loader would load); refused unless --accept-loss.
	Losses []Loss `json:"losses"`
	// Skips are the rows a reload would make KoP serve a number, replicated from another
	// cluster, past the group's position here; refused unless --accept-loss.
	Skips []Skip `json:"skips,omitempty"`
	// LoadFailures are the bundle's offsets partitions KoP cannot load at all.
	LoadFailures []loader.LoadFailure `json:"loadFailures,omitempty"`
	// Refused: the bundle has groups of unknown activity (or live ones under --refuse-live)
	// and --allow-active was not given, or losses or skips and --accept-loss was not given.
	Refused bool   `json:"refused"`
	Reason  string `json:"reason,omitempty"`
}

// AffectedGroup is one group a plan reloads.
type AffectedGroup struct {
	Group            string `json:"group"`
	OffsetsPartition int32  `json:"offsetsPartition"`
	Bundle           string `json:"bundle"`
	// Requested: named by the request (--group, --from-check); the others are collateral.
	Requested bool `json:"requested"`
	// Persisted are the offsets a fresh load serves for the group: what KoP's loader reads
	// from this cluster's offsets topic (none when it cannot load the partition).
	Persisted []TopicOffset `json:"persisted"`
	// Served is what KoP serves now (nil when it was not asked).
	Served *CacheAnswer `json:"served,omitempty"`
	// Activity per cluster name.
	Activity map[string]Activity `json:"activity"`
	// Status is the summary over clusters: live if live anywhere, else unknown if unknown
	// anywhere, else idle.
	Status string `json:"status"`
	// Here is the activity on the cluster the plan writes to, which decides the refusal.
	Here string `json:"here"`
}

// TopicOffset is one committed offset of a group. Topic is the short Kafka name KoP
// answers with for the cluster's kafkaNamespace.
type TopicOffset = kop.TopicOffset

// Executable returns the bundles that are not refused, in plan order.
func (p *Plan) Executable() []PlannedBundle {
	var out []PlannedBundle
	for _, b := range p.Bundles {
		if !b.Refused {
			out = append(out, b)
		}
	}
	return out
}

// Refused returns the refused bundles.
func (p *Plan) Refused() []PlannedBundle {
	var out []PlannedBundle
	for _, b := range p.Bundles {
		if b.Refused {
			out = append(out, b)
		}
	}
	return out
}

// Group returns the affected group named g.
func (p *Plan) Group(g string) (AffectedGroup, bool) {
	for _, ag := range p.Groups {
		if ag.Group == g {
			return ag, true
		}
	}
	return AffectedGroup{}, false
}

// GroupsIn returns the affected groups of one bundle.
func (p *Plan) GroupsIn(bundleRange string) []AffectedGroup {
	var out []AffectedGroup
	for _, g := range p.Groups {
		if g.Bundle == bundleRange {
			out = append(out, g)
		}
	}
	return out
}

func topicOffsets(cs []loader.CommittedOffset, kafkaNamespace string) []TopicOffset {
	out := make([]TopicOffset, 0, len(cs))
	for _, c := range cs {
		o := TopicOffset{Topic: loader.ShortName(c.Topic, kafkaNamespace), Partition: c.Partition, Offset: c.Offset, Origin: c.Origin}
		if c.Origin != "" {
			o.Floor = c.Floor()
		}
		out = append(out, o)
	}
	return out
}
