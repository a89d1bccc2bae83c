package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// runningCluster returns the named cluster of the running lab (with its KoP flag).
func runningCluster(ctx context.Context, name string) (lab.Cluster, error) {
	r, err := lab.Status(ctx, lab.Options{})
	if err != nil {
		return lab.Cluster{}, err
	}
	if !r.Running {
		return lab.Cluster{}, errors.New("the lab is not running (kop-lab up)")
	}
	for _, c := range r.Clusters {
		if c.Name == name {
			return c.Cluster, nil
		}
	}
	return lab.Cluster{}, fmt.Errorf("unknown lab cluster %q (%v)", name, statusNames(r))
}

// runningKoP is the running lab cluster name, which what needs to run KoP.
func runningKoP(ctx context.Context, name, what string) (lab.Cluster, error) {
	c, err := runningCluster(ctx, name)
	if err != nil {
		return lab.Cluster{}, err
	}
	if !c.KoP {
		return lab.Cluster{}, fmt.Errorf("%s: %s needs KoP, and the lab runs without it (bring a NAR: KOP_NAR=/path/to/kop.nar kop-lab up)", c.Name, what)
	}
	return c, nil
}

// tenantOf checks --tenant t against the running lab: empty or public is the lab's own
// tenant; another must be one of the tenants kop-lab up --tenants prepared.
func tenantOf(ctx context.Context, what, t string) (string, error) {
	if t == "" || t == lab.Tenant {
		return "", nil
	}
	r, err := lab.Status(ctx, lab.Options{})
	if err != nil {
		return "", err
	}
	if slices.Contains(r.Tenants, t) {
		return t, nil
	}
	if len(r.Tenants) == 0 {
		return "", fmt.Errorf("%s: --tenant %s: the lab has no tenants but %s (kop-lab up --auth token --tenants N)", what, t, lab.Tenant)
	}
	return "", fmt.Errorf("%s: --tenant %s: not a tenant of the lab (%s, %s)", what, t, lab.Tenant, strings.Join(r.Tenants, ", "))
}

const tenantUsage = "tenant whose Kafka client to be (its token, SASL username = the tenant): public (default) or one of kop-lab up --tenants"

// produce writes --count records to --topic through a cluster's KoP (franz-go), creating
// the topic with one partition on both clusters first.
func produce(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("produce", flag.ContinueOnError)
	cluster := fs.String("cluster", "scus", "lab cluster to produce to")
	topic := fs.String("topic", "topic-1", "Kafka topic in the tenant's Kafka namespace (public/default, <tenant>/default)")
	count := fs.Int("count", 1, "records to write")
	tenant := fs.String("tenant", "", tenantUsage)
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, err := runningKoP(ctx, *cluster, "produce")
	if err != nil {
		return err
	}
	t, err := tenantOf(ctx, "produce", *tenant)
	if err != nil {
		return err
	}
	tn, err := utils.GetTopicName("persistent://" + lab.KafkaNamespaceOf(t) + "/" + *topic)
	if err != nil {
		return err
	}
	all, err := lab.CurrentClusters(lab.Options{})
	if err != nil {
		return err
	}
	for _, other := range all {
		a, err := lab.NewAdmin(other)
		if err != nil {
			return err
		}
		if err := a.Topics().CreateWithContext(ctx, *tn, 1); err != nil && !strings.Contains(err.Error(), "409") {
			return fmt.Errorf("%s: create %s: %w", other.Name, tn, err)
		}
	}
	cl, err := lab.KafkaClientAs(c, t, kgo.DefaultProduceTopic(*topic), kgo.DisableIdempotentWrite(), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	start := time.Now()
	var rs []*kgo.Record
	for i := 0; i < *count; i++ {
		rs = append(rs, &kgo.Record{Key: []byte(fmt.Sprintf("k-%d", i)), Value: []byte(fmt.Sprintf("v-%d", i))})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		return fmt.Errorf("%s: produce to %s through KoP: %w", c.Name, *topic, err)
	}
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, *topic)
	end := int64(-1)
	if err == nil {
		if o, ok := ends.Lookup(*topic, 0); ok {
			end = o.Offset
		}
	}
	fmt.Printf("produced %d records to %s on %s through KoP in %s; log end offset %d\n", *count, tn, c.Name, time.Since(start).Round(time.Millisecond), end)
	return nil
}

// consume joins --group on a cluster with a franz-go group consumer of --topic, prints the
// offset of the first record it gets and leaves without committing.
func consume(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("consume", flag.ContinueOnError)
	cluster := fs.String("cluster", "wus", "lab cluster to consume from")
	group := fs.String("group", "G", "consumer group")
	topic := fs.String("topic", "topic-1", "Kafka topic")
	tenant := fs.String("tenant", "", tenantUsage)
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, err := runningKoP(ctx, *cluster, "consume")
	if err != nil {
		return err
	}
	t, err := tenantOf(ctx, "consume", *tenant)
	if err != nil {
		return err
	}
	cl, err := lab.KafkaClientAs(c, t, kgo.ConsumerGroup(*group), kgo.ConsumeTopics(*topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		fetches := cl.PollRecords(ctx, 1)
		if ctx.Err() != nil {
			return fmt.Errorf("%s: no record for group %s on %s within a minute", c.Name, *group, *topic)
		}
		var first *kgo.Record
		fetches.EachRecord(func(r *kgo.Record) {
			if first == nil {
				first = r
			}
		})
		if first != nil {
			fmt.Printf("group %s on %s: first record at %s[%d] offset %d (key %s); nothing committed\n", *group, c.Name, first.Topic, first.Partition, first.Offset, first.Key)
			return nil
		}
	}
}

// refresh makes a cluster's KoP load --group's offsets partition afresh (its bundle unloaded
// and looked up), as a broker taking the bundle would, and waits until KoP serves it again.
func refresh(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("refresh", flag.ContinueOnError)
	cluster := fs.String("cluster", "wus", "lab cluster")
	group := fs.String("group", "G", "consumer group")
	tenant := fs.String("tenant", "", "tenant of the group: public (default) or one of kop-lab up --tenants (its offsets topic, asked as the tenant)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, err := runningKoP(ctx, *cluster, "refresh")
	if err != nil {
		return err
	}
	t, err := tenantOf(ctx, "refresh", *tenant)
	if err != nil {
		return err
	}
	p := loader.PartitionFor(*group, lab.OffsetsTopicPartitions)
	start := time.Now()
	if err := lab.ReloadOffsetsPartitionOf(ctx, c, t, p); err != nil {
		return err
	}
	fmt.Printf("%s: KoP loaded offsets partition %d of %s (group %s) afresh in %s\n", c.Name, p, lab.OffsetsTopicOf(t), *group, time.Since(start).Round(time.Millisecond))
	return nil
}

func statusNames(r *lab.StatusReport) []string {
	var out []string
	for _, c := range r.Clusters {
		out = append(out, c.Name)
	}
	return out
}
