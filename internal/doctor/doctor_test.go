package doctor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

func runWith(t *testing.T, opts Options, admins ...*activityAdmin) *Report {
	t.Helper()
	for _, a := range admins {
		opts.Clusters = append(opts.Clusters, cluster(a))
	}
	if opts.Kafka == nil {
		opts.Kafka = &fakeKafka{}
	}
	if opts.ReplicatorSettle == 0 {
		opts.ReplicatorSettle = -1
	}
	return Run(context.Background(), opts)
}

// only returns the findings of severity sev (all when empty) and check (all when empty).
func only(r *Report, sev Severity, check string) []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if (sev == "" || f.Severity == sev) && (check == "" || f.Check == check) {
			out = append(out, f)
		}
	}
	return out
}

func wantOne(t *testing.T, r *Report, sev Severity, check, cluster, fixContains string) Finding {
	t.Helper()
	fs := only(r, sev, check)
	var hit []Finding
	for _, f := range fs {
		if f.Cluster == cluster {
			hit = append(hit, f)
		}
	}
	if len(hit) != 1 {
		t.Fatalf("want one %s %s finding on %q, got %d: %+v\nall: %+v", sev, check, cluster, len(hit), hit, r.Findings)
	}
	if !strings.Contains(hit[0].Fix, fixContains) {
		t.Errorf("%s fix %q does not contain %q", check, hit[0].Fix, fixContains)
	}
	return hit[0]
}

func TestHealthyIsQuiet(t *testing.T) {
	r := runWith(t, Options{}, healthy("scus"), healthy("wus"))
	for _, f := range r.Findings {
		if f.Severity != SeverityInfo {
			t.Errorf("unexpected finding on a healthy set-up: %+v", f)
		}
	}
	// broker version of each cluster, and the (KoP default) message TTL of each.
	if n := len(only(r, SeverityInfo, CheckBrokerVersion)); n != 2 {
		t.Errorf("%d broker-version findings, want 2", n)
	}
	if n := len(only(r, SeverityInfo, CheckOffsetsTTL)); n != 2 {
		t.Errorf("%d ttl findings, want 2", n)
	}
	if r.Summary[SeverityError] != 0 || len(r.Unreachable) != 0 || r.APIErrors {
		t.Errorf("report %+v", r)
	}
	if r.Clusters[0].OffsetsPartitions == nil || *r.Clusters[0].OffsetsPartitions != 4 || r.Clusters[0].KoPAnswers == nil || !*r.Clusters[0].KoPAnswers {
		t.Errorf("cluster report %+v", r.Clusters[0])
	}
}

func TestKoPListener(t *testing.T) {
	s, w := healthy("scus"), healthy("wus")
	s.Runtime["messagingProtocols"] = "[]"
	k := &fakeKafka{fail: map[string]error{
		"scus": &KafkaProbeError{Stage: "dial", Dial: map[string]string{"127.0.0.1:19092": "connect: connection refused"}, Err: errors.New("connect: connection refused")},
		"wus":  errors.New("i/o timeout"),
	}}
	r := runWith(t, Options{Kafka: k}, s, w)
	f := wantOne(t, r, SeverityError, CheckKoPListener, "scus", "messagingProtocols=kafka")
	if f.Message != "KoP does not answer at 127.0.0.1:19092" || f.Evidence["stage"] != "dial" || f.Evidence["messagingProtocols"] != "[]" {
		t.Errorf("%+v", f)
	}
	wantOne(t, r, SeverityError, CheckKoPListener, "wus", "kafkaListeners")
	if len(only(r, SeverityError, "")) != 2 {
		t.Errorf("errors %+v", only(r, SeverityError, ""))
	}

	noBoot := healthy("scus")
	c := cluster(noBoot)
	c.KafkaBootstrap = nil
	r = Run(context.Background(), Options{Clusters: []*Cluster{c, cluster(healthy("wus"))}, Kafka: &fakeKafka{}, ReplicatorSettle: -1})
	wantOne(t, r, SeverityWarning, CheckKoPListener, "scus", "kafkaBootstrap")
}

