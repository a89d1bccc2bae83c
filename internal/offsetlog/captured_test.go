package offsetlog

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"os"
	"strings"
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

// capturedLine is one line of a kop-lab capture file.
type capturedLine struct {
	Source, Scenario, Group, MessageID, Key, Value string
}

// TestDecodeCapturedKoP31 decodes what a real KoP 3.1.1.1 wrote (kop-lab capture, the file
// says where): a consumer group's metadata with its member and, after it left, without; a
// transactional commit, whose COMMIT marker is not in the topic (the capture's message ids of
// that partition skip one entry after each transaction: the hidden marker); a group deletion.
// OffsetDelete is not captured: KoP 3.1 answers it UNSUPPORTED_VERSION (the file's source).
func TestDecodeCapturedKoP31(t *testing.T) {
	f, err := os.Open("testdata/kop-captured-3.1.1.1.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	byScenario := map[string][]Record{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l capturedLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		key, _ := base64.StdEncoding.DecodeString(l.Key)
		value, _ := base64.StdEncoding.DecodeString(l.Value)
		recs, err := Decode(key, value)
		if err != nil {
			t.Fatalf("%s %s: %v", l.Scenario, l.MessageID, err)
		}
		for _, r := range recs {
			if r.Group == l.Group || r.Kind == KindTxnCommit || r.Kind == KindTxnAbort {
				byScenario[l.Scenario] = append(byScenario[l.Scenario], r)
			}
		}
	}
	var withMembers, without bool
	for _, r := range byScenario["members"] {
		if r.Kind != KindGroupMetadata {
			continue
		}
		if len(r.Members) > 0 && r.Members[0].MemberID != "" && r.Members[0].ClientID != "" {
			withMembers = true
		}
		if r.Members != nil && len(r.Members) == 0 && strings.Contains(mustJSON(t, r), `"members":[]`) {
			without = true
		}
	}
	if !withMembers || !without {
		t.Errorf("members: with a member %v, without (members: []) %v: %s", withMembers, without, mustJSON(t, byScenario["members"]))
	}
	var txnCommit bool
	for _, r := range byScenario["txn"] {
		if r.Kind == KindOffsetCommit && r.Transactional && r.ProducerID != nil && *r.Offset == 20 {
			txnCommit = true
		}
		if r.Kind == KindTxnCommit || r.Kind == KindTxnAbort {
			t.Errorf("a transaction marker is in the topic as a record: %s", mustJSON(t, r))
		}
	}
	if !txnCommit {
		t.Errorf("txn: no transactional commit of offset 20: %s", mustJSON(t, byScenario["txn"]))
	}
	// DeleteGroups of a group that only committed offsets (no member ever joined): KoP
	// writes the offsets' tombstones, and no group tombstone (it had no group record).
	var groupTomb, offsetTomb bool
	for _, r := range byScenario["delete-group"] {
		groupTomb = groupTomb || r.Kind == KindGroupTombstone
		offsetTomb = offsetTomb || r.Kind == KindOffsetTombstone
	}
	if groupTomb || !offsetTomb {
		t.Errorf("delete-group: group tombstone %v, offset tombstone %v: %s", groupTomb, offsetTomb, mustJSON(t, byScenario["delete-group"]))
	}
}
