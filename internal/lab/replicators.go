package lab

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/kop-offsets/kop-offsets/internal/connect"
)

// ReplicatorProblem is a replicator of a lab topic that does not reach its peer: none on a
// topic whose namespace replicates there, or one that stays disconnected. A lab restarted
// over data of a lab with other ports has such replicators: they dial the old ports for
// ever while every health check passes.
type ReplicatorProblem struct {
	Cluster string `json:"cluster"`
	Peer    string `json:"peer"`
	Topic   string `json:"topic"`
	Missing bool   `json:"missing,omitempty"`
	// Backlog is what the replicator holds for the peer at the last read; Growing says it
	// grew between two reads.
	Backlog int64 `json:"backlog"`
	Growing bool  `json:"growing,omitempty"`
}

func (p ReplicatorProblem) String() string {
	if p.Missing {
		return fmt.Sprintf("%s: no replicator to %s on %s", p.Cluster, p.Peer, p.Topic)
	}
	s := fmt.Sprintf("%s: the replicator to %s of %s is not connected (backlog %d", p.Cluster, p.Peer, p.Topic, p.Backlog)
	if p.Growing {
		s += ", growing"
	}
	return s + ")"
}

// ReplicatedTopics are the lab topics whose replicators CheckReplicators reads: every
// offsets partition (KoP's, or the lab's own without KoP) and topic-1's partitions.
func ReplicatedTopics() []string {
	var out []string
	for i := 0; i < OffsetsTopicPartitions; i++ {
		out = append(out, fmt.Sprintf("%s-partition-%d", OffsetsTopic, i))
	}
	for i := 0; i < Topic1Partitions; i++ {
		out = append(out, fmt.Sprintf("%s-partition-%d", Topic1, i))
	}
	return out
}

type replicatorRead map[string]map[string]utils.ReplicatorStats // topic -> peer -> stats

// CheckReplicators reads the replication stats of ReplicatedTopics on every cluster towards
// every other one; a replicator missing or disconnected at the first read (reading the
// stats loads a topic, which starts its replicators) is read again after settle, and those
// still not connected are returned.
func CheckReplicators(ctx context.Context, cs []Cluster, settle time.Duration) ([]ReplicatorProblem, error) {
	first := map[string]replicatorRead{}
	var suspects bool
	for _, c := range cs {
		r, err := readReplicators(ctx, c)
		if err != nil {
			return nil, err
		}
		first[c.Name] = r
		suspects = suspects || len(judgeReplicators(c.Name, peersOf(c, cs), r, nil)) > 0
	}
	if !suspects {
		return nil, nil
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(settle):
	}
	var out []ReplicatorProblem
	for _, c := range cs {
		r, err := readReplicators(ctx, c)
		if err != nil {
			return nil, err
		}
		out = append(out, judgeReplicators(c.Name, peersOf(c, cs), r, first[c.Name])...)
	}
	return out, nil
}

func peersOf(c Cluster, cs []Cluster) []string {
	var out []string
	for _, o := range cs {
		if o.Name != c.Name {
			out = append(out, o.Name)
		}
	}
	return out
}

// readReplicators reads the replication section of each lab topic's stats on c; a topic
// that does not exist, or is not loaded anywhere, is left out.
func readReplicators(ctx context.Context, c Cluster) (replicatorRead, error) {
	admin, err := NewAdmin(c)
	if err != nil {
		return nil, err
	}
	out := replicatorRead{}
	for _, topic := range ReplicatedTopics() {
		tn, err := utils.GetTopicName(topic)
		if err != nil {
			return nil, err
		}
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		st, err := admin.Topics().GetStatsWithContext(cctx, *tn)
		cancel()
		// Not there, or (2.10) in a bundle no broker owns now: no replicator runs to judge.
		if connect.IsRESTStatus(err, http.StatusNotFound) || connect.IsRESTStatus(err, http.StatusPreconditionFailed) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: stats of %s: %w", c.Name, topic, err)
		}
		out[topic] = st.Replication
	}
	return out, nil
}

// judgeReplicators lists the replicators of cluster towards peers that are missing or not
// connected in now; with an earlier read, Growing says the backlog grew since.
func judgeReplicators(cluster string, peers []string, now, before replicatorRead) []ReplicatorProblem {
	var out []ReplicatorProblem
	for _, topic := range slices.Sorted(maps.Keys(now)) {
		for _, peer := range peers {
			st, ok := now[topic][peer]
			switch {
			case !ok:
				out = append(out, ReplicatorProblem{Cluster: cluster, Peer: peer, Topic: topic, Missing: true})
			case !st.Connected:
				p := ReplicatorProblem{Cluster: cluster, Peer: peer, Topic: topic, Backlog: st.ReplicationBacklog}
				if b, had := before[topic][peer]; had {
					p.Growing = st.ReplicationBacklog > b.ReplicationBacklog
				}
				out = append(out, p)
			}
		}
	}
	return out
}
