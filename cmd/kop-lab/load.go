package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/connect"
	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/lab/loadgen"
)

// load fills a lab cluster's offsets topic with many groups and commits (internal/lab/loadgen),
// for make bench-lab. It only talks to the lab's clusters on 127.0.0.1.
func load(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	cluster := fs.String("cluster", "scus", "lab cluster to load (scus or wus); geo-replication copies the load to the other")
	via := fs.String("via", "pulsar", "pulsar: KoP-format messages straight into the offsets topic (no KoP needed); kafka: OffsetCommit requests to KoP")
	var s loadgen.Spec
	fs.IntVar(&s.Groups, "groups", loadgen.DefaultGroups, "consumer groups")
	fs.IntVar(&s.FirstGroup, "first-group", 0, "number of the first group (add groups to an earlier load)")
	fs.IntVar(&s.KeysPerGroup, "keys-per-group", loadgen.DefaultKeysPerGroup, "topic partitions each group commits (one OffsetCommit request holds them all)")
	fs.IntVar(&s.Topics, "topics", loadgen.DefaultTopics, "topics the groups commit on (load-t-NNNN in public/default)")
	fs.IntVar(&s.TopicPartitions, "topic-partitions", loadgen.DefaultTopicPartitions, "partitions per topic")
	fs.IntVar(&s.Commits, "commits", loadgen.DefaultCommits, "offset commits (records) in all, round by round over the groups")
	batching := fs.Bool("batching", false, "pulsar: let the producers batch messages into one entry (faster; KoP's writer does not)")
	createTopics := fs.Bool("create-topics", true, "create the topics on every lab cluster first (KoP and kafka-consumer-groups need them)")
	concurrency := fs.Int("concurrency", 16, "kafka: OffsetCommit requests in flight")
	memberGroups := fs.Int("member-groups", 0, "kafka: also run this many real consumer groups with one member each (join, commit, leave)")
	hold := fs.Duration("hold", 0, "kafka: how long the members of --member-groups stay before they leave")
	tenant := fs.String("tenant", "", "tenant to load: public (default) or one of kop-lab up --tenants; its offsets topic (pulsar), its Kafka client and token (kafka), topics in <tenant>/default")
	if err := fs.Parse(args); err != nil {
		return err
	}
	t, err := tenantOf(ctx, "load", *tenant)
	if err != nil {
		return err
	}
	s.Namespace = lab.KafkaNamespaceOf(t)
	s = s.WithDefaults()
	if err := s.Validate(); err != nil {
		return err
	}
	all, target, err := currentCluster("load", *cluster)
	if err != nil {
		return err
	}
	if *via != "pulsar" && *via != "kafka" {
		return fmt.Errorf("load: --via %q: want pulsar or kafka", *via)
	}
	if *memberGroups > 0 && *via != "kafka" {
		return errors.New("load: --member-groups needs --via kafka (members join through KoP)")
	}
	if *createTopics {
		if err := createLoadTopics(ctx, all, s); err != nil {
			return err
		}
	}
	fmt.Printf("loading %s (tenant %s) via %s: groups %s..%s, %d keys each over %d topics, %d commits (%d live keys, %d rounds)\n",
		target.Name, cmp.Or(t, lab.Tenant), *via, s.GroupName(0), s.GroupName(s.Groups-1), s.KeysPerGroup, s.Topics, s.Commits, s.LiveKeys(), s.Rounds())
	var st loadgen.Stats
	switch *via {
	case "pulsar":
		st, err = loadViaPulsar(ctx, *target, t, s, *batching)
	case "kafka":
		st, err = loadViaKafka(ctx, *target, t, s, *concurrency, *memberGroups, *hold)
	}
	if err != nil {
		return fmt.Errorf("load: cluster %s: %w (wrote %s)", target.Name, err, st)
	}
	fmt.Printf("loaded %s: %s\n", target.Name, st)
	return nil
}

// currentCluster reads the lab's current clusters and picks the one named name (the last of
// that name); what names the command in the error when there is none.
func currentCluster(what, name string) ([]lab.Cluster, *lab.Cluster, error) {
	all, err := lab.CurrentClusters(lab.Options{})
	if err != nil {
		return nil, nil, err
	}
	var target *lab.Cluster
	for i := range all {
		if all[i].Name == name {
			target = &all[i]
		}
	}
	if target == nil {
		return nil, nil, fmt.Errorf("%s: unknown lab cluster %q (%v)", what, name, lab.ClusterNames(all))
	}
	return all, target, nil
}

// createLoadTopics creates the load's topics on every lab cluster.
func createLoadTopics(ctx context.Context, all []lab.Cluster, s loadgen.Spec) error {
	t := time.Now()
	for _, c := range all {
		a, err := lab.NewAdmin(c)
		if err != nil {
			return err
		}
		if err := loadgen.CreateTopics(ctx, c.Name, a, s); err != nil {
			return err
		}
	}
	fmt.Printf("topics %s..%s (%d partitions each) on %d clusters in %s\n", s.TopicName(0), s.TopicName(s.Topics-1),
		s.TopicPartitions, len(all), time.Since(t).Round(10*time.Millisecond))
	return nil
}

// loadViaPulsar writes the load as KoP-format messages straight into tenant t's offsets topic.
func loadViaPulsar(ctx context.Context, target lab.Cluster, t string, s loadgen.Spec, batching bool) (loadgen.Stats, error) {
	client, err := lab.NewPulsarClient(target)
	if err != nil {
		return loadgen.Stats{}, fmt.Errorf("load: cluster %s: %w", target.Name, err)
	}
	defer client.Close()
	return loadgen.WritePulsar(ctx, client, lab.OffsetsTopicOf(t), lab.OffsetsTopicPartitions, s,
		loadgen.PulsarOptions{Batching: batching, Progress: os.Stdout})
}

// loadViaKafka writes the load as OffsetCommit requests to KoP as tenant t, then runs
// memberGroups real consumer groups (join, commit, stay hold, leave).
func loadViaKafka(ctx context.Context, target lab.Cluster, t string, s loadgen.Spec, concurrency, memberGroups int, hold time.Duration) (loadgen.Stats, error) {
	if err := lab.KafkaMetadata(ctx, target); err != nil {
		return loadgen.Stats{}, fmt.Errorf("load: --via kafka: KoP does not answer on cluster %s (%s): %w", target.Name, target.KafkaBootstrap, err)
	}
	opts, err := connect.KafkaOpts(target.TenantConfig(t),
		connect.Options{RequestTimeout: 30 * time.Second})
	if err != nil {
		return loadgen.Stats{}, err
	}
	kcl, err := connect.NewKafkaClient(target.TenantConfig(t),
		connect.Options{RequestTimeout: 30 * time.Second})
	if err != nil {
		return loadgen.Stats{}, err
	}
	defer kcl.Close()
	st, err := loadgen.WriteKafka(ctx, kcl, s, loadgen.KafkaOptions{Concurrency: concurrency, Progress: os.Stdout})
	if err == nil && memberGroups > 0 {
		t := time.Now()
		if err = loadgen.Members(ctx, opts, s, memberGroups, hold); err == nil {
			fmt.Printf("%d consumer groups with a member joined, committed and left in %s\n", memberGroups, time.Since(t).Round(10*time.Millisecond))
		}
	}
	return st, err
}
