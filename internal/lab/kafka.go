package lab

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kop-offsets/kop-offsets/internal/connect"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// KafkaClient returns a franz-go client for c's KoP listener, built like the CLI's
// (internal/connect: capped at Kafka 3.8 request versions, which KoP negotiates).
func KafkaClient(c Cluster, extra ...kgo.Opt) (*kgo.Client, error) {
	return KafkaClientAs(c, "", extra...)
}

// KafkaClientAs is KafkaClient authenticated as tenant t of a multi-tenant lab (its own token,
// username t: KoP then serves t's groups and topics); an empty t or public is KafkaClient.
func KafkaClientAs(c Cluster, t string, extra ...kgo.Opt) (*kgo.Client, error) {
	return connect.NewKafkaClient(c.TenantConfig(t), connect.Options{RequestTimeout: 30 * time.Second}, extra...)
}

// KafkaNamespaceOf is where tenant t's short Kafka topic names live: public/default for
// public (or no tenant), else <t>/default.
func KafkaNamespaceOf(t string) string {
	if t == "" || t == Tenant {
		return DefaultNamespace
	}
	return TenantDefaultNamespace(t)
}

// OffsetsTopicOf is tenant t's offsets topic (public's for an empty t).
func OffsetsTopicOf(t string) string {
	if t == "" || t == Tenant {
		return OffsetsTopic
	}
	return TenantOffsetsTopic(t)
}

// KafkaTopic is the name a Kafka client uses for a KoP topic: the short name in the default
// Kafka namespace (public/default), tenant/ns/topic elsewhere.
func KafkaTopic(full string) string { return KafkaTopicOf("", full) }

// KafkaTopicOf is the name tenant t's Kafka clients use for a KoP topic: the short name in
// t's Kafka namespace, tenant/ns/topic elsewhere.
func KafkaTopicOf(t, full string) string {
	s := strings.TrimPrefix(full, "persistent://")
	if rest, ok := strings.CutPrefix(s, KafkaNamespaceOf(t)+"/"); ok {
		return rest
	}
	return s
}

// CommitThroughKoP commits group's offset on cluster c through KoP's Kafka path (an
// OffsetCommit without a member, as an admin tool sends it), so that KoP writes the record and
// caches the value. topic may be a full persistent:// name or a Kafka name.
func CommitThroughKoP(ctx context.Context, c Cluster, group, topic string, partition int32, offset int64) error {
	return CommitThroughKoPAs(ctx, c, "", group, topic, partition, offset)
}

// CommitThroughKoPAs is CommitThroughKoP as tenant t (KafkaClientAs): the commit lands in
// t's offsets topic, and a short topic name is one of t's Kafka namespace.
func CommitThroughKoPAs(ctx context.Context, c Cluster, t, group, topic string, partition int32, offset int64) error {
	cl, err := KafkaClientAs(c, t)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var offs kadm.Offsets
	name := KafkaTopicOf(t, topic)
	offs.Add(kadm.Offset{Topic: name, Partition: partition, At: offset, LeaderEpoch: -1})
	// KoP answers COORDINATOR_LOAD_IN_PROGRESS while it loads the group's partition; franz-go
	// retries that within its retry timeout.
	resp, err := adm.CommitOffsets(ctx, group, offs)
	if err != nil {
		return fmt.Errorf("%s: commit %s %s[%d]=%d through KoP (%s%s): %w", c.Name, group, name, partition, offset, c.KafkaBootstrap, asTenant(t), err)
	}
	if err := resp.Error(); err != nil {
		return fmt.Errorf("%s: commit %s %s[%d]=%d through KoP (%s%s): %w", c.Name, group, name, partition, offset, c.KafkaBootstrap, asTenant(t), err)
	}
	return nil
}

// FetchThroughKoP returns what KoP on c serves for group's topic/partition: the offset, or
// ok false when it has none (-1 on the wire).
func FetchThroughKoP(ctx context.Context, c Cluster, group, topic string, partition int32) (offset int64, ok bool, err error) {
	return FetchThroughKoPAs(ctx, c, "", group, topic, partition)
}

// FetchThroughKoPAs is FetchThroughKoP as tenant t: what KoP serves for t's group.
func FetchThroughKoPAs(ctx context.Context, c Cluster, t, group, topic string, partition int32) (offset int64, ok bool, err error) {
	cl, err := KafkaClientAs(c, t)
	if err != nil {
		return 0, false, err
	}
	defer cl.Close()
	// KoP 3.1 names the topics of its answer tenant/ns/topic (public/default/topic-1): compare
	// full names.
	resp, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return 0, false, fmt.Errorf("%s: OffsetFetch %s through KoP (%s%s): %w", c.Name, group, c.KafkaBootstrap, asTenant(t), err)
	}
	want := fullTopicOf(t, topic)
	for name, ps := range resp {
		if o, found := ps[partition]; found && fullTopicOf(t, name) == want && o.At >= 0 {
			return o.At, true, nil
		}
	}
	return 0, false, nil
}

// fullTopic returns a topic's full Pulsar name from a full name, tenant/ns/topic, or a short
// name in the default Kafka namespace.
func fullTopic(s string) string { return fullTopicOf("", s) }

// fullTopicOf is fullTopic for tenant t's clients: a short name is in t's Kafka namespace.
func fullTopicOf(t, s string) string {
	switch {
	case strings.HasPrefix(s, "persistent://"):
		return s
	case strings.Count(s, "/") == 2:
		return "persistent://" + s
	}
	return "persistent://" + KafkaNamespaceOf(t) + "/" + s
}

