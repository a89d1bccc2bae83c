package offsetlogtest

import (
	"encoding/binary"
	"hash/crc32"
	"strconv"
	"testing"
)

// FixCRC rewrites the CRC of every well-framed batch so that the fuzzer gets past the
// checksum into the records and schemas.
func FixCRC(value []byte) {
	for pos := 0; len(value)-pos >= batchHeaderSize; {
		b := value[pos:]
		n := batchLogOverhead + int(int32(binary.BigEndian.Uint32(b[8:])))
		if n < batchHeaderSize || n > len(b) {
			return
		}
		binary.BigEndian.PutUint32(b[batchOffCRC:], crc32.Checksum(b[batchOffAttributes:n], castagnoli))
		pos += n
	}
}

// Seed is one input of the decoder fuzz targets; Fix asks the target to fix the CRCs.
type Seed struct {
	Name       string
	Key, Value []byte
	Fix        bool
}

// Seeds are the seed corpus of the decoder fuzz targets.
func Seeds(tb testing.TB) []Seed {
	k := OffsetKey(1, "g", "persistent://public/default/t", 0)
	seeds := []Seed{
		{"empty", nil, nil, false},
		{"offset-v1", k, CommitMsg(tb, "g", "persistent://public/default/t", 0, 42), false},
		{"offset-v3", k, BuildBatch(tb, BatchOpts{}, KV{k, OffsetValue(3, 5, 2, "meta", 1, -1)}), true},
		{"group-v4", GroupKey("g"), BuildBatch(tb, BatchOpts{}, KV{GroupKey("g"), GroupValue(4, 2)}), false},
		{"group-v0", GroupKey("g"), BuildBatch(tb, BatchOpts{}, KV{GroupKey("g"), GroupValue(0, 1)}), false},
		{"tombstones", k, BuildBatch(tb, BatchOpts{}, KV{k, nil}, KV{GroupKey("g"), nil}), false},
		{"txn", k, BuildBatch(tb, BatchOpts{Txn: true, PID: 9}, KV{k, OffsetValue(1, 1, -1, "", 1, -1)}), false},
		{"commit", k, BuildBatch(tb, BatchOpts{Control: true, Txn: true, PID: 9}, KV{ControlKey(true), ControlValue()}), false},
		{"raw-offset-value", OffsetKey(0, "g", "t", 1), OffsetValue(2, 1, -1, "x", 2, -1), false},
		{"raw-group-value", GroupKey("g"), GroupValue(3, 2), false},
	}
	for _, c := range []int16{CodecGzip, CodecSnappy, CodecSnappyRaw, CodecLZ4, CodecZstd} {
		seeds = append(seeds, Seed{"codec-" + strconv.Itoa(int(c)), k,
			BuildBatch(tb, BatchOpts{Codec: c}, KV{k, OffsetValue(1, 1, -1, "", 1, -1)}, KV{GroupKey("g"), GroupValue(2, 1)}), true})
	}
	two := append(CommitMsg(tb, "a", "t", 0, 1), CommitMsg(tb, "b", "t", 0, 2)...)
	seeds = append(seeds, Seed{"two-batches", k, two, false})
	return seeds
}

// Fuzz fuzzes fn from the Seeds: a key and a value, the value's batch CRCs fixed when the
// input asks for it (so that mutations get past the CRC check).
func Fuzz(f *testing.F, fn func(t *testing.T, key, value []byte)) {
	for _, s := range Seeds(f) {
		f.Add(s.Key, s.Value, s.Fix)
	}
	f.Fuzz(func(t *testing.T, key, value []byte, fix bool) {
		if fix {
			value = append([]byte(nil), value...)
			FixCRC(value)
		}
		fn(t, key, value)
	})
}
