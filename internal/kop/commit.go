// The commit writer (Writer, Encode*) writes offset commits exactly as KoP's GroupMetadataManager stores them
// in its offsets topic, so that what it writes is what KoP's loader and this tool's reader
// read. failover uses it to write the aligned offsets onto the target cluster; the lab's load
// generator and tests use it to write KoP's format without KoP.
//
// It is not KoP: nothing here serves the Kafka protocol or keeps a cache. A commit is one
// Kafka record batch (magic 2, uncompressed, CRC-32C, base offset 0) holding a record whose
// key is an OffsetCommitKey v1 and whose value is an OffsetCommitValue v1, both built with
// kmsg; EncodeRequest puts one OffsetCommit request's partitions into one batch. Writer
// publishes them with a pulsar-client-go producer to
// persistent://<tenant>/<ns>/__consumer_offsets-partition-N, the partition KoP would pick for
// the group (loader.PartitionFor). The Pulsar key carries the record key in base64, as the
// Java client's keyBytes() sends it.

package kop

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// OffsetCommit is one committed offset, as KoP stores it.
type OffsetCommit struct {
	Group     string
	Topic     string // KoP full name: persistent://public/default/topic-1
	Partition int32
	Offset    int64
	Metadata  string
	// CommitTime defaults to now.
	CommitTime time.Time
	// Tombstone writes a null value (the offset is deleted).
	Tombstone bool
	// NoExpiry writes expireTimestamp -1 instead of KoP's commit time + retention.
	NoExpiry bool
	// ExpireTime, when set, is the expireTimestamp written (a kept translation: the source's).
	ExpireTime time.Time
}

// KoPOffsetsRetention is KoP's default offsetsRetentionMinutes (3 days).
const KoPOffsetsRetention = 72 * time.Hour

// Record-batch layout (magic 2).
const (
	batchHeaderSize    = 61
	batchLogOverhead   = 12 // baseOffset + length
	batchOffCRC        = 17
	batchOffAttributes = 21
	batchOffProducerID = 43
	attrTransactional  = 0x10
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// EncodeKey returns the record key of c: an OffsetCommitKey v1.
func EncodeKey(c OffsetCommit) []byte {
	k := kmsg.OffsetCommitKey{Version: 1, Group: c.Group, Topic: c.Topic, Partition: c.Partition}
	return k.AppendTo(nil)
}

// EncodeValue returns the record value of c: an OffsetCommitValue v1 (nil for a tombstone).
func EncodeValue(c OffsetCommit) []byte {
	if c.Tombstone {
		return nil
	}
	ts := c.CommitTime
	if ts.IsZero() {
		ts = time.Now()
	}
	// KoP sets the expiry to the commit time plus offsetsRetentionMinutes (3 days by default).
	expire := ts.Add(KoPOffsetsRetention).UnixMilli()
	if c.NoExpiry {
		expire = -1
	} else if !c.ExpireTime.IsZero() {
		expire = c.ExpireTime.UnixMilli()
	}
	v := kmsg.OffsetCommitValue{Version: 1, Offset: c.Offset, LeaderEpoch: -1, Metadata: c.Metadata,
		CommitTimestamp: ts.UnixMilli(), ExpireTimestamp: expire}
	return v.AppendTo(nil)
}

// EncodeBatch wraps one keyed record in a magic-2 record batch with base offset 0 and a
// CRC-32C, as KoP's MemoryRecords.withRecords does.
func EncodeBatch(key, value []byte, ts time.Time) []byte {
	rec := kmsg.Record{Key: key, Value: value}
	body := rec.AppendTo(nil)[1:] // a zero Length is one varint byte
	rec.Length = int32(len(body))
	records := rec.AppendTo(nil)
	b := kmsg.RecordBatch{
		FirstOffset: 0, PartitionLeaderEpoch: -1, Magic: 2, Attributes: 0,
		LastOffsetDelta: 0, FirstTimestamp: ts.UnixMilli(), MaxTimestamp: ts.UnixMilli(),
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1,
		Records: records,
	}
	b.Length = int32(batchHeaderSize - batchLogOverhead + len(records))
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[batchOffCRC:], crc32.Checksum(out[batchOffAttributes:], castagnoli))
	return out
}

