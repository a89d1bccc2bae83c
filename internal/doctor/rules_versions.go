package doctor

import (
	"fmt"
	"strings"
)

// kopLine is a KoP release line as its ApiVersions answer shows it: each line implements the
// Kafka protocol of the kafka-clients it was built with, so the highest OffsetFetch version
// it lists tells the lines apart (KoP has no version endpoint of its own).
type kopLine struct {
	Name  string // "KoP 2.10"
	Kafka string // the Kafka protocol it implements
	// OffsetFetch is the highest OffsetFetch version the line lists.
	OffsetFetch int16
	// Hazards are what differs on this line for offsets tools, each an info.
	Hazards []string
}

// kopLines are the lines seen on the lab (docs/kop-facts.md, "What each KoP line answers").
var kopLines = []kopLine{
	{Name: "KoP 2.10", Kafka: "Kafka 2.1", OffsetFetch: 5, Hazards: []string{
		"KoP 2.10 answers OffsetFetch up to v5 (Kafka 2.1): one group per request, no batched fetch of many groups (v8), so check and watch send one request per group; clients newer than Kafka 2.1 negotiate down",
	}},
	{Name: "KoP 3.0", Kafka: "Kafka 2.8", OffsetFetch: 7, Hazards: []string{
		"KoP 3.0 answers OffsetFetch up to v7 (Kafka 2.8): one group per request, no batched fetch of many groups (v8), so check, watch, repair and failover send one request per group (16 at once to each coordinator)",
	}},
	{Name: "KoP 3.1", Kafka: "Kafka 3.4", OffsetFetch: 8},
}

// kopLineOf returns the KoP line whose answer lists maxVersions, false when none fits.
func kopLineOf(maxVersions map[string]int16) (kopLine, bool) {
	of, ok := maxVersions["OffsetFetch"]
	if !ok {
		return kopLine{}, false
	}
	for _, l := range kopLines {
		if l.OffsetFetch == of {
			return l, true
		}
	}
	return kopLine{}, false
}

// checkKoPVersion reports which KoP line answers on cl's listener and its known hazards.
func checkKoPVersion(r *run, cl *Cluster, maxVersions map[string]int16) []Finding {
	if len(maxVersions) == 0 {
		return nil
	}
	ev := map[string]any{"maxVersions": maxVersions}
	l, ok := kopLineOf(maxVersions)
	if !ok {
		return []Finding{{Severity: SeverityInfo, Check: CheckKoPVersion, Cluster: cl.Name,
			Message:  fmt.Sprintf("KoP on %s answers OffsetFetch up to v%d, a line not seen on the lab (KoP 2.10, 3.0 and 3.1 were): its behaviour is not proven", cl.Name, maxVersions["OffsetFetch"]),
			Evidence: ev}}
	}
	r.mu.Lock()
	r.reports[cl.Name].KoPLine = l.Name
	r.mu.Unlock()
	ev["line"], ev["kafkaProtocol"] = l.Name, l.Kafka
	out := []Finding{{Severity: SeverityInfo, Check: CheckKoPVersion, Cluster: cl.Name,
		Message:  fmt.Sprintf("%s line on %s (it answers %s request versions: OffsetFetch up to v%d, OffsetCommit up to v%d)", l.Name, cl.Name, l.Kafka, l.OffsetFetch, maxVersions["OffsetCommit"]),
		Evidence: ev}}
	for _, h := range l.Hazards {
		out = append(out, Finding{Severity: SeverityInfo, Check: CheckKoPVersion, Cluster: cl.Name, Subject: l.Name, Message: h, Evidence: ev})
	}
	return out
}

// pulsarRelease is a Pulsar version's major, minor and patch numbers; ok is false when v is
// not of that form.
func pulsarRelease(v string) (major, minor, patch int, ok bool) {
	n, _ := fmt.Sscanf(v, "%d.%d.%d", &major, &minor, &patch)
	return major, minor, patch, n == 3
}

// replicationStartAtHonoured: replicationStartAt=earliest is honoured from 3.0.9, 3.3.4 and
// 4.0.2 on (and on every later line).
func replicationStartAtHonoured(major, minor, patch int) bool {
	switch {
	case major < 3:
		return false
	case major == 3 && minor == 0:
		return patch >= 9
	case major == 3 && minor < 3:
		return false
	case major == 3 && minor == 3:
		return patch >= 4
	case major == 4 && minor == 0:
		return patch >= 2
	}
	return true
}

