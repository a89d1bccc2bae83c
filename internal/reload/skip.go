package reload

import (
	"context"
	"fmt"

	"github.com/kop-offsets/kop-offsets/internal/align"
)

// Never make it worse includes never skip. A load makes KoP serve what the offsets topic
// holds, and a commit replicated from another cluster counts in that cluster's numbering of
// the data topic: where the copies differ, the number names another message here, and a
// consumer given a higher number than the group's real position skips messages nobody
// read. The plan translates every such value (package align) and refuses the bundle where
// one would skip, or where the translation is unknown, unless AcceptLoss.

// Aligner translates committed offsets between clusters; *align.Aligner implements it.
type Aligner interface {
	TranslateAll(ctx context.Context, reqs []align.Request) map[align.Request]align.Result
}

var _ Aligner = (*align.Aligner)(nil)

// Skip is one row a reload would make KoP serve at a number past the group's real position
// on this cluster (or whose position could not be established).
type Skip struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Origin is the cluster the persisted commit came from; Predicted counts in its
	// numbering.
	Origin    string `json:"origin"`
	Predicted int64  `json:"predicted"`
	// Translated is the group's position here (nil: unknown); Skipped the messages between.
	Translated *int64 `json:"translated"`
	Skipped    int64  `json:"skipped"`
	Why        string `json:"why"`
	Unknown    bool   `json:"unknown,omitempty"`
	Fix        string `json:"fix"`
}

func (s Skip) String() string {
	if s.Unknown {
		return fmt.Sprintf("%s %s[%d]: %d from %s, alignment unknown (%s)", s.Group, s.Topic, s.Partition, s.Predicted, s.Origin, s.Why)
	}
	return fmt.Sprintf("%s %s[%d]: would serve %d from %s, the group is at %d here: %d messages skipped (%s)",
		s.Group, s.Topic, s.Partition, s.Predicted, s.Origin, *s.Translated, s.Skipped, s.Why)
}

// skips translates the replicated values among the groups' predicted offsets and returns,
// per group, those a load would serve past the group's position. Only values a load would
// change are checked: a row KoP already serves at the predicted number is served the same
// after the load, so the reload adds no skip there, whatever the copies' alignment (an
// unrelated group of the bundle whose copies cannot be compared does not refuse it).
func skips(ctx context.Context, a Aligner, cluster string, groups []*AffectedGroup) map[string][]Skip {
	var reqs []align.Request
	for _, g := range groups {
		for _, p := range g.Persisted {
			if replicatedChange(g, p, cluster) {
				reqs = append(reqs, skipRequest(p, cluster))
			}
		}
	}
	if len(reqs) == 0 {
		return nil
	}
	var res map[align.Request]align.Result
	if a != nil {
		res = a.TranslateAll(ctx, reqs)
	}
	out := map[string][]Skip{}
	for _, g := range groups {
		for _, p := range g.Persisted {
			if !replicatedChange(g, p, cluster) {
				continue
			}
			s := Skip{Group: g.Group, Topic: p.Topic, Partition: p.Partition, Origin: p.Origin, Predicted: p.Offset,
				Fix: align.FailoverCommand(g.Group, p.Topic, p.Origin, cluster)}
			r, ok := res[skipRequest(p, cluster)]
			switch {
			case a == nil:
				s.Unknown, s.Why = true, "no Kafka listener to compare the copies through (none configured, or KoP did not answer)"
			case !ok:
				s.Unknown, s.Why = true, "not translated"
			case r.Err != nil:
				s.Unknown, s.Why = true, r.Err.Error()
			case r.Skip() > 0:
				t := r.Translated
				s.Translated, s.Skipped, s.Why = &t, r.Skip(), r.String()
			default:
				continue // aligned, or the group re-reads: never skips
			}
			out[g.Group] = append(out[g.Group], s)
		}
	}
	return out
}

// skipRequest is the translation of p into cluster's numbering, from the group's own commit
// there.
func skipRequest(p TopicOffset, cluster string) align.Request {
	return align.Request{From: p.Origin, To: cluster, Topic: p.Topic, Partition: p.Partition, Offset: p.Offset, Floor: p.Floor}
}

// replicatedChange reports whether p, a value a load would serve for g, was replicated from
// another cluster and differs from what KoP serves now (or KoP's answer is unknown).
func replicatedChange(g *AffectedGroup, p TopicOffset, cluster string) bool {
	if p.Origin == "" || p.Origin == cluster {
		return false
	}
	if g.Served == nil || g.Served.Error != "" {
		return true
	}
	for _, s := range g.Served.Offsets {
		if s.Topic == p.Topic && s.Partition == p.Partition {
			return s.Offset != p.Offset
		}
	}
	return true
}

// unreachable reports whether KoP could not be reached for any group it was asked about.
func unreachable(served map[string]*CacheAnswer) bool {
	if len(served) == 0 {
		return false
	}
	for _, a := range served {
		if a == nil || a.ErrorKind != ErrorKindUnreachable {
			return false
		}
	}
	return true
}

func skipRefusal(ss []Skip) string {
	return "a reload would make KoP serve offsets replicated from another cluster that name other messages here (consumers would skip messages nobody read): " +
		firstOf(ss) + "; fix with: " + ss[0].Fix + "; --accept-loss reloads it anyway and skips them"
}

// IntendedKey names a row whose new value the caller wrote on purpose (failover): a load
// that serves exactly that value is neither a loss nor a skip.
type IntendedKey struct {
	Group     string
	Topic     string // short name
	Partition int32
}

func (p *Plan) isIntended(group, topic string, partition int32, v *int64) bool {
	if v == nil {
		return false
	}
	want, ok := p.intended[IntendedKey{group, topic, partition}]
	return ok && want == *v
}
