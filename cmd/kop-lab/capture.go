package main

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kop-offsets/kop-offsets/internal/connect"
	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// capturedMessage is one line of a capture file: a message as KoP wrote it into its offsets
// topic, and what made KoP write it. Decoder tests read these files.
type capturedMessage struct {
	Source    string `json:"source"`
	Scenario  string `json:"scenario"` // members, txn, delete-offsets, delete-group
	Group     string `json:"group"`
	Partition int32  `json:"offsetsPartition"`
	MessageID string `json:"messageId"`
	Key       string `json:"key"`   // base64 of the Pulsar key as the reader returns it
	Value     string `json:"value"` // base64 of the message value (record batches)
}

// capture makes the running lab's KoP write the records decoder tests want from a real KoP
// (group metadata with members and without, a transactional commit, an offset deletion, a
// group deletion) through real Kafka clients on scus, then reads them back from scus's
// offsets topic (the whole log, not the compacted view) into an ndjson file.
func capture(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("capture", flag.ContinueOnError)
	out := fs.String("out", "", "file to write (default internal/offsetlog/testdata/kop-captured-<KoP version>.ndjson)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	st, err := lab.Status(ctx, lab.Options{})
	if err != nil {
		return err
	}
	if !st.Running || !st.KoP.Enabled {
		return errors.New("capture: needs a running lab with KoP (KOP_NAR=... kop-lab up)")
	}
	c, err := runningCluster(ctx, "scus")
	if err != nil {
		return err
	}
	if *out == "" {
		*out = fmt.Sprintf("internal/offsetlog/testdata/kop-captured-%s.ndjson", st.KoP.Version)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	stamp := time.Now().UnixNano()
	topic := fmt.Sprintf("capture-%d", stamp)
	groups := map[string]string{
		fmt.Sprintf("capture-members-%d", stamp): "members",
		fmt.Sprintf("capture-txn-%d", stamp):     "txn",
		fmt.Sprintf("capture-deloff-%d", stamp):  "delete-offsets",
		fmt.Sprintf("capture-delgrp-%d", stamp):  "delete-group",
	}
	a, err := lab.NewAdmin(c)
	if err != nil {
		return err
	}
	base, prod, err := captureTopic(ctx, c, a, topic)
	if err != nil {
		return err
	}
	adm := kadm.NewClient(prod)
	defer prod.Close()

	unsupported, err := runScenarios(ctx, c, base, adm, groups, topic, st.KoP.Version)
	if err != nil {
		return err
	}
	time.Sleep(2 * time.Second) // the transaction's COMMIT and KoP's writes settle

	pc, err := lab.NewPulsarClient(c)
	if err != nil {
		return err
	}
	defer pc.Close()
	rd := pulsarx.NewReader(c.Name, pc, partitionCounter{a}, "public", "__kafka", pulsarx.ReaderOptions{})
	source := fmt.Sprintf("KoP %s (NAR sha256 %s) on Apache Pulsar %s, lab cluster scus, %s", st.KoP.Version, st.KoP.SHA256, st.PulsarVersion, time.Now().UTC().Format(time.DateOnly))
	if len(unsupported) > 0 {
		source += "; not supported by this KoP: " + strings.Join(unsupported, ", ")
	}
	lines, err := readCaptured(ctx, rd, groups, source)
	if err != nil {
		return err
	}
	slices.SortFunc(lines, func(x, y capturedMessage) int {
		return cmp.Or(strings.Compare(x.Scenario, y.Scenario), strings.Compare(x.MessageID, y.MessageID))
	})
	if err := writeNDJSON(*out, lines); err != nil {
		return err
	}
	fmt.Printf("captured %d messages of KoP %s into %s\n", len(lines), st.KoP.Version, *out)
	return nil
}

// captureTopic creates topic on c with 20 records for the scenarios to commit on, and
// returns c's Kafka client options and the producer's client (the caller closes it).
func captureTopic(ctx context.Context, c lab.Cluster, a pulsaradmin.Client, topic string) (base []kgo.Opt, prod *kgo.Client, err error) {
	tn, _ := utils.GetTopicName("persistent://" + lab.DefaultNamespace + "/" + topic)
	if err := a.Topics().Create(*tn, 1); err != nil {
		return nil, nil, fmt.Errorf("capture: create %s: %w", topic, err)
	}
	base, err = connect.KafkaOpts(c.Config(), connect.Options{RequestTimeout: 30 * time.Second})
	if err != nil {
		return nil, nil, err
	}
	prod, err = kgo.NewClient(append(slices.Clone(base), kgo.DefaultProduceTopic(topic))...)
	if err != nil {
		return nil, nil, err
	}
	for i := range 20 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v-%d", i)}).FirstErr(); err != nil {
			prod.Close()
			return nil, nil, fmt.Errorf("capture: produce: %w", err)
		}
	}
	return base, prod, nil
}