// A listener that answers but refuses the SASL mechanism or credentials is named as such,
// not as a KoP that does not answer (whose fix, listeners and the NAR, would mislead).
func TestKoPListenerRefusesSASL(t *testing.T) {
	k := &fakeKafka{fail: map[string]error{
		"scus": &KafkaProbeError{Stage: "ApiVersions", Err: fmt.Errorf("unable to start SASL SCRAM-SHA-256 session: %w", kerr.UnsupportedSaslMechanism)},
		"wus":  &KafkaProbeError{Stage: "ApiVersions", Err: kerr.SaslAuthenticationFailed},
	}}
	r := runWith(t, Options{Kafka: k}, healthy("scus"), healthy("wus"))
	f := wantOne(t, r, SeverityError, CheckKoPListener, "scus", "kafkaAuth.sasl of scus")
	if !strings.Contains(f.Message, "PLAIN and OAUTHBEARER only") || strings.Contains(f.Message, "does not answer") {
		t.Errorf("scus: %+v", f)
	}
	f = wantOne(t, r, SeverityError, CheckKoPListener, "wus", "token:<a JWT")
	if !strings.Contains(f.Message, "refused the configured SASL credentials") {
		t.Errorf("wus: %+v", f)
	}
}

func TestOffsetsTopic(t *testing.T) {
	s, w := healthy("scus"), healthy("wus")
	w.OffsetsPartitions = 8
	r := runWith(t, Options{}, s, w)
	f := wantOne(t, r, SeverityError, CheckOffsetsPartitions, "scus",
		"pulsar-admin --admin-url http://127.0.0.1:18080 topics update-partitioned-topic "+offsetsTopic+" --partitions 8")
	if !strings.Contains(f.Message, "4 partitions on scus but 8") {
		t.Error(f.Message)
	}

	s, w = healthy("scus"), healthy("wus")
	w.OffsetsPartitions = 0
	r = runWith(t, Options{}, s, w)
	wantOne(t, r, SeverityError, CheckOffsetsTopicExists, "wus", "topics create-partitioned-topic "+offsetsTopic+" --partitions 4")
	if len(only(r, SeverityError, CheckOffsetsPartitions)) != 0 {
		t.Error("a missing topic is not a partition mismatch")
	}
}

func TestMetadataNamespaceReplication(t *testing.T) {
	s, w := healthy("scus"), healthy("wus")
	s.NamespaceRepl["public/__kafka"] = []string{"scus"}
	r := runWith(t, Options{}, s, w)
	f := wantOne(t, r, SeverityError, CheckMetadataNamespace, "scus",
		"pulsar-admin --admin-url http://127.0.0.1:18080 namespaces set-clusters public/__kafka --clusters scus,wus")
	if f.Peer != "wus" || !strings.Contains(f.FixPulsarctl, "pulsarctl --admin-service-url http://127.0.0.1:18080 namespaces set-clusters") {
		t.Errorf("%+v", f)
	}
	if len(only(r, SeverityError, "")) != 1 {
		t.Errorf("one break, one error: %+v", only(r, SeverityError, ""))
	}

	// Other direction, and a namespace that does not exist.
	s, w = healthy("scus"), healthy("wus")
	delete(w.NamespaceRepl, "public/__kafka")
	r = runWith(t, Options{}, s, w)
	wantOne(t, r, SeverityError, CheckMetadataNamespace, "wus", "namespaces create public/__kafka --clusters scus,wus")
}

func TestTenantAllowedAndPeerRegistered(t *testing.T) {
	s, w := healthy("scus"), healthy("wus")
	w.Tenants["public"] = []string{"wus"}
	w.ClusterNames = []string{"wus"}
	r := runWith(t, Options{}, s, w)
	wantOne(t, r, SeverityError, CheckTenantAllowed, "wus", "tenants update public --allowed-clusters scus,wus")
	wantOne(t, r, SeverityError, CheckPeerRegistered, "wus", "clusters create scus --url http://127.0.0.1:18080 --broker-url pulsar://127.0.0.1:16650")
}

