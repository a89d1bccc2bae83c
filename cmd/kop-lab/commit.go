package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/lab"
)

// commit commits one offset on a lab cluster: through KoP's Kafka path when the lab runs KoP
// (KoP writes and caches it), else (or with --via pulsar) written into the cluster's offsets
// topic in KoP's format, standing in for KoP's writer: the bytes are what KoP writes, but no
// KoP cache sees them. It never touches a cluster outside the lab.
func commit(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("commit", flag.ContinueOnError)
	cluster := fs.String("cluster", "scus", "lab cluster to write to (scus or wus)")
	group := fs.String("group", "G", "consumer group")
	topic := fs.String("topic", "topic-1", "Kafka topic (short name in the tenant's Kafka namespace, public/default or <tenant>/default, or a full persistent:// name)")
	partition := fs.Int("partition", 0, "topic partition")
	offset := fs.Int64("offset", -1, "committed offset (required)")
	via := fs.String("via", "auto", "kop (KoP's Kafka path), pulsar (kopcommit's writer) or auto (kop when the lab runs KoP)")
	tenant := fs.String("tenant", "", "tenant whose group it is: public (default) or one of kop-lab up --tenants; through KoP its Kafka client (its token, SASL username = the tenant), through Pulsar its offsets topic")
	if err := fs.Parse(args); err != nil {
		return err
	}
	t, err := tenantOf(ctx, "commit", *tenant)
	if err != nil {
		return err
	}
	if *offset < 0 {
		return errors.New("commit: --offset is required and must be >= 0")
	}
	_, target, err := currentCluster("commit", *cluster)
	if err != nil {
		return err
	}
	if *via == "auto" {
		*via = "pulsar"
		if c, err := runningCluster(ctx, target.Name); err == nil && c.KoP {
			*via = "kop"
		}
	}
	full := *topic
	if len(full) < len("persistent://") || full[:len("persistent://")] != "persistent://" {
		full = "persistent://" + lab.KafkaNamespaceOf(t) + "/" + full
	}
	switch *via {
	case "kop":
		if err := lab.CommitThroughKoPAs(ctx, *target, t, *group, full, int32(*partition), *offset); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		fmt.Printf("committed %s %s[%d]=%d on %s through KoP (%s, tenant %s)\n", *group, lab.KafkaTopicOf(t, full), *partition, *offset, target.Name, target.KafkaBootstrap, cmp.Or(t, lab.Tenant))
		return nil
	case "pulsar":
	default:
		return fmt.Errorf("commit: --via %q: want kop, pulsar or auto", *via)
	}
	client, err := lab.NewPulsarClient(*target)
	if err != nil {
		return fmt.Errorf("commit: cluster %s: %w", target.Name, err)
	}
	defer client.Close()
	w := kop.NewWriter(client, lab.OffsetsTopicOf(t), lab.OffsetsTopicPartitions)
	defer w.Close()
	p, id, err := w.Commit(ctx, kop.OffsetCommit{Group: *group, Topic: full, Partition: int32(*partition), Offset: *offset})
	if err != nil {
		return fmt.Errorf("commit: cluster %s: %w", target.Name, err)
	}
	fmt.Printf("wrote offset commit %s %s[%d]=%d to %s-partition-%d on %s (message %v), as KoP's writer would\n",
		*group, full, *partition, *offset, lab.OffsetsTopicOf(t), p, target.Name, id)
	return nil
}