// pulsarHazards are the known hazards of Pulsar version v for geo-replicated offsets, with
// the broker's runtime configuration rc (nil when unreadable).
func pulsarHazards(cl *Cluster, v string, rc map[string]string) []Finding {
	major, minor, patch, ok := pulsarRelease(v)
	if !ok {
		return nil
	}
	var out []Finding
	if !replicationStartAtHonoured(major, minor, patch) {
		out = append(out, Finding{Severity: SeverityInfo, Check: CheckBrokerVersion, Cluster: cl.Name, Subject: v,
			Message:  fmt.Sprintf("Apache Pulsar %s does not honour replicationStartAt=earliest (3.0.9, 3.3.4 and 4.0.2 do): a replicator created after commits were written starts at the latest message, so commits made on %s before %s replicated to a peer never reach it", v, cl.Name, cl.MetadataNamespacePath()),
			Evidence: map[string]any{"version": v},
			Fix:      "set the replication clusters of " + cl.MetadataNamespacePath() + " before the first commit; for older commits, land them with kop-offsets failover or watch --sync"})
	}
	if major < 3 && rc != nil && strings.Contains(rc["messagingProtocols"], "kafka") && strings.EqualFold(rc["brokerDeduplicationEnabled"], "true") {
		out = append(out, Finding{Severity: SeverityError, Check: CheckBrokerSettings, Cluster: cl.Name, Subject: "brokerDeduplicationEnabled",
			Message:  fmt.Sprintf("KoP writes every entry of a Kafka topic with an empty producer name and sequence id 0, and Apache Pulsar %s on %s deduplicates replicated messages by them (brokerDeduplicationEnabled=true): of the entries another cluster's KoP produced and replicated here, every one after the first is dropped, so replicated Kafka topics arrive incomplete and their offsets differ (Pulsar 3.0.16 keeps them)", v, cl.Name),
			Evidence: map[string]any{"brokerDeduplicationEnabled": rc["brokerDeduplicationEnabled"], "version": v},
			Fix:      fmt.Sprintf("set brokerDeduplicationEnabled=false in broker.conf of %s and restart its brokers, or %s for each replicated namespace of Kafka topics", cl.Name, pulsarAdmin(cl, "namespaces set-deduplication", "<tenant/namespace>", "--disable"))})
	}
	if major < 3 && rc != nil && strings.Contains(rc["messagingProtocols"], "kafka") && strings.EqualFold(rc["transactionCoordinatorEnabled"], "false") {
		out = append(out, Finding{Severity: SeverityWarning, Check: CheckBrokerSettings, Cluster: cl.Name, Subject: "transactionCoordinatorEnabled",
			Message:  fmt.Sprintf("Apache Pulsar %s on %s runs without its transaction buffer (transactionCoordinatorEnabled=false): it refuses a replicated transactional message (\"Transaction buffer disable!\"), such as a commit made inside a Kafka transaction through another cluster's KoP, and that partition's replicator from the other cluster stalls for good, with every later commit behind it", v, cl.Name),
			Evidence: map[string]any{"transactionCoordinatorEnabled": rc["transactionCoordinatorEnabled"], "version": v},
			Fix:      "set transactionCoordinatorEnabled=true in broker.conf of " + cl.Name + " and restart its brokers; then unload each stalled topic on the sending cluster (doctor's offsets-replicator finding names them)"})
	}
	if rc != nil && (strings.EqualFold(rc["topicLevelPoliciesEnabled"], "false") || strings.EqualFold(rc["systemTopicEnabled"], "false")) {
		out = append(out, Finding{Severity: SeverityInfo, Check: CheckBrokerSettings, Cluster: cl.Name, Subject: "topicLevelPoliciesEnabled",
			Message:  fmt.Sprintf("topic policies are off on %s (systemTopicEnabled=%s, topicLevelPoliciesEnabled=%s; Pulsar 2.10's defaults): `kop-offsets sync setup` cannot set the offsets topic's own replication clusters there", cl.Name, rc["systemTopicEnabled"], rc["topicLevelPoliciesEnabled"]),
			Evidence: map[string]any{"systemTopicEnabled": rc["systemTopicEnabled"], "topicLevelPoliciesEnabled": rc["topicLevelPoliciesEnabled"]},
			Fix:      "for the sync deployment: set systemTopicEnabled=true and topicLevelPoliciesEnabled=true in broker.conf of " + cl.Name + " and restart its brokers"})
	}
	return out
}