func TestOffsetsReplicators(t *testing.T) {
	s, w := healthy("scus"), healthy("wus")
	s.Repl[pulsarx.PartitionTopic(offsetsTopic, 1)] = map[string]pulsarx.Replication{"wus": {Connected: false, ReplicationBacklog: 3}}
	delete(s.Repl, pulsarx.PartitionTopic(offsetsTopic, 2))
	s.Repl[pulsarx.PartitionTopic(offsetsTopic, 3)] = map[string]pulsarx.Replication{"wus": {Connected: true, ReplicationBacklog: 5, ReplicationDelayInSeconds: 600}}
	w.Repl[pulsarx.PartitionTopic(offsetsTopic, 0)] = map[string]pulsarx.Replication{"scus": {Connected: true, ReplicationBacklog: 1, ReplicationDelayInSeconds: 2}}
	r := runWith(t, Options{}, s, w)
	var disc, miss Finding
	for _, f := range only(r, SeverityError, CheckOffsetsReplicator) {
		switch {
		case strings.Contains(f.Message, "disconnected"):
			disc = f
		case strings.Contains(f.Message, "no replicator"):
			miss = f
		}
	}
	if disc.Cluster != "scus" || disc.Peer != "wus" || !strings.Contains(disc.Message, "1 of 4 offsets partitions [1]") ||
		!strings.Contains(disc.Fix, "clusters update wus --url http://127.0.0.1:28080 --broker-url pulsar://127.0.0.1:26650") {
		t.Errorf("disconnected: %+v", disc)
	}
	if !strings.Contains(miss.Message, "[2]") || !strings.Contains(miss.Fix, "namespaces set-clusters public/__kafka") {
		t.Errorf("missing: %+v", miss)
	}
	wantOne(t, r, SeverityWarning, CheckOffsetsReplicator, "scus", "")
	wantOne(t, r, SeverityInfo, CheckOffsetsReplicator, "wus", "")

	// Delay beyond the message TTL: commits are being expired.
	s, w = healthy("scus"), healthy("wus")
	p := s.Policies["public/__kafka"]
	p.MessageTTLInSeconds = ptr(300)
	s.Policies["public/__kafka"] = p
	s.Repl[pulsarx.PartitionTopic(offsetsTopic, 0)] = map[string]pulsarx.Replication{"wus": {Connected: true, ReplicationBacklog: 5, ReplicationDelayInSeconds: 600}}
	r = runWith(t, Options{}, s, w)
	f := wantOne(t, r, SeverityError, CheckOffsetsReplicator, "scus", "remove-message-ttl")
	if !strings.Contains(f.Message, "expired") {
		t.Error(f.Message)
	}
	wantOne(t, r, SeverityWarning, CheckOffsetsTTL, "scus", "set-message-ttl public/__kafka --messageTTL 259200")
}

func TestReplicatorSecondLook(t *testing.T) {
	s, w := healthy("scus"), healthy("wus")
	flaky := &flakyRepl{activityAdmin: s}
	c := cluster(s)
	c.Admin = flaky
	r := Run(context.Background(), Options{Clusters: []*Cluster{c, cluster(w)}, Kafka: &fakeKafka{}, ReplicatorSettle: time.Millisecond})
	if n := len(only(r, SeverityError, "")); n != 0 {
		t.Errorf("a replicator that connects on the second look is healthy: %+v", r.Findings)
	}
}

// flakyRepl answers "no replicators" the first time a partition's stats are read.
type flakyRepl struct {
	*activityAdmin
	seen map[string]bool
}

func (f *flakyRepl) ReplicationStats(ctx context.Context, topic string) (map[string]pulsarx.Replication, error) {
	if f.seen == nil {
		f.seen = map[string]bool{}
	}
	if !f.seen[topic] {
		f.seen[topic] = true
		return nil, nil
	}
	return f.activityAdmin.ReplicationStats(ctx, topic)
}

