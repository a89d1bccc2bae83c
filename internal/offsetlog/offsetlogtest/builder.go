// Package offsetlogtest builds offsets-topic messages for tests: keys and values from kmsg's
// encoders, batches from kmsg.RecordBatch with each codec, so the decoder is checked against
// an independent writer. Only tests import it; it does not import offsetlog, so offsetlog's
// own tests can use it.
package offsetlogtest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"strconv"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The record batch v2 layout and attributes (Kafka's DefaultRecordBatch).
const (
	batchOffCRC        = 17
	batchOffAttributes = 21
	batchHeaderSize    = 61
	batchLogOverhead   = 12

	attrTransactional = 0x10
	attrControl       = 0x20
)

// The compression codecs of a batch's attributes.
const (
	CodecNone   = 0
	CodecGzip   = 1
	CodecSnappy = 2
	CodecLZ4    = 3
	CodecZstd   = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// xerialMagic starts a snappy stream framed by the Java client's xerial SnappyOutputStream.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

func ptr[T any](v T) *T { return &v }

// CodecSnappyRaw is test-only: snappy without xerial framing.
const CodecSnappyRaw = 100

// KV is one record of a batch: key, value (an array, so that tests write KV{k, v}).
type KV [2][]byte

// BatchOpts shapes a record batch.
type BatchOpts struct {
	Codec      int16
	Txn        bool
	Control    bool
	PID        int64
	BaseOffset int64
}

// OffsetKey is an offset commit key.
func OffsetKey(v int16, group, topic string, partition int32) []byte {
	k := kmsg.OffsetCommitKey{Version: v, Group: group, Topic: topic, Partition: partition}
	return k.AppendTo(nil)
}

// GroupKey is a group metadata key (v2).
func GroupKey(group string) []byte {
	k := kmsg.GroupMetadataKey{Version: 2, Group: group}
	return k.AppendTo(nil)
}

// OffsetValue is an offset commit value.
func OffsetValue(v int16, offset int64, epoch int32, metadata string, commit, expire int64) []byte {
	o := kmsg.OffsetCommitValue{Version: v, Offset: offset, LeaderEpoch: epoch, Metadata: metadata,
		CommitTimestamp: commit, ExpireTimestamp: expire}
	return o.AppendTo(nil)
}

// ControlKey is a transaction marker key (COMMIT or ABORT).
func ControlKey(commit bool) []byte {
	k := kmsg.ControlRecordKey{Version: 0, Type: kmsg.ControlRecordKeyTypeAbort}
	if commit {
		k.Type = kmsg.ControlRecordKeyTypeCommit
	}
	return k.AppendTo(nil)
}

// ControlValue is a transaction marker value.
func ControlValue() []byte {
	m := kmsg.EndTxnMarker{Version: 0, CoordinatorEpoch: 3}
	return m.AppendTo(nil)
}

func consumerSubscription(topics ...string) []byte {
	m := kmsg.ConsumerMemberMetadata{Version: 1, Topics: topics}
	return m.AppendTo(nil)
}

func consumerAssignment(tps ...kmsg.ConsumerMemberAssignmentTopic) []byte {
	a := kmsg.ConsumerMemberAssignment{Version: 1}
	a.Topics = append(a.Topics, tps...)
	return a.AppendTo(nil)
}

// GroupValue is a consumer group metadata value with members members.
func GroupValue(v int16, members int) []byte {
	g := kmsg.GroupMetadataValue{Version: v, ProtocolType: "consumer", Generation: 7,
		Protocol: ptr("range"), Leader: ptr("member-0"), CurrentStateTimestamp: 1700000000123}
	for i := 0; i < members; i++ {
		m := kmsg.GroupMetadataValueMember{
			MemberID: "member-" + strconv.Itoa(i), ClientID: "client-" + strconv.Itoa(i), ClientHost: "/10.0.0." + strconv.Itoa(i),
			RebalanceTimeoutMillis: 300000, SessionTimeoutMillis: 45000,
			Subscription: consumerSubscription("persistent://public/default/topic-1"),
			Assignment: consumerAssignment(kmsg.ConsumerMemberAssignmentTopic{Topic: "persistent://public/default/topic-1",
				Partitions: []int32{int32(i), int32(i + 2)}}),
		}
		if v >= 3 {
			m.InstanceID = ptr("instance-" + strconv.Itoa(i))
		}
		g.Members = append(g.Members, m)
	}
	return g.AppendTo(nil)
}

func encodeRecords(recs []KV) []byte {
	var out []byte
	for i, r := range recs {
		rec := kmsg.Record{TimestampDelta64: int64(i), OffsetDelta: int32(i), Key: r[0], Value: r[1]}
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
	case CodecNone:
		return raw
	case CodecGzip:
		w := gzip.NewWriter(&buf)
		if _, err := w.Write(raw); err != nil {
			tb.Fatal(err)
		}
		if err := w.Close(); err != nil {
			tb.Fatal(err)
		}
	case CodecSnappy: // xerial framing as the Java client writes it, in two blocks
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
	case CodecSnappyRaw:
		return snappy.Encode(nil, raw)
	case CodecLZ4:
		w := lz4.NewWriter(&buf)
		if _, err := w.Write(raw); err != nil {
			tb.Fatal(err)
		}
		if err := w.Close(); err != nil {
			tb.Fatal(err)
		}
	case CodecZstd:
		w, _ := zstd.NewWriter(nil)
		return w.EncodeAll(raw, nil)
	default:
		tb.Fatalf("unknown codec %d", codec)
	}
	return buf.Bytes()
}

// BuildBatch encodes recs as one v2 record batch, compressed with o.Codec.
func BuildBatch(tb testing.TB, o BatchOpts, recs ...KV) []byte {
	tb.Helper()
	attrs := o.Codec
	if o.Codec == CodecSnappyRaw {
		attrs = CodecSnappy
	}
	if o.Txn {
		attrs |= attrTransactional
	}
	if o.Control {
		attrs |= attrControl
	}
	pid := o.PID
	if !o.Txn && !o.Control && pid == 0 {
		pid = -1
	}
	b := kmsg.RecordBatch{
		FirstOffset: o.BaseOffset, PartitionLeaderEpoch: -1, Magic: 2, Attributes: attrs,
		LastOffsetDelta: int32(len(recs) - 1), FirstTimestamp: 1700000000000, MaxTimestamp: 1700000000000,
		ProducerID: pid, ProducerEpoch: 0, FirstSequence: -1, NumRecords: int32(len(recs)),
		Records: compress(tb, o.Codec, encodeRecords(recs)),
	}
	b.Length = int32(batchHeaderSize - batchLogOverhead + len(b.Records))
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[batchOffCRC:], crc32.Checksum(out[batchOffAttributes:], castagnoli))
	return out
}

// CommitMsg is a message of one offset commit (v1 key and value).
func CommitMsg(tb testing.TB, group, topic string, partition int32, offset int64) []byte {
	return BuildBatch(tb, BatchOpts{}, KV{OffsetKey(1, group, topic, partition),
		OffsetValue(1, offset, -1, "", 1700000000000+offset, -1)})
}

// OffsetRec is a v1 offset commit record of group on persistent://public/default/topic-1.
func OffsetRec(group string, part int32, offset int64) KV {
	return KV{OffsetKey(1, group, "persistent://public/default/topic-1", part), OffsetValue(1, offset, -1, "", 1700000000000+offset, -1)}
}

// MustJSON is v as JSON, failing t when it does not encode.
func MustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
