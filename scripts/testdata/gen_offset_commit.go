//go:build ignore

// gen_offset_commit writes one real offsets-topic message as base64 for the release smoke
// test (scripts/smoke.sh): the message key (an OffsetCommit key v1, as KoP sets it) and the
// message value (a magic-2 Kafka record batch holding that key and an OffsetCommit value
// v3, as KoP stores it in persistent://public/__kafka/__consumer_offsets-partition-N).
// Keys and values come from kmsg's encoders. Regenerate with:
//
//	go run scripts/testdata/gen_offset_commit.go
package main

import (
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"log"
	"os"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	batchHeaderSize    = 61 // magic-2 batch header, up to the first record
	batchLogOverhead   = 12 // FirstOffset + Length: not counted in Length
	batchOffCRC        = 17
	batchOffAttributes = 21                // the CRC covers the batch from Attributes on
	commitTimestamp    = 1_700_000_000_042 // 2023-11-14T22:13:20.042Z
)

func main() {
	key := kmsg.NewOffsetCommitKey()
	key.Version = 1
	key.Group = "orders-consumer"
	key.Topic = "persistent://public/default/orders" // KoP stores the full Pulsar name
	key.Partition = 3
	keyBytes := key.AppendTo(nil)

	value := kmsg.NewOffsetCommitValue()
	value.Version = 3
	value.Offset = 10900
	value.LeaderEpoch = 7
	value.Metadata = "smoke"
	value.CommitTimestamp = commitTimestamp

	rec := kmsg.Record{Key: keyBytes, Value: value.AppendTo(nil)}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1) // with Length 0, its varint is one byte
	records := rec.AppendTo(nil)

	batch := kmsg.RecordBatch{
		FirstOffset: 0, PartitionLeaderEpoch: -1, Magic: 2, Attributes: 0,
		LastOffsetDelta: 0, FirstTimestamp: commitTimestamp, MaxTimestamp: commitTimestamp,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1, Records: records,
	}
	batch.Length = int32(batchHeaderSize - batchLogOverhead + len(records))
	b := batch.AppendTo(nil)
	binary.BigEndian.PutUint32(b[batchOffCRC:],
		crc32.Checksum(b[batchOffAttributes:], crc32.MakeTable(crc32.Castagnoli)))

	write("scripts/testdata/offset-commit.key.b64", keyBytes)
	write("scripts/testdata/offset-commit.value.b64", b)
}

func write(path string, b []byte) {
	if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(b)+"\n"), 0o644); err != nil {
		log.Fatal(err)
	}
}