func TestRetentionCompaction(t *testing.T) {
	// The lab's set-up: the namespace was created before KoP, with no policies, on brokers
	// with Pulsar's defaults.
	s, w := healthy("scus"), healthy("wus")
	s.Policies["public/__kafka"] = pulsarx.NamespacePolicy{}
	s.Runtime["defaultRetentionTimeInMinutes"] = "0"
	s.Runtime["defaultRetentionSizeInMB"] = "0"
	s.Runtime["brokerServiceCompactionThresholdInBytes"] = "0"
	r := runWith(t, Options{}, s, w)
	f := wantOne(t, r, SeverityError, CheckOffsetsRetention, "scus", "namespaces set-retention public/__kafka --time 4320m --size -1")
	if f.Evidence["source"].(map[string]string)["retentionTime"] != "broker default defaultRetentionTimeInMinutes" {
		t.Errorf("%+v", f.Evidence)
	}
	wantOne(t, r, SeverityWarning, CheckOffsetsCompaction, "scus", "set-compaction-threshold public/__kafka --threshold 100M")

	// Infinite retention, no compaction: a warning only. A longer --offsets-retention than
	// the namespace keeps: an error.
	s, w = healthy("scus"), healthy("wus")
	s.Policies["public/__kafka"] = pulsarx.NamespacePolicy{RetentionTimeInMinutes: ptr(-1), RetentionSizeInMB: ptr(int64(-1))}
	p := w.Policies["public/__kafka"]
	r = runWith(t, Options{OffsetsRetention: 7 * 24 * time.Hour}, s, w)
	if len(only(r, SeverityError, "")) != 1 {
		t.Errorf("errors: %+v", only(r, SeverityError, ""))
	}
	wantOne(t, r, SeverityWarning, CheckOffsetsCompaction, "scus", "")
	wantOne(t, r, SeverityError, CheckOffsetsRetention, "wus", "--time 10080m")
	_ = p
}

func TestUnreachableCluster(t *testing.T) {
	s, w := healthy("scus"), healthy("wus")
	w.Down = true
	for i := int32(0); i < 4; i++ {
		s.Repl[pulsarx.PartitionTopic(offsetsTopic, i)] = map[string]pulsarx.Replication{"wus": {Connected: false}}
	}
	r := runWith(t, Options{Topics: []string{"topic-1"}}, s, w)
	if len(r.Unreachable) != 1 || r.Unreachable[0] != "wus" || r.Clusters[1].Reachable {
		t.Fatalf("unreachable %v", r.Unreachable)
	}
	f := wantOne(t, r, SeverityError, CheckAdminReachable, "wus", "start its brokers")
	if !strings.Contains(f.Evidence["error"].(string), "connection refused") {
		t.Error(f.Evidence)
	}
	d := wantOne(t, r, SeverityError, CheckOffsetsReplicator, "scus", "bring wus back")
	if d.Peer != "wus" || !strings.Contains(d.Message, "4 of 4") {
		t.Errorf("%+v", d)
	}
	// Nothing else is claimed about wus, and one reachable cluster has no pair to compare.
	for _, f := range r.Findings {
		if f.Cluster == "wus" && f.Check != CheckAdminReachable && f.Check != CheckKoPListener {
			t.Errorf("finding on an unreachable cluster: %+v", f)
		}
	}
}

func TestAPIError(t *testing.T) {
	s, w := healthy("scus"), healthy("wus")
	s.NamespaceReplErr = &pulsarx.AdminError{Cluster: "scus", Op: "get", Status: http.StatusForbidden, Err: errors.New("forbidden")}
	r := runWith(t, Options{}, s, w)
	if !r.APIErrors {
		t.Error("APIErrors not set")
	}
	f := wantOne(t, r, SeverityError, CheckAdminAPI, "scus", "pulsarAuth")
	// The message (what the table shows) says the credentials were refused, and how.
	if !strings.Contains(f.Message, "refused the credentials (http 403)") || !strings.Contains(f.Message, "scus") {
		t.Errorf("message %q", f.Message)
	}
	// Another API error keeps the plain message and no credential fix.
	s.NamespaceReplErr = &pulsarx.AdminError{Cluster: "scus", Op: "get", Status: http.StatusInternalServerError, Err: errors.New("boom")}
	r = runWith(t, Options{}, s, w)
	if f := wantOne(t, r, SeverityError, CheckAdminAPI, "scus", ""); strings.Contains(f.Message, "credentials") || f.Fix != "" {
		t.Errorf("500 reported as an auth refusal: %+v", f)
	}
}