// EncodeTxnBatch is EncodeBatch for a transactional batch of producer pid, as KoP writes a
// TxnOffsetCommit. Its COMMIT marker is not written: KoP writes it as a Pulsar marker entry,
// which no reader sees.
func EncodeTxnBatch(key, value []byte, pid int64) []byte {
	out := EncodeBatch(key, value, time.Now())
	binary.BigEndian.PutUint16(out[batchOffAttributes:], attrTransactional)
	binary.BigEndian.PutUint64(out[batchOffProducerID:], uint64(pid))
	binary.BigEndian.PutUint16(out[batchOffProducerID+8:], 0) // producer epoch
	binary.BigEndian.PutUint32(out[batchOffCRC:], crc32.Checksum(out[batchOffAttributes:], castagnoli))
	return out
}

// Encode returns the key and the Pulsar message value (a record batch) of c.
func Encode(c OffsetCommit) (key, value []byte) {
	ts := c.CommitTime
	if ts.IsZero() {
		ts = time.Now()
	}
	c.CommitTime = ts
	key = EncodeKey(c)
	return key, EncodeBatch(key, EncodeValue(c), ts)
}

// PulsarKey is the Pulsar message key KoP gives every offset-commit message of a group: not
// the record key, but an OffsetCommitKey v1 for (group, "", -1) (GroupMetadataManager's
// offsetCommitKey(group, new TopicPartition("", -1))), sent with keyBytes(), so base64 on the
// wire. Compaction therefore keeps one commit message per group. Seen on a KoP built from the
// v3.1.1.1 source: key "AAEAAUcAAP////8=" for group "G".
func PulsarKey(group string) []byte {
	k := kmsg.OffsetCommitKey{Version: 1, Group: group, Topic: "", Partition: -1}
	return k.AppendTo(nil)
}

// Message returns c as the loader.Message a reader of partition would return.
func Message(partition int32, seq int, c OffsetCommit) loader.Message {
	_, v := Encode(c)
	return loader.Message{Partition: partition, MessageID: fmt.Sprintf("1:%d:%d:-1", seq, partition), Key: PulsarKey(c.Group), Value: v}
}

// Producer is the part of pulsar.Client the Writer uses.
type Producer interface {
	CreateProducer(pulsar.ProducerOptions) (pulsar.Producer, error)
}

// Writer publishes offset commits to an offsets topic the way KoP's writer does. It is not
// safe to share a Writer between clusters; it is safe for concurrent use.
type Writer struct {
	client     Producer
	topic      string // persistent://<tenant>/<ns>/__consumer_offsets
	partitions int32
	// Local disables replication of what is written: it stays on this cluster.
	Local bool

	mu        sync.Mutex
	producers map[int32]pulsar.Producer
}

// NewWriter writes to offsetsTopic, a partitioned topic with partitions partitions.
func NewWriter(client Producer, offsetsTopic string, partitions int32) *Writer {
	return &Writer{client: client, topic: offsetsTopic, partitions: partitions, producers: map[int32]pulsar.Producer{}}
}

// Commit publishes c to the partition of its group and returns that partition.
func (w *Writer) Commit(ctx context.Context, c OffsetCommit) (int32, pulsar.MessageID, error) {
	p := loader.PartitionFor(c.Group, w.partitions)
	prod, err := w.producer(p)
	if err != nil {
		return p, nil, err
	}
	_, v := Encode(c)
	return w.send(ctx, p, prod, PulsarKey(c.Group), v)
}

// CommitRequest publishes one OffsetCommit request of a group (EncodeRequest: one batch) to
// the group's partition and returns that partition.
func (w *Writer) CommitRequest(ctx context.Context, cs []OffsetCommit) (int32, pulsar.MessageID, error) {
	key, v, err := EncodeRequest(cs, time.Now())
	if err != nil {
		return 0, nil, err
	}
	return w.publish(ctx, cs[0].Group, &pulsar.ProducerMessage{Key: base64.StdEncoding.EncodeToString(key), Payload: v, DisableReplication: w.Local})
}

// publish sends m to the partition of group and returns that partition.
func (w *Writer) publish(ctx context.Context, group string, m *pulsar.ProducerMessage) (int32, pulsar.MessageID, error) {
	p := loader.PartitionFor(group, w.partitions)
	prod, err := w.producer(p)
	if err != nil {
		return p, nil, err
	}
	return w.sendMsg(ctx, p, prod, m)
}

// Keep publishes a kept translation of one group (loader.KeptMark: mark.Sources are the
// source offsets of cs, in order) to the group's partition, with replication disabled
// whatever Local says: it is this cluster's numbering and must never reach another cluster.
// Each commit keeps its CommitTime and ExpireTime.
func (w *Writer) Keep(ctx context.Context, cs []OffsetCommit, mark loader.KeptMark) (int32, pulsar.MessageID, error) {
	m, err := keepMessage(cs, mark)
	if err != nil {
		return 0, nil, err
	}
	return w.publish(ctx, cs[0].Group, m)
}

