package lab

import (
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// TestJudgeReplicators: a missing replicator and a disconnected one are problems, a
// connected one with a backlog is not (it is sending); Growing compares with the first read.
func TestJudgeReplicators(t *testing.T) {
	off0 := OffsetsTopic + "-partition-0"
	off1 := OffsetsTopic + "-partition-1"
	before := replicatorRead{off0: {"scus": {Connected: false, ReplicationBacklog: 3}}}
	now := replicatorRead{
		off0:          {"scus": {Connected: false, ReplicationBacklog: 5}},
		off1:          {"scus": {Connected: true, ReplicationBacklog: 9}},
		Topic1 + "-0": {},
	}
	got := judgeReplicators("wus", []string{"scus"}, now, before)
	if len(got) != 2 {
		t.Fatalf("problems %v, want 2", got)
	}
	if got[0].Topic != off0 || got[0].Missing || got[0].Backlog != 5 || !got[0].Growing {
		t.Errorf("first problem %+v, want partition 0 disconnected, backlog 5, growing", got[0])
	}
	if got[1].Topic != Topic1+"-0" || !got[1].Missing {
		t.Errorf("second problem %+v, want topic-1's missing replicator", got[1])
	}
	if s := got[0].String(); !strings.Contains(s, "wus: the replicator to scus") || !strings.Contains(s, "not connected (backlog 5, growing)") {
		t.Errorf("String() = %q", s)
	}
	if p := judgeReplicators("wus", []string{"scus"}, replicatorRead{off0: {"scus": utils.ReplicatorStats{Connected: true}}}, nil); len(p) != 0 {
		t.Errorf("connected replicator judged a problem: %v", p)
	}
}

func TestReplicatedTopics(t *testing.T) {
	ts := ReplicatedTopics()
	if len(ts) != OffsetsTopicPartitions+Topic1Partitions {
		t.Fatalf("%d topics: %v", len(ts), ts)
	}
	if ts[0] != OffsetsTopic+"-partition-0" || ts[len(ts)-1] != Topic1+"-partition-0" {
		t.Errorf("topics %v", ts)
	}
}