func TestTopics(t *testing.T) {
	s, w := healthy("scus"), healthy("wus")
	s.Topics["persistent://public/default/t23"] = 2
	w.Topics["persistent://public/default/t23"] = 3
	s.Topics["persistent://public/default/only-scus"] = 2
	s.NamespaceRepl["public/other"] = []string{"scus"}
	w.NamespaceRepl["public/other"] = []string{"scus", "wus"}
	s.Topics["persistent://public/other/t"] = 0
	w.Topics["persistent://public/other/t"] = 0
	s.activity = map[string]TopicActivity{"persistent://public/other/t": {LocalProducers: []string{"p1"}}}
	w.activity = map[string]TopicActivity{"persistent://public/other/t": {LocalProducers: []string{"p2"}}}
	r := runWith(t, Options{Topics: []string{"t23", "public/default/only-scus", "persistent://public/other/t", "topic-1"}}, s, w)

	wantOne(t, r, SeverityError, CheckTopicPartitions, "scus", "topics update-partitioned-topic persistent://public/default/t23 --partitions 3")
	wantOne(t, r, SeverityError, CheckTopicExists, "wus", "pulsar-admin --admin-url http://127.0.0.1:28080 topics create-partitioned-topic persistent://public/default/only-scus --partitions 2")
	wantOne(t, r, SeverityError, CheckTopicReplication, "scus", "namespaces set-clusters public/other --clusters scus,wus")
	if n := len(only(r, SeverityError, "")); n != 3 {
		t.Errorf("%d errors: %+v", n, only(r, SeverityError, ""))
	}
	var aligned []Finding
	for _, f := range only(r, SeverityWarning, CheckTopicOffsetAlignment) {
		aligned = append(aligned, f)
		if f.Subject == "persistent://public/other/t" && !strings.Contains(f.Message, "written on scus and wus") {
			t.Errorf("two writers: %s", f.Message)
		}
	}
	// t23, other/t and topic-1 exist on both; only-scus does not.
	if len(aligned) != 3 {
		t.Errorf("alignment warnings: %+v", aligned)
	}
}

func TestGroups(t *testing.T) {
	s, w := healthy("scus"), healthy("wus")
	gt := func(_ context.Context, cl *Cluster, g string) ([]string, error) {
		if g == "g1" && cl.Name == "scus" {
			return []string{"persistent://public/default/topic-1"}, nil
		}
		return nil, nil
	}
	r := runWith(t, Options{Groups: []string{"g1", "nobody"}, GroupTopics: gt}, s, w)
	wantOne(t, r, SeverityInfo, CheckGroupTopics, "", "")
	f := only(r, SeverityWarning, CheckGroupTopics)
	if len(f) != 1 || f[0].Subject != "nobody" {
		t.Errorf("%+v", f)
	}
	if len(only(r, SeverityWarning, CheckTopicOffsetAlignment)) != 1 {
		t.Error("the group's topic was not audited")
	}
}

func TestSingleClusterHasNoPairRules(t *testing.T) {
	s := healthy("scus")
	s.NamespaceRepl["public/__kafka"] = []string{"scus"}
	r := runWith(t, Options{}, s)
	if n := len(only(r, SeverityError, "")); n != 0 {
		t.Errorf("%+v", r.Findings)
	}
}

func TestGroupInPartitionKoPCannotLoad(t *testing.T) {
	s, w := healthy("scus"), healthy("wus")
	gt := func(_ context.Context, cl *Cluster, g string) ([]string, error) {
		topics := []string{"persistent://public/default/topic-1"}
		if cl.Name == "wus" {
			return topics, &UnloadableError{Failure: loader.LoadFailure{Partition: 5, MessageID: "12:3:5:-1", Reason: "record batch: field magic: unsupported magic 49"}}
		}
		return topics, nil
	}
	r := runWith(t, Options{Groups: []string{"g1"}, GroupTopics: gt}, s, w)
	f := only(r, SeverityError, CheckOffsetsLoadable)
	if len(f) != 1 || f[0].Cluster != "wus" || !strings.Contains(f[0].Message, "offsets partition 5") || !strings.Contains(f[0].Fix, "--partition 5") {
		t.Fatalf("%+v", r.Findings)
	}
	if len(only(r, SeverityError, CheckGroupTopics)) != 0 {
		t.Error("an unloadable partition is not a read failure")
	}
	if len(only(r, SeverityWarning, CheckTopicOffsetAlignment)) != 1 {
		t.Error("the group's topic was not audited")
	}
}

