package loader

import (
	"strconv"
	"strings"
)

// DefaultKafkaNamespace is KoP's default kafkaTenant/kafkaNamespace.
const DefaultKafkaNamespace = "public/default"

const persistentDomain = "persistent://"

// PartitionSuffix is Pulsar's partition suffix (TopicName.PARTITIONED_TOPIC_SUFFIX).
const PartitionSuffix = "-partition-"

// What KoP does with topic names (KoP source, utils/KopTopic.java and KafkaRequestHandler):
//   - OffsetCommit: the key of every offset record holds KopTopic(topic, ns).getFullName(),
//     "persistent://tenant/ns/topic", without a partition suffix (the partition is a field
//     of the key). So the offsets topic never stores "-partition-N" names.
//   - OffsetFetch for named partitions answers with the names the client sent.
//   - OffsetFetch for all partitions strips only "persistent://" (replaceTopicPartition):
//     "public/default/topic-1", not "topic-1".
//   - Metadata for all topics strips "persistent://<kafkaNamespace>/"
//     (removeDefaultNamespacePrefix): "topic-1".
// Comparisons therefore go through NormalizeTopic, which maps every spelling to one.

func kafkaNS(ns string) string {
	if ns == "" {
		return DefaultKafkaNamespace
	}
	return strings.Trim(ns, "/")
}

// FullName expands a Kafka topic name the way KopTopic#expandToFullName does:
// "topic-1" -> "persistent://<kafkaNamespace>/topic-1", "tenant/ns/topic" ->
// "persistent://tenant/ns/topic", a full name stays as it is. A name KoP would reject
// (e.g. "a/b") is returned unchanged, so it only ever equals itself.
func FullName(topic, kafkaNamespace string) string {
	if strings.HasPrefix(topic, persistentDomain) {
		return topic
	}
	switch javaSplitLen(topic) {
	case 1:
		return persistentDomain + kafkaNS(kafkaNamespace) + "/" + topic
	case 3:
		return persistentDomain + topic
	default:
		return topic
	}
}

// ShortName is the name KoP answers with for a stored full name: without
// "persistent://<kafkaNamespace>/" for topics in the default Kafka namespace
// (removeDefaultNamespacePrefix), otherwise without "persistent://" ("tenant/ns/topic"),
// as OffsetFetch does for other namespaces.
func ShortName(full, kafkaNamespace string) string {
	prefix := persistentDomain + kafkaNS(kafkaNamespace) + "/"
	if rest, ok := strings.CutPrefix(full, prefix); ok {
		return rest
	}
	if rest, ok := strings.CutPrefix(full, persistentDomain); ok {
		return rest
	}
	return full
}

// NormalizeTopic maps every spelling KoP accepts or answers with ("topic-1",
// "public/default/topic-1", "persistent://public/default/topic-1") to one comparable form,
// the full name. Both sides of a comparison must use the same kafkaNamespace.
func NormalizeTopic(topic, kafkaNamespace string) string {
	return FullName(topic, kafkaNamespace)
}

// PartitionTopic returns the Pulsar topic of one partition: "<topic>-partition-<n>".
func PartitionTopic(topic string, partition int32) string {
	return topic + PartitionSuffix + strconv.Itoa(int(partition))
}

// SplitPartition splits "<topic>-partition-<n>" into topic and n; ok is false when the name
// has no valid suffix. Offset keys never carry the suffix; Pulsar topic names (offsets
// partitions, lookups) do.
func SplitPartition(name string) (topic string, partition int32, ok bool) {
	i := strings.LastIndex(name, PartitionSuffix)
	if i < 0 {
		return name, 0, false
	}
	digits := name[i+len(PartitionSuffix):]
	if digits == "" || (len(digits) > 1 && digits[0] == '0') {
		return name, 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 32)
	if err != nil || n < 0 || digits[0] == '+' || digits[0] == '-' {
		return name, 0, false
	}
	return name[:i], int32(n), true
}

// javaSplitLen is len(s.split("/")) in Java, which drops trailing empty strings; KoP decides
// between short and tenant/ns/topic names by it.
func javaSplitLen(s string) int {
	if s == "" {
		return 1
	}
	parts := strings.Split(s, "/")
	n := len(parts)
	for n > 0 && parts[n-1] == "" {
		n--
	}
	return n
}
