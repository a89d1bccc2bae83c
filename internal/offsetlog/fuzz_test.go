package offsetlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kop-offsets/kop-offsets/internal/offsetlog/offsetlogtest"
)

func FuzzDecode(f *testing.F) {
	offsetlogtest.Fuzz(f, func(t *testing.T, key, value []byte) {
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
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n[]byte(%q)\nbool(%v)\n", s.Key, s.Value, s.Fix)
		if err := os.WriteFile(filepath.Join(dir, "seed-"+s.Name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