// asTenant names tenant t in an error, empty for public.
func asTenant(t string) string {
	if t == "" || t == Tenant {
		return ""
	}
	return ", as tenant " + t
}

// Commit writes one offset commit on cluster name the way this lab can: through KoP's Kafka
// path when KoP runs (KoP writes the record and caches it), else with kop's commit writer, byte for byte
// what KoP would write into the offsets topic. It returns the offsets partition of the group.
func (l *Lab) Commit(ctx context.Context, name string, c kop.OffsetCommit) (int32, error) {
	cl := l.Cluster(name)
	part := loader.PartitionFor(c.Group, OffsetsTopicPartitions)
	if cl.KoP {
		return part, CommitThroughKoP(ctx, cl, c.Group, c.Topic, c.Partition, c.Offset)
	}
	pc, err := NewPulsarClient(cl)
	if err != nil {
		return 0, err
	}
	defer pc.Close()
	w := kop.NewWriter(pc, OffsetsTopic, OffsetsTopicPartitions)
	defer w.Close()
	p, _, err := w.Commit(ctx, c)
	if err != nil {
		return 0, err
	}
	if p != part {
		return p, errors.New("lab: kopcommit wrote to another offsets partition than KoP's mapping")
	}
	return p, nil
}

// GroupInPartition returns a group name (prefix-N) that KoP keeps in offsets partition p.
func GroupInPartition(prefix string, p int32) string {
	for i := 0; ; i++ {
		if g := fmt.Sprintf("%s-%d", prefix, i); loader.PartitionFor(g, OffsetsTopicPartitions) == p {
			return g
		}
	}
}

// WaitKoPServes waits until c's KoP answers OffsetFetch for a group of offsets partition p
// (it has loaded the partition and is its coordinator).
func WaitKoPServes(ctx context.Context, c Cluster, p int32, timeout time.Duration) error {
	return WaitKoPServesAs(ctx, c, "", p, timeout)
}

// WaitKoPServesAs is WaitKoPServes for tenant t's offsets partition p, asked as t.
func WaitKoPServesAs(ctx context.Context, c Cluster, t string, p int32, timeout time.Duration) error {
	g := GroupInPartition("lab-probe", p)
	deadline := time.Now().Add(timeout)
	for {
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, _, err := FetchThroughKoPAs(fctx, c, t, g, fullTopicOf(t, "topic-1"), 0)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: KoP does not serve offsets partition %d of %s after %s: %w", c.Name, p, OffsetsTopicOf(t), timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// ReloadOffsetsPartition makes c's KoP load offsets partition p afresh the way `reload`
// does (its bundle of public/__kafka unloaded, then the partition looked up) and waits until
// KoP serves every offsets partition again: an unload while KoP still loads a partition can
// leave it unloaded for good (issue 15), so the next unload must wait for this one. Tests use
// it to make KoP load what they wrote, or to put back a partition they left unloaded.
func ReloadOffsetsPartition(ctx context.Context, c Cluster, p int32) error {
	return ReloadOffsetsPartitionOf(ctx, c, "", p)
}

// ReloadOffsetsPartitionOf is ReloadOffsetsPartition for tenant t's offsets topic (its bundles
// of <t>/__kafka), checked through KoP as t.
func ReloadOffsetsPartitionOf(ctx context.Context, c Cluster, t string, p int32) error {
	a, err := NewAdmin(c)
	if err != nil {
		return err
	}
	if err := reloadBundleOf(ctx, c, a, t, p); err != nil {
		return err
	}
	// KoP can drop the load of a partition taken back right after its unload
	// (docs/kop-facts.md): one whose probe group is still not served gets its bundle unloaded
	// and looked up again, a few times, as the tool's reload does.
	for attempt := 0; ; attempt++ {
		var stuck []int32
		var last error
		for q := int32(0); q < OffsetsTopicPartitions; q++ {
			if err := WaitKoPServesAs(ctx, c, t, q, 30*time.Second); err != nil {
				stuck, last = append(stuck, q), err
			}
		}
		if len(stuck) == 0 {
			return nil
		}
		if attempt == 3 {
			return last
		}
		for _, q := range stuck {
			if err := reloadBundleOf(ctx, c, a, t, q); err != nil {
				return err
			}
		}
	}
}

// reloadBundleOf unloads the bundle of tenant t's offsets partition p and looks the
// partition up.
func reloadBundleOf(ctx context.Context, c Cluster, a pulsaradmin.Client, t string, p int32) error {
	tn, err := utils.GetTopicName(fmt.Sprintf("%s-partition-%d", OffsetsTopicOf(t), p))
	if err != nil {
		return err
	}
	rng, err := a.Topics().GetBundleRangeWithContext(ctx, *tn)
	if err != nil {
		return fmt.Errorf("%s: bundle of %s: %w", c.Name, tn, err)
	}
	rng = strings.Trim(strings.TrimSpace(rng), `"`)
	ns := tn.GetTenant() + "/" + tn.GetNamespace()
	if err := a.Namespaces().UnloadNamespaceBundleWithContext(ctx, ns, rng); err != nil {
		return fmt.Errorf("%s: unload bundle %s/%s: %w", c.Name, ns, rng, err)
	}
	// A lookup right after the unload may still see the closing owner: retry for a while.
	for i := 0; ; i++ {
		if _, err = a.Topics().LookupWithContext(ctx, *tn); err == nil || i == 20 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("%s: look up %s: %w", c.Name, tn, err)
	}
	return nil
}
