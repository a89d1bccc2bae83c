package offsetsync

// The deployment sync needs: the offsets topic does not replicate between the synced
// clusters (a commit sync sends to one KoP would replicate back to the other, in the wrong
// numbering, and its next load would take it). Check says whether that holds; PlanSetup
// plans the topic-level policy that makes it hold, keeping the rest of the namespace (and
// replication toward clusters not synced) as it is.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kop-offsets/kop-offsets/internal/explain"
)

// Replication reads and sets where one cluster's offsets topic replicates (*pulsarx.Admin).
type Replication interface {
	TopicReplicationClusters(ctx context.Context, topic string) (clusters []string, topicLevel bool, err error)
	SetTopicReplicationClusters(ctx context.Context, topic string, clusters []string) error
	RemoveTopicReplicationClusters(ctx context.Context, topic string) error
}

// Site is one synced cluster's offsets topic.
type Site struct {
	Name         string // the config name
	PulsarName   string // the name replication clusters use
	OffsetsTopic string // persistent://<tenant>/<ns>/__consumer_offsets
	Admin        Replication
}

// SetupStep is one cluster's offsets topic: where it replicates now, and where it is to.
type SetupStep struct {
	Cluster      string   `json:"cluster"`
	OffsetsTopic string   `json:"offsetsTopic"`
	Current      []string `json:"current"` // Pulsar names
	TopicLevel   bool     `json:"topicLevel"`
	// Synced: the synced clusters it replicates to (Pulsar names): what must stop.
	Synced []string `json:"replicatesToSynced,omitempty"`
	// Want is the topic-level policy to set (Current without Synced); nil: nothing to do.
	Want  []string `json:"want,omitempty"`
	Error string   `json:"error,omitempty"`
	Err   error    `json:"-"` // what Error says, for the explained form
}

// Check reads where every site's offsets topic replicates: one step each, in order.
func Check(ctx context.Context, sites []Site) []SetupStep {
	var out []SetupStep
	for _, s := range sites {
		st := SetupStep{Cluster: s.Name, OffsetsTopic: s.OffsetsTopic}
		cur, topicLevel, err := s.Admin.TopicReplicationClusters(ctx, s.OffsetsTopic)
		if err != nil {
			st.Err = fmt.Errorf("cluster %s: %w", s.Name, err)
			st.Error = explain.Line(st.Err)
			out = append(out, st)
			continue
		}
		st.Current, st.TopicLevel = cur, topicLevel
		for _, o := range sites {
			if o.PulsarName != s.PulsarName && slices.Contains(cur, o.PulsarName) {
				st.Synced = append(st.Synced, o.PulsarName)
			}
		}
		if len(st.Synced) > 0 {
			st.Want = []string{s.PulsarName}
			for _, c := range cur {
				if c != s.PulsarName && !slices.Contains(st.Synced, c) {
					st.Want = append(st.Want, c) // a cluster not synced keeps replication
				}
			}
			slices.Sort(st.Want)
		}
		out = append(out, st)
	}
	return out
}

// Refusal is the error sync starts with when a step's offsets topic replicates to another
// synced cluster, or could not be read; nil when none does. It names the fix.
//
// Each cluster is one error (errors.Join): an unreadable one is its endpoint's failure, one
// that replicates says to where and, as its fix, the sync setup that stops it.
func Refusal(steps []SetupStep) error {
	var why []error
	var names []string
	for _, st := range steps {
		names = append(names, "--cluster "+st.Cluster)
	}
	setup := "kop-offsets sync setup " + strings.Join(names, " ")
	for _, st := range steps {
		switch {
		case st.Err != nil:
			why = append(why, st.Err) // names the call: where the offsets topic replicates
		case st.Error != "":
			why = append(why, fmt.Errorf("sync cannot tell where the offsets topic replicates: %s", st.Error))
		case len(st.Synced) > 0:
			level := "its namespace's policy"
			if st.TopicLevel {
				level = "its topic-level policy"
			}
			why = append(why, &explain.Fixed{Fix: setup, Err: fmt.Errorf(
				"cluster %s: %s replicates to %s (%s): each commit sync sends would come back in the wrong numbering",
				st.Cluster, st.OffsetsTopic, strings.Join(st.Synced, ", "), level)})
		}
	}
	return errors.Join(why...)
}

// Change is one write of a setup: a cluster's topic-level replication clusters of its
// offsets topic set to To, or (Remove) removed so that the namespace's apply again.
type Change struct {
	Cluster      string   `json:"cluster"`
	OffsetsTopic string   `json:"offsetsTopic"`
	From         []string `json:"from"`
	TopicLevel   bool     `json:"fromTopicLevel"`
	To           []string `json:"to,omitempty"`
	Remove       bool     `json:"remove,omitempty"`
}

// Changes are the writes that make steps hold sync's deployment (undo false: every offsets
// topic that replicates to another synced cluster stops), or that give replication back
// (undo: every topic-level policy is removed, the namespace's replication applies again).
// Steps that could not be read are left out: the caller refuses them.
func Changes(steps []SetupStep, undo bool) []Change {
	var out []Change
	for _, st := range steps {
		c := Change{Cluster: st.Cluster, OffsetsTopic: st.OffsetsTopic, From: st.Current, TopicLevel: st.TopicLevel}
		switch {
		case st.Error != "":
			continue
		case undo && st.TopicLevel:
			c.Remove = true
		case !undo && st.Want != nil:
			c.To = st.Want
		default:
			continue
		}
		out = append(out, c)
	}
	return out
}

// Apply makes c on site's admin.
func (c Change) Apply(ctx context.Context, a Replication) error {
	if c.Remove {
		return a.RemoveTopicReplicationClusters(ctx, c.OffsetsTopic)
	}
	return a.SetTopicReplicationClusters(ctx, c.OffsetsTopic, c.To)
}

// String says what c does, for plans and the audit trail.
func (c Change) String() string {
	from := "namespace policy"
	if c.TopicLevel {
		from = "topic-level policy"
	}
	if c.Remove {
		return fmt.Sprintf("remove the topic-level replication clusters [%s] of %s (the namespace's apply again)", strings.Join(c.From, ","), c.OffsetsTopic)
	}
	return fmt.Sprintf("set the topic-level replication clusters of %s to [%s] (now [%s], %s)", c.OffsetsTopic, strings.Join(c.To, ","), strings.Join(c.From, ","), from)
}
