package offsets

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"os"
	"testing"
	"time"
)

// TestDecodeCapturedKoPCommit decodes a message that KoP's own writer put into the offsets
// topic (testdata/kop-captured.ndjson says where it came from). Its Pulsar key is KoP's
// per-group key (group G, topic "", partition -1), not the record key; the record inside the
// batch carries the real key, and the value is an OffsetCommitValue v1 whose expire timestamp
// is the commit time plus KoP's 3-day offsets retention.
func TestDecodeCapturedKoPCommit(t *testing.T) {
	f, err := os.Open("testdata/kop-captured.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var in struct{ Key, Value string }
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	if !sc.Scan() {
		t.Fatal("no captured message")
	}
	if err := json.Unmarshal(sc.Bytes(), &in); err != nil {
		t.Fatal(err)
	}
	key, _ := base64.StdEncoding.DecodeString(in.Key)
	value, _ := base64.StdEncoding.DecodeString(in.Value)
	recs, err := Decode(key, value)
	if err != nil || len(recs) != 1 {
		t.Fatalf("Decode = %v, %v", recs, err)
	}
	r := recs[0]
	if r.Kind != KindOffsetCommit || r.Group != "G" || r.Topic != "persistent://public/default/t1" ||
		*r.Partition != 0 || *r.Offset != 5 || *r.Metadata != "kop-exp" || *r.KeyVersion != 1 || *r.ValueVersion != 1 {
		t.Fatalf("decoded %+v", r)
	}
	if r.CommitTimestamp == nil || r.ExpireTimestamp == nil {
		t.Fatalf("timestamps missing: %+v", r)
	}
	if d := r.ExpireTimestamp.Time().Sub(r.CommitTimestamp.Time()); d != 72*time.Hour {
		t.Errorf("expire - commit = %s, want KoP's 72h offsets retention", d)
	}

}