// partitionKafka answers like fakeKafka and says which offsets partitions KoP does not serve.
type partitionKafka struct {
	fakeKafka
	unserved map[string]map[int32]string // cluster -> partition -> answer
}

func (k *partitionKafka) ProbePartitions(_ context.Context, cl Cluster, n int32) (map[int32]string, error) {
	out := map[int32]string{}
	for p, a := range k.unserved[cl.Name] {
		if p < n {
			out[p] = a
		}
	}
	return out, nil
}

func TestOffsetsPartitionsServed(t *testing.T) {
	k := &partitionKafka{unserved: map[string]map[int32]string{"scus": {1: "NOT_COORDINATOR", 3: "NOT_COORDINATOR"}}}
	r := runWith(t, Options{Kafka: k}, healthy("scus"), healthy("wus"))
	f := wantOne(t, r, SeverityError, CheckOffsetsServed, "scus", "repair --yes")
	if !strings.Contains(f.Message, "offsets partitions 1, 3 of scus") || !strings.Contains(f.Fix, "--partition 1,3") {
		t.Errorf("%+v", f)
	}
	if len(only(r, SeverityError, CheckOffsetsServed)) != 1 {
		t.Errorf("findings %+v", only(r, SeverityError, CheckOffsetsServed))
	}
}

// topicRepl adds the offsets topic's own replication policy to a fake admin.
type topicRepl struct {
	*activityAdmin
	clusters   []string
	topicLevel bool
}

func (f *topicRepl) TopicReplicationClusters(ctx context.Context, topic string) ([]string, bool, error) {
	return f.clusters, f.topicLevel, f.Call(ctx, "TopicReplicationClusters "+topic)
}

func TestSyncDeploymentModel(t *testing.T) {
	// After `sync setup`: the offsets topic replicates to itself only, its replicators are gone.
	s, w := healthy("scus"), healthy("wus")
	s.Repl, w.Repl = map[string]map[string]pulsarx.Replication{}, map[string]map[string]pulsarx.Replication{}
	cs, cw := cluster(s), cluster(w)
	cs.Admin = &topicRepl{activityAdmin: s, clusters: []string{"scus"}, topicLevel: true}
	cw.Admin = &topicRepl{activityAdmin: w, clusters: []string{"wus"}, topicLevel: true}
	r := Run(context.Background(), Options{Clusters: []*Cluster{cs, cw}, Kafka: &fakeKafka{}, ReplicatorSettle: -1})
	if e := only(r, SeverityError, ""); len(e) != 0 {
		t.Errorf("the sync deployment is not a broken replication: %+v", e)
	}
	f := wantOne(t, r, SeverityInfo, CheckDeploymentModel, "scus", "sync setup --undo")
	if !strings.Contains(f.Message, "does not replicate to wus") || !strings.Contains(f.Message, "watch --sync") {
		t.Errorf("message: %q", f.Message)
	}
	wantOne(t, r, SeverityInfo, CheckDeploymentModel, "wus", "sync setup --undo")

	// The replication model: no topic-level policy, so missing replicators are still errors.
	s, w = healthy("scus"), healthy("wus")
	delete(s.Repl, pulsarx.PartitionTopic(offsetsTopic, 2))
	cs = cluster(s)
	cs.Admin = &topicRepl{activityAdmin: s, clusters: []string{"scus", "wus"}}
	r = Run(context.Background(), Options{Clusters: []*Cluster{cs, cluster(w)}, Kafka: &fakeKafka{}, ReplicatorSettle: -1})
	if n := len(only(r, "", CheckDeploymentModel)); n != 0 {
		t.Errorf("replication model reported as sync: %+v", r.Findings)
	}
	wantOne(t, r, SeverityError, CheckOffsetsReplicator, "scus", "")
}
