package offsets

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Test builders: keys and values come from kmsg's encoders, batches from kmsg.RecordBatch
// with each codec, so the decoder is checked against an independent writer.

const codecSnappyRaw = 100 // test-only: snappy without xerial framing

type kv struct{ key, value []byte }

type batchOpts struct {
	codec      int16
	txn        bool
	control    bool
	pid        int64
	baseOffset int64
}

func offsetKeyBytes(v int16, group, topic string, partition int32) []byte {
	k := kmsg.OffsetCommitKey{Version: v, Group: group, Topic: topic, Partition: partition}
	return k.AppendTo(nil)
}

func groupKeyBytes(group string) []byte {
	k := kmsg.GroupMetadataKey{Version: 2, Group: group}
	return k.AppendTo(nil)
}

func offsetValueBytes(v int16, offset int64, epoch int32, metadata string, commit, expire int64) []byte {
	o := kmsg.OffsetCommitValue{Version: v, Offset: offset, LeaderEpoch: epoch, Metadata: metadata,
		CommitTimestamp: commit, ExpireTimestamp: expire}
	return o.AppendTo(nil)
}

func controlKey(commit bool) []byte {
	k := kmsg.ControlRecordKey{Version: 0, Type: kmsg.ControlRecordKeyTypeAbort}
	if commit {
		k.Type = kmsg.ControlRecordKeyTypeCommit
	}
	return k.AppendTo(nil)
}

func controlValue() []byte {
	m := kmsg.EndTxnMarker{Version: 0, CoordinatorEpoch: 3}
	return m.AppendTo(nil)
}

func consumerSubscription(topics ...string) []byte {
	m := kmsg.ConsumerMemberMetadata{Version: 1, Topics: topics}
	return m.AppendTo(nil)
}

func consumerAssignment(tps ...TopicPartitions) []byte {
	a := kmsg.ConsumerMemberAssignment{Version: 1}
	for _, tp := range tps {
		a.Topics = append(a.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: tp.Topic, Partitions: tp.Partitions})
	}
	return a.AppendTo(nil)
}

func groupValueBytes(v int16, members int) []byte {
	g := kmsg.GroupMetadataValue{Version: v, ProtocolType: "consumer", Generation: 7,
		Protocol: ptr("range"), Leader: ptr("member-0"), CurrentStateTimestamp: 1700000000123}
	for i := 0; i < members; i++ {
		m := kmsg.GroupMetadataValueMember{
			MemberID: "member-" + itoa(i), ClientID: "client-" + itoa(i), ClientHost: "/10.0.0." + itoa(i),
			RebalanceTimeoutMillis: 300000, SessionTimeoutMillis: 45000,
			Subscription: consumerSubscription("persistent://public/default/topic-1"),
			Assignment: consumerAssignment(TopicPartitions{Topic: "persistent://public/default/topic-1",
				Partitions: []int32{int32(i), int32(i + 2)}}),
		}
		if v >= 3 {
			m.InstanceID = ptr("instance-" + itoa(i))
		}
		g.Members = append(g.Members, m)
	}
	return g.AppendTo(nil)
}

func encodeRecords(recs []kv) []byte {
	var out []byte
	for i, r := range recs {
		rec := kmsg.Record{TimestampDelta64: int64(i), OffsetDelta: int32(i), Key: r.key, Value: r.value}
		body := rec.AppendTo(nil)[1:] // Length 0 is one varint byte
		rec.Length = int32(len(body))
		out = rec.AppendTo(out)
	}
	return out
}

func compress(tb testing.TB, codec int16, raw []byte) []byte {
	tb.Helper()
	var buf bytes.Buffer
	switch codec {
	case codecNone:
		return raw
	case codecGzip:
		w := gzip.NewWriter(&buf)
		if _, err := w.Write(raw); err != nil {
			tb.Fatal(err)
		}
		if err := w.Close(); err != nil {
			tb.Fatal(err)
		}
	case codecSnappy: // xerial framing as the Java client writes it, in two blocks
		// Writes to a bytes.Buffer do not fail.
		buf.Write(xerialMagic)
		_ = binary.Write(&buf, binary.BigEndian, int32(1))
		_ = binary.Write(&buf, binary.BigEndian, int32(1))
		half := len(raw) / 2
		for _, part := range [][]byte{raw[:half], raw[half:]} {
			blk := snappy.Encode(nil, part)
			_ = binary.Write(&buf, binary.BigEndian, int32(len(blk)))
			buf.Write(blk)
		}
	case codecSnappyRaw:
		return snappy.Encode(nil, raw)
	case codecLZ4:
		w := lz4.NewWriter(&buf)
		if _, err := w.Write(raw); err != nil {
			tb.Fatal(err)
		}
		if err := w.Close(); err != nil {
			tb.Fatal(err)
		}
	case codecZstd:
		w, _ := zstd.NewWriter(nil)
		return w.EncodeAll(raw, nil)
	default:
		tb.Fatalf("unknown codec %d", codec)
	}
	return buf.Bytes()
}

func buildBatch(tb testing.TB, o batchOpts, recs ...kv) []byte {
	tb.Helper()
	attrs := o.codec
	if o.codec == codecSnappyRaw {
		attrs = codecSnappy
	}
	if o.txn {
		attrs |= attrTransactional
	}
	if o.control {
		attrs |= attrControl
	}
	pid := o.pid
	if !o.txn && !o.control && pid == 0 {
		pid = -1
	}
	b := kmsg.RecordBatch{
		FirstOffset: o.baseOffset, PartitionLeaderEpoch: -1, Magic: 2, Attributes: attrs,
		LastOffsetDelta: int32(len(recs) - 1), FirstTimestamp: 1700000000000, MaxTimestamp: 1700000000000,
		ProducerID: pid, ProducerEpoch: 0, FirstSequence: -1, NumRecords: int32(len(recs)),
		Records: compress(tb, o.codec, encodeRecords(recs)),
	}
	b.Length = int32(batchHeaderSize - batchLogOverhead + len(b.Records))
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[batchOffCRC:], crc32.Checksum(out[batchOffAttributes:], castagnoli))
	return out
}

func commitMsg(tb testing.TB, group, topic string, partition int32, offset int64) []byte {
	return buildBatch(tb, batchOpts{}, kv{offsetKeyBytes(1, group, topic, partition),
		offsetValueBytes(1, offset, -1, "", 1700000000000+offset, -1)})
}
