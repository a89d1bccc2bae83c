package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/testkit"
)

// commit writes one offset commit into a lab cluster's offsets topic in KoP's format. It
// stands in for KoP's own writer while no KoP NAR can be fetched (docs/lab.md): the bytes are
// what KoP writes, but no KoP cache sees them. It never touches a cluster outside the lab.
func commit(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("commit", flag.ContinueOnError)
	cluster := fs.String("cluster", "scus", "lab cluster to write to (scus or wus)")
	group := fs.String("group", "G", "consumer group")
	topic := fs.String("topic", "topic-1", "Kafka topic (short name in public/default, or a full persistent:// name)")
	partition := fs.Int("partition", 0, "topic partition")
	offset := fs.Int64("offset", -1, "committed offset (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *offset < 0 {
		return errors.New("commit: --offset is required and must be >= 0")
	}
	var target *lab.Cluster
	for _, c := range lab.DefaultClusters() {
		if c.Name == *cluster {
			c := c
			target = &c
		}
	}
	if target == nil {
		return fmt.Errorf("commit: unknown lab cluster %q (scus or wus)", *cluster)
	}
	full := *topic
	if len(full) < len("persistent://") || full[:len("persistent://")] != "persistent://" {
		full = "persistent://" + lab.DefaultNamespace + "/" + full
	}
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: target.ServiceURL, ConnectionTimeout: 5 * time.Second, OperationTimeout: 15 * time.Second, Logger: plog.DefaultNopLogger()})
	if err != nil {
		return fmt.Errorf("commit: cluster %s: %w", target.Name, err)
	}
	defer client.Close()
	w := testkit.NewWriter(client, lab.OffsetsTopic, lab.OffsetsTopicPartitions)
	defer w.Close()
	p, id, err := w.Commit(ctx, testkit.OffsetCommit{Group: *group, Topic: full, Partition: int32(*partition), Offset: *offset})
	if err != nil {
		return fmt.Errorf("commit: cluster %s: %w", target.Name, err)
	}
	fmt.Printf("wrote offset commit %s %s[%d]=%d to %s-partition-%d on %s (message %v), as KoP's writer would\n",
		*group, full, *partition, *offset, lab.OffsetsTopic, p, target.Name, id)
	return nil
}
