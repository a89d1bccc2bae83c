package kop

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// EncodeRequest returns the Pulsar key and the message value KoP writes for one OffsetCommit
// request of a group: GroupMetadataManager.storeOffsets puts a record per committed partition
// into one magic-2 record batch (base offset 0, offset deltas 0..n-1, uncompressed, CRC-32C)
// and sends it as one message keyed with the group's PulsarKey. All commits must be of the
// same group and none a tombstone (an OffsetCommit request never deletes).
func EncodeRequest(cs []OffsetCommit, ts time.Time) (pulsarKey, value []byte, err error) {
	return encodeRequest(cs, ts, false)
}

// encodeRequest is EncodeRequest; own keeps each commit's CommitTime (a kept translation
// carries the source's commit and expiry times, so that it expires with the source's).
func encodeRequest(cs []OffsetCommit, ts time.Time, own bool) (pulsarKey, value []byte, err error) {
	if len(cs) == 0 {
		return nil, nil, errors.New("kopcommit: an offset commit request needs at least one partition")
	}
	var records []byte
	for i, c := range cs {
		if c.Group != cs[0].Group {
			return nil, nil, errors.New("kopcommit: one offset commit request is of one group")
		}
		if c.Tombstone {
			return nil, nil, errors.New("kopcommit: an offset commit request holds no tombstone")
		}
		if !own || c.CommitTime.IsZero() {
			c.CommitTime = ts
		}
		rec := kmsg.Record{OffsetDelta: int32(i), Key: EncodeKey(c), Value: EncodeValue(c)}
		body := rec.AppendTo(nil)[1:] // a zero Length is one varint byte
		rec.Length = int32(len(body))
		records = rec.AppendTo(records)
	}
	b := kmsg.RecordBatch{
		FirstOffset: 0, PartitionLeaderEpoch: -1, Magic: 2, Attributes: 0,
		LastOffsetDelta: int32(len(cs) - 1), FirstTimestamp: ts.UnixMilli(), MaxTimestamp: ts.UnixMilli(),
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(cs)),
		Records: records,
	}
	b.Length = int32(batchHeaderSize - batchLogOverhead + len(records))
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[batchOffCRC:], crc32.Checksum(out[batchOffAttributes:], castagnoli))
	return PulsarKey(cs[0].Group), out, nil
}
