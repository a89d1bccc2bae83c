package offsets

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fixCRC rewrites the CRC of every well-framed batch so that the fuzzer gets past the
// checksum into the records and schemas.
func fixCRC(value []byte) {
	for pos := 0; len(value)-pos >= batchHeaderSize; {
		b := value[pos:]
		n := batchLogOverhead + int(int32(binary.BigEndian.Uint32(b[batchOffLength:])))
		if n < batchHeaderSize || n > len(b) {
			return
		}
		binary.BigEndian.PutUint32(b[batchOffCRC:], crc32.Checksum(b[batchOffAttributes:n], castagnoli))
		pos += n
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s.key, s.value, s.fix)
	}
	f.Fuzz(func(t *testing.T, key, value []byte, fix bool) {
		if fix {
			value = append([]byte(nil), value...)
			fixCRC(value)
		}
		recs, err := Decode(key, value)
		undecodable := 0
		for _, r := range recs {
			if r.Kind == KindUndecodable {
				undecodable++
				if r.Err == nil || r.Error == "" {
					t.Fatalf("undecodable record without error: %+v", r)
				}
			}
			if _, jerr := json.Marshal(r); jerr != nil {
				t.Fatalf("marshal: %v", jerr)
			}
		}
		if (err != nil) != (undecodable > 0) {
			t.Fatalf("err %v but %d undecodable records", err, undecodable)
		}
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) && !errors.Is(err, ErrDecompressTooLarge) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
		}

		// Any value: an undecodable one is an error here and is counted in the result.
		rp := NewReplayer(0, OrderingKoP)
		_ = rp.ApplyMessage(Message{Key: []byte("k"), Value: value})
		_ = rp.ApplyMessage(Message{Key: []byte("k"), Value: value})
		res := rp.Result()
		if c := res.Counts; c.Messages != 2 {
			t.Fatalf("counts %+v", c)
		}

		// The schema decoders on their own, and against kmsg: when ours accepts, kmsg must
		// agree on every field (ours may reject more: unknown versions, negative lengths).
		var d decoder
		if kind, err := d.decodeKey(key); err == nil {
			switch kind {
			case keyOffset:
				var k kmsg.OffsetCommitKey
				if kerr := k.ReadFrom(key); kerr != nil || k != d.okey {
					t.Fatalf("offset key: ours %+v, kmsg %+v (%v)", d.okey, k, kerr)
				}
			case keyGroup:
				var k kmsg.GroupMetadataKey
				if kerr := k.ReadFrom(key); kerr != nil || k != d.gkey {
					t.Fatalf("group key: ours %+v, kmsg %+v (%v)", d.gkey, k, kerr)
				}
			}
		}
		if err := d.decodeOffsetValue(value); err == nil {
			var o kmsg.OffsetCommitValue
			kerr := o.ReadFrom(value)
			if o.Version < 3 {
				o.LeaderEpoch = -1
			}
			if o.Version != 1 {
				o.ExpireTimestamp = -1
			}
			if kerr != nil || fmt.Sprint(o) != fmt.Sprint(d.oval) {
				t.Fatalf("offset value: ours %+v, kmsg %+v (%v)", d.oval, o, kerr)
			}
		}
		if err := d.decodeGroupValue(value); err == nil {
			var g kmsg.GroupMetadataValue
			if kerr := g.ReadFrom(value); kerr != nil {
				t.Fatalf("group value: ours ok, kmsg %v", kerr)
			}
			var a, b Record
			fillGroup(&a, &d.gval)
			fillGroup(&b, &g)
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			if string(ja) != string(jb) {
				t.Fatalf("group value:\nours %s\nkmsg %s", ja, jb)
			}
		}
	})
}

type fuzzSeed struct {
	name       string
	key, value []byte
	fix        bool
}

func fuzzSeeds(tb testing.TB) []fuzzSeed {
	k := offsetKeyBytes(1, "g", "persistent://public/default/t", 0)
	seeds := []fuzzSeed{
		{"empty", nil, nil, false},
		{"offset-v1", k, commitMsg(tb, "g", "persistent://public/default/t", 0, 42), false},
		{"offset-v3", k, buildBatch(tb, batchOpts{}, kv{k, offsetValueBytes(3, 5, 2, "meta", 1, -1)}), true},
		{"group-v4", groupKeyBytes("g"), buildBatch(tb, batchOpts{}, kv{groupKeyBytes("g"), groupValueBytes(4, 2)}), false},
		{"group-v0", groupKeyBytes("g"), buildBatch(tb, batchOpts{}, kv{groupKeyBytes("g"), groupValueBytes(0, 1)}), false},
		{"tombstones", k, buildBatch(tb, batchOpts{}, kv{k, nil}, kv{groupKeyBytes("g"), nil}), false},
		{"txn", k, buildBatch(tb, batchOpts{txn: true, pid: 9}, kv{k, offsetValueBytes(1, 1, -1, "", 1, -1)}), false},
		{"commit", k, buildBatch(tb, batchOpts{control: true, txn: true, pid: 9}, kv{controlKey(true), controlValue()}), false},
		{"raw-offset-value", offsetKeyBytes(0, "g", "t", 1), offsetValueBytes(2, 1, -1, "x", 2, -1), false},
		{"raw-group-value", groupKeyBytes("g"), groupValueBytes(3, 2), false},
	}
	for _, c := range []int16{codecGzip, codecSnappy, codecSnappyRaw, codecLZ4, codecZstd} {
		seeds = append(seeds, fuzzSeed{"codec-" + itoa(int(c)), k,
			buildBatch(tb, batchOpts{codec: c}, kv{k, offsetValueBytes(1, 1, -1, "", 1, -1)}, kv{groupKeyBytes("g"), groupValueBytes(2, 1)}), true})
	}
	two := append(commitMsg(tb, "a", "t", 0, 1), commitMsg(tb, "b", "t", 0, 2)...)
	seeds = append(seeds, fuzzSeed{"two-batches", k, two, false})
	return seeds
}

// TestWriteFuzzSeeds (with -update) writes the seed corpus under testdata/fuzz/FuzzDecode,
// where `go test` also runs it as regression input.
func TestWriteFuzzSeeds(t *testing.T) {
	if !*update {
		t.Skip("run with -update to rewrite testdata/fuzz/FuzzDecode seeds")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range fuzzSeeds(t) {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n[]byte(%q)\nbool(%v)\n", s.key, s.value, s.fix)
		if err := os.WriteFile(filepath.Join(dir, "seed-"+s.name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