// runScenarios makes KoP write each kind of record the capture keeps, and returns the
// requests this KoP does not support (said in the captured file).
func runScenarios(ctx context.Context, c lab.Cluster, base []kgo.Opt, adm *kadm.Client, groups map[string]string, topic, version string) ([]string, error) {
	var unsupported []string
	for g, scenario := range groups {
		switch scenario {
		case "members": // join (group record with a member), commit, leave (record without members)
			if err := consumeAndCommit(ctx, base, g, topic); err != nil {
				return nil, err
			}
		case "txn":
			if err := transactionalCommit(ctx, base, g, topic); err != nil {
				return nil, err
			}
		case "delete-offsets":
			if err := lab.CommitThroughKoP(ctx, c, g, topic, 0, 7); err != nil {
				return nil, err
			}
			ts := kadm.TopicsSet{}
			ts.Add(topic, 0)
			if _, err := adm.DeleteOffsets(ctx, g, ts); errors.Is(err, kerr.UnsupportedVersion) {
				// KoP 3.1 does not implement OffsetDelete: nothing to capture, said in the file.
				fmt.Printf("KoP %s answers OffsetDelete (DeleteOffsets) with UNSUPPORTED_VERSION: no offset-deletion record\n", version)
				unsupported = append(unsupported, "OffsetDelete (kadm DeleteOffsets): UNSUPPORTED_VERSION")
			} else if err != nil {
				return nil, fmt.Errorf("capture: DeleteOffsets %s: %w", g, err)
			}
		case "delete-group":
			if err := lab.CommitThroughKoP(ctx, c, g, topic, 0, 9); err != nil {
				return nil, err
			}
			if _, err := adm.DeleteGroup(ctx, g); err != nil {
				return nil, fmt.Errorf("capture: DeleteGroups %s: %w", g, err)
			}
		}
	}
	return unsupported, nil
}

// readCaptured reads, for each group, the first message of its offsets partition that holds
// one of its records.
func readCaptured(ctx context.Context, rd *pulsarx.Reader, groups map[string]string, source string) ([]capturedMessage, error) {
	var lines []capturedMessage
	for g, scenario := range groups {
		p := loader.PartitionFor(g, lab.OffsetsTopicPartitions)
		err := rd.ReadPartition(ctx, p, func(m loader.Message) error {
			recs, _ := offsetlog.Decode(m.Key, m.Value)
			for _, r := range recs {
				if r.Group == g {
					lines = append(lines, capturedMessage{
						Source:   source,
						Scenario: scenario, Group: g, Partition: p, MessageID: m.MessageID,
						Key: base64.StdEncoding.EncodeToString(m.Key), Value: base64.StdEncoding.EncodeToString(m.Value),
					})
					return nil
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("capture: read offsets partition %d: %w", p, err)
		}
	}
	return lines, nil
}

func writeNDJSON(path string, lines []capturedMessage) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			_ = f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return nil
}

func consumeAndCommit(ctx context.Context, base []kgo.Opt, group, topic string) error {
	cl, err := kgo.NewClient(append(slices.Clone(base), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())...)
	if err != nil {
		return err
	}
	defer cl.Close() // leaves the group: KoP writes the group without members
	for n := 0; n < 20; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("capture: consume as %s: %w", group, err)
		}
		n += fs.NumRecords()
	}
	return cl.CommitUncommittedOffsets(ctx)
}

func transactionalCommit(ctx context.Context, base []kgo.Opt, group, topic string) error {
	s, err := kgo.NewGroupTransactSession(append(slices.Clone(base), kgo.TransactionalID(group+"-txn"), kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		return err
	}
	defer s.Close()
	for n := 0; n < 20; {
		fs := s.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("capture: transactional consume as %s: %w", group, err)
		}
		if err := s.Begin(); err != nil {
			return err
		}
		n += fs.NumRecords()
		if ok, err := s.End(ctx, kgo.TryCommit); err != nil || !ok {
			return fmt.Errorf("capture: end transaction of %s: committed %v, %w", group, ok, err)
		}
	}
	return nil
}

// partitionCounter answers the offsets topic's partition count with pulsaradmin.
type partitionCounter struct{ a pulsaradmin.Client }

func (c partitionCounter) PartitionedTopicPartitions(ctx context.Context, topic string) (int32, error) {
	tn, err := utils.GetTopicName(topic)
	if err != nil {
		return 0, err
	}
	md, err := c.a.Topics().GetMetadataWithContext(ctx, *tn)
	return int32(md.Partitions), err
}
