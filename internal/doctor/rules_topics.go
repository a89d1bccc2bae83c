package doctor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// maxAlignmentPartitions bounds the partitions whose stats the alignment check reads.
const maxAlignmentPartitions = 64

// topicsToAudit returns the full names of --topic and of the topics of --group, sorted,
// and the findings about groups.
func topicsToAudit(ctx context.Context, r *run) ([]string, []Finding) {
	var out []Finding
	set := map[string]bool{}
	ns := loader.DefaultKafkaNamespace
	if len(r.clusters) > 0 && r.clusters[0].KafkaNamespace != "" {
		ns = r.clusters[0].KafkaNamespace
	}
	for _, t := range r.opts.Topics {
		set[loader.NormalizeTopic(t, ns)] = true
	}
	for _, g := range r.opts.Groups {
		if r.opts.GroupTopics == nil {
			break
		}
		found := map[string][]string{}
		for _, cl := range r.upClusters() {
			ts, err := r.opts.GroupTopics(ctx, r.orig[cl.Name], g)
			var ue *UnloadableError
			if errors.As(err, &ue) {
				out = append(out, Finding{Severity: SeverityError, Check: CheckOffsetsLoadable, Cluster: cl.Name, Subject: g,
					Message: fmt.Sprintf("KoP on %s cannot load offsets partition %d, which holds group %s: message %s: %s. After any load (a broker restart, a bundle move, a reload) KoP serves no offset to any group of that partition",
						cl.Name, ue.Failure.Partition, g, ue.Failure.MessageID, ue.Failure.Reason),
					Evidence: map[string]any{"offsetsPartition": ue.Failure.Partition, "messageId": ue.Failure.MessageID, "reason": ue.Failure.Reason},
					Fix:      "kop-offsets dump --cluster " + cl.Name + " --partition " + fmt.Sprint(ue.Failure.Partition) + " --kind undecodable   # find the record; remove it by publishing an empty message with its Pulsar key and compacting the partition (docs/kop-facts.md)",
				})
				err = nil
			}
			if err != nil {
				out = append(out, Finding{Severity: SeverityError, Check: CheckGroupTopics, Cluster: cl.Name, Subject: g,
					Message:  fmt.Sprintf("cannot read the persisted offsets of group %s on %s", g, cl.Name),
					Evidence: map[string]any{"error": err.Error()}})
				r.mu.Lock()
				r.apiErr = true
				r.mu.Unlock()
				continue
			}
			for _, t := range ts {
				set[t] = true
				found[t] = append(found[t], cl.Name)
			}
		}
		if len(found) == 0 {
			out = append(out, Finding{Severity: SeverityWarning, Check: CheckGroupTopics, Subject: g,
				Message: fmt.Sprintf("group %s has no persisted offsets on any cluster: no topic to check for it (is the name right? kop-offsets groups lists them)", g)})
			continue
		}
		out = append(out, Finding{Severity: SeverityInfo, Check: CheckGroupTopics, Subject: g,
			Message:  fmt.Sprintf("group %s has persisted offsets for %d topic(s)", g, len(found)),
			Evidence: map[string]any{"topics": found}})
	}
	topics := make([]string, 0, len(set))
	for t := range set {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	return topics, out
}

func topicNamespace(topic string) string {
	rest := strings.TrimPrefix(strings.TrimPrefix(topic, "persistent://"), "non-persistent://")
	parts := strings.Split(rest, "/")
	if len(parts) < 3 {
		return ""
	}
	return parts[0] + "/" + parts[1]
}

// checkTopics: each topic exists everywhere with the same partition count, in a namespace
// replicated everywhere; and a warning that its Kafka offsets are per-cluster numbers.
func checkTopics(ctx context.Context, r *run) []Finding {
	topics, out := topicsToAudit(ctx, r)
	all := pulsarNames(r.clusters)
	for _, t := range topics {
		counts := map[string]int32{}
		var maxN int32
		var missing []*Cluster
		for _, cl := range r.upClusters() {
			ok, err := cl.Admin.TopicExists(ctx, t)
			if err != nil {
				out = append(out, r.failed(cl, CheckTopicExists, t, "look for topic "+t, err)...)
				continue
			}
			if !ok {
				missing = append(missing, cl)
				continue
			}
			n, err := cl.Admin.PartitionedTopicPartitions(ctx, t)
			if err != nil {
				out = append(out, r.failed(cl, CheckTopicPartitions, t, "get the partitions of "+t, err)...)
				continue
			}
			counts[cl.Name] = n
			maxN = max(maxN, n)
		}
		for _, cl := range missing {
			f := Finding{Severity: SeverityError, Check: CheckTopicExists, Cluster: cl.Name, Subject: t,
				Message:  fmt.Sprintf("topic %s does not exist on %s: consumers there have nothing to resume", t, cl.Name),
				Evidence: map[string]any{"partitionsElsewhere": counts}}
			if maxN > 0 {
				f.Fix = pulsarAdmin(cl, "topics create-partitioned-topic", t, "--partitions", fmt.Sprint(maxN))
				f.FixPulsarctl = pulsarctl(cl, "topics create", t, fmt.Sprint(maxN))
			} else {
				f.Fix = pulsarAdmin(cl, "topics create", t)
				f.FixPulsarctl = pulsarctl(cl, "topics create", t, "0")
			}
			out = append(out, f)
		}
		for _, cl := range r.upClusters() {
			n, ok := counts[cl.Name]
			if !ok || n == maxN || len(counts) < 2 {
				continue
			}
			f := Finding{Severity: SeverityError, Check: CheckTopicPartitions, Cluster: cl.Name, Subject: t,
				Message:  fmt.Sprintf("topic %s has %d partitions on %s but %d elsewhere: offsets of the partitions it lacks cannot be used there, and keyed messages land in different partitions", t, n, cl.Name, maxN),
				Evidence: map[string]any{"partitions": counts}}
			if n > 0 {
				f.Fix = pulsarAdmin(cl, "topics update-partitioned-topic", t, "--partitions", fmt.Sprint(maxN))
				f.FixPulsarctl = pulsarctl(cl, "topics update", t, fmt.Sprint(maxN))
			} else {
				f.Fix = fmt.Sprintf("%s is not partitioned on %s: a non-partitioned topic cannot become partitioned; recreate it with %d partitions", t, cl.Name, maxN)
			}
			out = append(out, f)
		}
		if len(all) < 2 || len(counts) == 0 {
			continue
		}
		if ns := topicNamespace(t); ns != "" {
			for _, cl := range r.upClusters() {
				if _, ok := counts[cl.Name]; !ok {
					continue
				}
				out = append(out, namespaceReplication(ctx, r, cl, ns, all, CheckTopicReplication,
					"messages of its topics written on %s never reach %s, and neither can consumers resume there")...)
			}
		}
		if len(counts) >= 2 {
			out = append(out, alignment(ctx, r, t, counts)...)
		}
	}
	return out
}

// alignment warns that the Kafka offsets of t are per-cluster numbers (domain.md, "What
// the same offset means"), with what the topic stats show about its writers.
func alignment(ctx context.Context, r *run, t string, counts map[string]int32) []Finding {
	writers := map[string][]string{}
	msgIn := map[string]int64{}
	var writtenOn []string
	for _, cl := range r.upClusters() {
		n, ok := counts[cl.Name]
		if !ok {
			continue
		}
		parts := []string{t}
		if n > 0 {
			parts = parts[:0]
			for i := int32(0); i < min(n, maxAlignmentPartitions); i++ {
				parts = append(parts, pulsarx.PartitionTopic(t, i))
			}
		}
		for _, pt := range parts {
			act, err := cl.Admin.TopicActivity(ctx, pt)
			if err != nil {
				continue // evidence only
			}
			writers[cl.Name] = append(writers[cl.Name], act.LocalProducers...)
			msgIn[cl.Name] += act.MsgInCounter
		}
		if len(writers[cl.Name]) > 0 {
			writtenOn = append(writtenOn, cl.Name)
		}
	}
	ev := map[string]any{"localProducers": writers, "msgInCounter": msgIn}
	msg := fmt.Sprintf("the Kafka offsets of %s are per-cluster numbers: a replicated commit points at the same message only if every message was written on one cluster and replication was on before the first one; doctor cannot see the topic's history", t)
	if len(writtenOn) > 1 {
		slices.Sort(writtenOn)
		msg = fmt.Sprintf("%s is being written on %s at once: its Kafka offsets are per-cluster numbers, so an offset committed on one cluster points at a different message on the other", t, strings.Join(writtenOn, " and "))
	}
	return []Finding{{Severity: SeverityWarning, Check: CheckTopicOffsetAlignment, Subject: t, Message: msg, Evidence: ev,
		Fix: "write each topic on one cluster only, enable replication before the first message, and see which groups it affects with: kop-offsets check (misaligned rows show the translated offset); move a group between clusters with: kop-offsets failover"}}
}
