package doctor

import (
	"context"
	"strings"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// versionsKafka answers each cluster's probe with the request versions of a KoP line.
type versionsKafka map[string]map[string]int16

func (k versionsKafka) Probe(_ context.Context, cl Cluster) (KafkaProbe, error) {
	return KafkaProbe{Brokers: 1, MaxVersions: k[cl.Name]}, nil
}

// TestKoPAndPulsarVersionsReported: scus runs KoP 2.10 on Pulsar 2.10.1 with its default
// topic policies off, wus KoP 3.0 on Pulsar 3.0.16: doctor names each line from what KoP
// answers, KoP 2.10's and Pulsar 2.10's hazards, and nothing of the kind on wus.
func TestKoPAndPulsarVersionsReported(t *testing.T) {
	scus, wus := healthy("scus"), healthy("wus")
	scus.Version = "2.10.1"
	scus.Runtime["systemTopicEnabled"], scus.Runtime["topicLevelPoliciesEnabled"] = "false", "false"
	scus.Runtime["brokerDeduplicationEnabled"] = "true"
	scus.Runtime["transactionCoordinatorEnabled"] = "false"
	wus.Version = "3.0.16"
	wus.Runtime["brokerDeduplicationEnabled"] = "true"     // Pulsar 3.0.16 keeps KoP's replicated entries
	wus.Runtime["transactionCoordinatorEnabled"] = "false" // and takes replicated transactional ones
	k := versionsKafka{
		"scus": {"OffsetFetch": 5, "OffsetCommit": 6, "FindCoordinator": 2, "Metadata": 7},
		"wus":  {"OffsetFetch": 7, "OffsetCommit": 8, "FindCoordinator": 3, "Metadata": 11},
	}
	r := runWith(t, Options{Kafka: k}, scus, wus)

	var scusKoP, wusKoP []string
	for _, f := range only(r, SeverityInfo, CheckKoPVersion) {
		switch f.Cluster {
		case "scus":
			scusKoP = append(scusKoP, f.Message)
		case "wus":
			wusKoP = append(wusKoP, f.Message)
		}
	}
	if len(scusKoP) != 2 || !strings.Contains(scusKoP[0]+scusKoP[1], "KoP 2.10 line on scus (it answers Kafka 2.1 request versions: OffsetFetch up to v5, OffsetCommit up to v6)") ||
		!strings.Contains(scusKoP[0]+scusKoP[1], "no batched fetch") {
		t.Errorf("scus kop-version findings %q", scusKoP)
	}
	if len(wusKoP) != 2 || !strings.Contains(wusKoP[0]+wusKoP[1], "KoP 3.0 line on wus") || !strings.Contains(wusKoP[0]+wusKoP[1], "no batched fetch") {
		t.Errorf("wus kop-version findings %q", wusKoP)
	}
	for _, c := range r.Clusters {
		want := map[string]string{"scus": "KoP 2.10", "wus": "KoP 3.0"}[c.Name]
		if c.KoPLine != want {
			t.Errorf("%s: report's KoP line %q, want %q", c.Name, c.KoPLine, want)
		}
	}

	var startAt []Finding
	for _, f := range only(r, SeverityInfo, CheckBrokerVersion) {
		if strings.Contains(f.Message, "replicationStartAt") {
			startAt = append(startAt, f)
		}
	}
	if len(startAt) != 1 || startAt[0].Cluster != "scus" || !strings.Contains(startAt[0].Fix, "before the first commit") {
		t.Errorf("replicationStartAt findings %+v, want one on scus", startAt)
	}
	wantOne(t, r, SeverityInfo, CheckBrokerSettings, "scus", "topicLevelPoliciesEnabled=true")
	dedup := wantOne(t, r, SeverityError, CheckBrokerSettings, "scus", "brokerDeduplicationEnabled=false")
	if !strings.Contains(dedup.Message, "empty producer name and sequence id 0") || !strings.Contains(dedup.Fix, "namespaces set-deduplication <tenant/namespace> --disable") {
		t.Errorf("deduplication hazard %+v", dedup)
	}
	txn := wantOne(t, r, SeverityWarning, CheckBrokerSettings, "scus", "transactionCoordinatorEnabled=true")
	if !strings.Contains(txn.Message, "Transaction buffer disable!") {
		t.Errorf("transaction buffer hazard %+v", txn)
	}
	if fs := only(r, SeverityError, CheckBrokerSettings); len(fs) != 1 {
		t.Errorf("broker-settings errors %+v, want scus's only", fs)
	}
	if fs := only(r, SeverityWarning, CheckBrokerVersion); len(fs) != 1 || fs[0].Cluster != "scus" || !strings.Contains(fs[0].Message, "before 3.0") {
		t.Errorf("broker-version warnings %+v, want Pulsar 2.10's on scus", fs)
	}
}

// TestUnknownKoPLine: request versions of no line seen on the lab are reported as unproven,
// not guessed.
func TestUnknownKoPLine(t *testing.T) {
	k := versionsKafka{"scus": {"OffsetFetch": 9}, "wus": nil}
	r := runWith(t, Options{Kafka: k}, healthy("scus"), healthy("wus"))
	fs := only(r, SeverityInfo, CheckKoPVersion)
	if len(fs) != 1 || fs[0].Cluster != "scus" || !strings.Contains(fs[0].Message, "up to v9, a line not seen on the lab") {
		t.Errorf("kop-version findings %+v", fs)
	}
}

func TestReplicationStartAtHonoured(t *testing.T) {
	for v, want := range map[string]bool{"2.10.1": false, "3.0.8": false, "3.0.9": true, "3.0.16": true,
		"3.2.4": false, "3.3.3": false, "3.3.4": true, "4.0.1": false, "4.0.2": true, "4.0.8": true, "4.1.0": true} {
		major, minor, patch, ok := pulsarRelease(v)
		if !ok || replicationStartAtHonoured(major, minor, patch) != want {
			t.Errorf("%s: honoured %v (parsed %v), want %v", v, !want, ok, want)
		}
	}
	if _, _, _, ok := pulsarRelease("unknown"); ok {
		t.Error("parsed an unknown version")
	}
}

// TestStalledReplicatorNamed: a connected replicator past the warning delay that sends
// nothing is called stalled, with the unload of its own topic as the fix (Pulsar 2.10.1's
// replicator after a failed send); one that sends is only lagging.
func TestStalledReplicatorNamed(t *testing.T) {
	s, w := healthy("scus"), healthy("wus")
	s.Repl[pulsarx.PartitionTopic(offsetsTopic, 1)] = map[string]pulsarx.Replication{"wus": {Connected: true, ReplicationBacklog: 1, ReplicationDelayInSeconds: 600}}
	w.Repl[pulsarx.PartitionTopic(offsetsTopic, 2)] = map[string]pulsarx.Replication{"scus": {Connected: true, ReplicationBacklog: 9, ReplicationDelayInSeconds: 600, MsgRateOut: 40}}
	r := runWith(t, Options{}, s, w)
	f := wantOne(t, r, SeverityWarning, CheckOffsetsReplicator, "scus", "topics unload persistent://public/__kafka/__consumer_offsets-partition-1")
	if !strings.Contains(f.Message, "connected but sends nothing on partitions [1]") {
		t.Errorf("stalled: %s", f.Message)
	}
	if g := wantOne(t, r, SeverityWarning, CheckOffsetsReplicator, "wus", ""); g.Fix != "" || strings.Contains(g.Message, "stalled") {
		t.Errorf("a sending replicator called stalled: %+v", g)
	}
}

// TestMissingReplicatorsOnPulsar210: on Pulsar 2.10 a missing offsets replicator, although
// the namespace replicates, is fixed by loading the topic again, not by the namespace's
// clusters (they are right); on 4.0 the fix stays the namespace's clusters.
func TestMissingReplicatorsOnPulsar210(t *testing.T) {
	s, w := healthy("scus"), healthy("wus")
	s.Version = "2.10.1"
	delete(s.Repl, pulsarx.PartitionTopic(offsetsTopic, 2))
	delete(w.Repl, pulsarx.PartitionTopic(offsetsTopic, 3))
	r := runWith(t, Options{}, s, w)
	f := wantOne(t, r, SeverityError, CheckOffsetsReplicator, "scus", "topics unload persistent://public/__kafka/__consumer_offsets-partition-2")
	if !strings.Contains(f.Message, "replicationPolicyCheckDurationSeconds") {
		t.Errorf("2.10 missing replicator: %s", f.Message)
	}
	wantOne(t, r, SeverityError, CheckOffsetsReplicator, "wus", "namespaces set-clusters public/__kafka")
}