// keepMessage is the message of a kept translation (Keep, KeepAsync).
func keepMessage(cs []OffsetCommit, mark loader.KeptMark) (*pulsar.ProducerMessage, error) {
	if len(mark.Sources) != len(cs) {
		return nil, fmt.Errorf("kopcommit: %d source offsets for %d commits", len(mark.Sources), len(cs))
	}
	key, v, err := EncodeKeep(cs)
	if err != nil {
		return nil, err
	}
	return &pulsar.ProducerMessage{Key: base64.StdEncoding.EncodeToString(key), Payload: v, DisableReplication: true, Properties: mark.Properties()}, nil
}

// KeepAsync is Keep without waiting for the broker: done is called with the outcome, from the
// producer's goroutine. The writes of one group go to one partition's producer, in order; a
// keeper with many groups to write keeps many in flight instead of one round trip each.
func (w *Writer) KeepAsync(ctx context.Context, cs []OffsetCommit, mark loader.KeptMark, done func(error)) {
	m, err := keepMessage(cs, mark)
	if err != nil {
		done(err)
		return
	}
	p := loader.PartitionFor(cs[0].Group, w.partitions)
	prod, err := w.producer(p)
	if err != nil {
		done(err)
		return
	}
	prod.SendAsync(ctx, m, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
		if err != nil {
			err = fmt.Errorf("send to %s-partition-%d: %w", w.topic, p, err)
		}
		done(err)
	})
}

// Hold publishes values KoP serves for one group, written back so that a load keeps serving
// them (failover with its source gone), marked as counting in cluster from's numbering
// (loader.PropHeldFrom), with replication disabled.
func (w *Writer) Hold(ctx context.Context, cs []OffsetCommit, from string) (int32, pulsar.MessageID, error) {
	key, v, err := EncodeRequest(cs, time.Now())
	if err != nil {
		return 0, nil, err
	}
	return w.publish(ctx, cs[0].Group, &pulsar.ProducerMessage{Key: base64.StdEncoding.EncodeToString(key), Payload: v,
		DisableReplication: true, Properties: map[string]string{loader.PropHeldFrom: from}})
}

// HoldWriter is a Writer's Hold as a CommitRequest (the audit trail and the writer lease wrap
// CommitRequest).
type HoldWriter struct {
	W    *Writer
	From string
}

// CommitRequest holds cs (Writer.Hold).
func (h HoldWriter) CommitRequest(ctx context.Context, cs []OffsetCommit) (int32, pulsar.MessageID, error) {
	return h.W.Hold(ctx, cs, h.From)
}

// EncodeKeep is EncodeRequest for a kept translation: each commit keeps its CommitTime
// (the source's), so that it expires with the source's commit.
func EncodeKeep(cs []OffsetCommit) (pulsarKey, value []byte, err error) {
	return encodeRequest(cs, time.Now(), true)
}

func (w *Writer) send(ctx context.Context, p int32, prod pulsar.Producer, key, value []byte) (int32, pulsar.MessageID, error) {
	return w.sendMsg(ctx, p, prod, &pulsar.ProducerMessage{Key: base64.StdEncoding.EncodeToString(key), Payload: value, DisableReplication: w.Local})
}

func (w *Writer) sendMsg(ctx context.Context, p int32, prod pulsar.Producer, m *pulsar.ProducerMessage) (int32, pulsar.MessageID, error) {
	id, err := prod.Send(ctx, m)
	if err != nil {
		return p, nil, fmt.Errorf("send to %s-partition-%d: %w", w.topic, p, err)
	}
	return p, id, nil
}

func (w *Writer) producer(p int32) (pulsar.Producer, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if prod, ok := w.producers[p]; ok {
		return prod, nil
	}
	prod, err := w.client.CreateProducer(pulsar.ProducerOptions{
		Topic:           fmt.Sprintf("%s-partition-%d", w.topic, p),
		DisableBatching: true, // KoP sends one message per batch
	})
	if err != nil {
		return nil, fmt.Errorf("kopcommit: producer for %s-partition-%d: %w", w.topic, p, err)
	}
	w.producers[p] = prod
	return prod, nil
}

// Close closes the producers.
func (w *Writer) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.producers {
		p.Close()
	}
	w.producers = map[int32]pulsar.Producer{}
}
