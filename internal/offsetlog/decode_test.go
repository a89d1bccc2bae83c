package offsetlog

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kop-offsets/kop-offsets/internal/offsetlog/offsetlogtest"
)

func decodeOne(t *testing.T, value []byte) Record {
	t.Helper()
	recs, err := Decode(nil, value)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if len(recs) != 1 {
		t.Fatalf("got %d records, want 1", len(recs))
	}
	return recs[0]
}

func TestDecodeOffsetValueVersions(t *testing.T) {
	const topic = "persistent://public/default/topic-1"
	for _, tc := range []struct {
		keyV, valV int16
		epoch      int32
		expire     int64
		wantEpoch  bool
		wantExpire bool
	}{
		{0, 0, -1, -1, false, false},
		{1, 1, -1, 1700000009999, false, true},
		{1, 1, -1, -1, false, false}, // KoP's usual v1: expireTimestamp -1 = absent
		{1, 2, -1, -1, false, false},
		{1, 3, 5, -1, true, false},
		{1, 3, -1, -1, false, false}, // leaderEpoch -1 = absent
	} {
		v := buildBatch(t, batchOpts{}, kv{offsetKeyBytes(tc.keyV, "grp", topic, 3),
			offsetValueBytes(tc.valV, 10900, tc.epoch, "meta", 1700000000123, tc.expire)})
		r := decodeOne(t, v)
		if r.Kind != KindOffsetCommit || r.Group != "grp" || r.Topic != topic || *r.Partition != 3 ||
			*r.Offset != 10900 || *r.Metadata != "meta" || *r.KeyVersion != tc.keyV || *r.ValueVersion != tc.valV ||
			r.CommitTimestamp.String() != "2023-11-14T22:13:20.123Z" {
			t.Errorf("v%d: %+v", tc.valV, r)
		}
		if (r.LeaderEpoch != nil) != tc.wantEpoch || (tc.wantEpoch && *r.LeaderEpoch != tc.epoch) {
			t.Errorf("v%d: leaderEpoch %v", tc.valV, r.LeaderEpoch)
		}
		if (r.ExpireTimestamp != nil) != tc.wantExpire || (tc.wantExpire && int64(*r.ExpireTimestamp) != tc.expire) {
			t.Errorf("v%d: expireTimestamp %v", tc.valV, r.ExpireTimestamp)
		}
	}
}

func TestDecodeGroupValueVersions(t *testing.T) {
	for v := int16(0); v <= 4; v++ {
		val := groupValueBytes(v, 2)
		var want kmsg.GroupMetadataValue
		if err := want.ReadFrom(val); err != nil {
			t.Fatal(err)
		}
		r := decodeOne(t, buildBatch(t, batchOpts{}, kv{groupKeyBytes("grp"), val}))
		if r.Kind != KindGroupMetadata || r.Group != "grp" || *r.KeyVersion != 2 || *r.ValueVersion != v ||
			*r.Generation != 7 || *r.ProtocolType != "consumer" || *r.Protocol != "range" || *r.Leader != "member-0" {
			t.Fatalf("v%d: %+v", v, r)
		}
		if (r.CurrentStateTimestamp != nil) != (v >= 2) {
			t.Errorf("v%d: currentStateTimestamp %v", v, r.CurrentStateTimestamp)
		}
		if len(r.Members) != 2 {
			t.Fatalf("v%d: members %+v", v, r.Members)
		}
		m := r.Members[1]
		if m.MemberID != "member-1" || m.ClientID != "client-1" || m.ClientHost != "/10.0.0.1" || m.SessionTimeoutMs != 45000 {
			t.Errorf("v%d: member %+v", v, m)
		}
		if (m.RebalanceTimeoutMs != nil) != (v >= 1) || (m.GroupInstanceID != nil) != (v >= 3) {
			t.Errorf("v%d: member optional fields %+v", v, m)
		}
		wantAssign := []TopicPartitions{{Topic: "persistent://public/default/topic-1", Partitions: []int32{1, 3}}}
		if j1, j2 := mustJSON(t, m.Assignment), mustJSON(t, wantAssign); j1 != j2 {
			t.Errorf("v%d: assignment %s, want %s", v, j1, j2)
		}
		if len(m.Subscription) != 1 || m.ProtocolError != "" || !bytes.Equal(m.RawAssignment, want.Members[1].Assignment) {
			t.Errorf("v%d: protocol %+v", v, m)
		}
	}
}

func TestDecodeBadAssignmentIsKept(t *testing.T) {
	g := kmsg.GroupMetadataValue{Version: 1, ProtocolType: "consumer", Protocol: ptr("range"), Leader: ptr("m"),
		Members: []kmsg.GroupMetadataValueMember{{MemberID: "m", Subscription: []byte{0, 1}, Assignment: []byte{0, 0, 0, 0, 0, 9}}}}
	r := decodeOne(t, buildBatch(t, batchOpts{}, kv{groupKeyBytes("grp"), g.AppendTo(nil)}))
	m := r.Members[0]
	if r.Kind != KindGroupMetadata || m.Assignment != nil || !bytes.Equal(m.RawAssignment, []byte{0, 0, 0, 0, 0, 9}) ||
		!strings.Contains(m.ProtocolError, "assignment: truncated") || !strings.Contains(m.ProtocolError, "subscription") {
		t.Fatalf("%+v", r)
	}
	// Other protocol types (connect, ...) keep their blobs undecoded.
	g.ProtocolType = "connect"
	r = decodeOne(t, buildBatch(t, batchOpts{}, kv{groupKeyBytes("grp"), g.AppendTo(nil)}))
	if r.Members[0].ProtocolError != "" || r.Members[0].Assignment != nil {
		t.Fatalf("%+v", r.Members[0])
	}
}

func TestDecodeKinds(t *testing.T) {
	ok := offsetKeyBytes(1, "g", "t", 0)
	for _, tc := range []struct {
		name  string
		value []byte
		want  []Kind
		pid   int64
		txn   bool
	}{
		{"placeholder", nil, []Kind{KindPlaceholder}, -1, false},
		{"empty value", []byte{}, []Kind{KindPlaceholder}, -1, false},
		{"tombstones", buildBatch(t, batchOpts{}, kv{ok, nil}, kv{groupKeyBytes("g"), nil}),
			[]Kind{KindOffsetTombstone, KindGroupTombstone}, -1, false},
		{"txn offsets", buildBatch(t, batchOpts{Txn: true, PID: 42}, kv{ok, offsetValueBytes(1, 1, -1, "", 1, -1)}, kv{ok, nil}),
			[]Kind{KindOffsetCommit, KindOffsetTombstone}, 42, true},
		{"commit", buildBatch(t, batchOpts{Txn: true, Control: true, PID: 42}, kv{controlKey(true), controlValue()}),
			[]Kind{KindTxnCommit}, 42, false},
		{"abort", buildBatch(t, batchOpts{Txn: true, Control: true, PID: 42}, kv{controlKey(false), controlValue()}),
			[]Kind{KindTxnAbort}, 42, false},
		{"control reads first record only", buildBatch(t, batchOpts{Txn: true, Control: true, PID: 42},
			kv{controlKey(false), controlValue()}, kv{controlKey(true), controlValue()}), []Kind{KindTxnAbort}, 42, false},
		{"empty batch", buildBatch(t, batchOpts{}), nil, -1, false},
	} {
		recs, err := Decode(nil, tc.value)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []Kind
		for _, r := range recs {
			got = append(got, r.Kind)
			if tc.pid >= 0 && (r.ProducerID == nil || *r.ProducerID != tc.pid) {
				t.Errorf("%s: producerId %v", tc.name, r.ProducerID)
			}
			if tc.pid < 0 && r.ProducerID != nil {
				t.Errorf("%s: unexpected producerId", tc.name)
			}
			if r.Transactional != tc.txn {
				t.Errorf("%s: transactional %v", tc.name, r.Transactional)
			}
		}
		if mustJSON(t, got) != mustJSON(t, tc.want) {
			t.Errorf("%s: kinds %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestDecodeCodecs(t *testing.T) {
	recs := []kv{
		{offsetKeyBytes(1, "g", "persistent://public/default/a", 0), offsetValueBytes(1, 100, -1, "", 1, -1)},
		{offsetKeyBytes(1, "g", "persistent://public/default/a", 1), offsetValueBytes(1, 200, -1, strings.Repeat("m", 300), 1, -1)},
		{groupKeyBytes("g"), groupValueBytes(1, 3)},
	}
	want := mustJSON(t, mustDecode(t, buildBatch(t, batchOpts{}, recs...)))
	for _, c := range []struct {
		name  string
		codec int16
	}{{"gzip", codecGzip}, {"snappy-xerial", codecSnappy}, {"snappy-raw", codecSnappyRaw}, {"lz4", codecLZ4}, {"zstd", codecZstd}} {
		v := buildBatch(t, batchOpts{Codec: c.codec}, recs...)
		if got := mustJSON(t, mustDecode(t, v)); got != want {
			t.Errorf("%s: %s\nwant %s", c.name, got, want)
		}
		// a corrupt compressed payload (CRC fixed up) is a decompression error, not a panic
		bad := append([]byte(nil), v...)
		for i := batchHeaderSize + 2; i < len(bad); i += 3 {
			bad[i] ^= 0x5a
		}
		fixCRC(bad)
		if _, err := Decode(nil, bad); err == nil {
			t.Errorf("%s: corrupt payload decoded", c.name)
		}
	}
}

func TestDecodeBatchErrors(t *testing.T) {
	good := commitMsg(t, "g", "t", 0, 1)
	mutate := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	for _, tc := range []struct {
		name  string
		value []byte
		want  error
		msg   string
	}{
		{"bad crc", mutate(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), ErrBadCRC, "record batch: field crc: bad crc"},
		{"magic 1", mutate(func(b []byte) []byte { b[batchOffMagic] = 1; return b }), ErrUnsupportedMagic,
			"record batch: field magic: unsupported magic 1 at byte 16"},
		{"magic 0", mutate(func(b []byte) []byte { b[batchOffMagic] = 0; return b }), ErrUnsupportedMagic, ""},
		{"codec 5", mutate(func(b []byte) []byte { b[batchOffAttributes+1] |= 5; fixCRC(b); return b }), ErrUnsupportedCodec,
			"record batch: field attributes: unsupported compression codec 5 at byte 21"},
		{"short", good[:30], ErrTruncated, "record batch: field baseTimestamp: truncated at byte 27"},
		{"length beyond value", good[:len(good)-1], ErrTruncated, ""},
		{"negative count", mutate(func(b []byte) []byte { binary.BigEndian.PutUint32(b[57:], 0xffffffff); fixCRC(b); return b }),
			ErrMalformed, ""},
		{"count too high", mutate(func(b []byte) []byte { binary.BigEndian.PutUint32(b[57:], 2); fixCRC(b); return b }),
			ErrTruncated, ""},
		{"trailing garbage", append(append([]byte(nil), good...), 1, 2, 3), ErrTruncated, ""},
	} {
		recs, err := Decode(nil, tc.value)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
			continue
		}
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("%s: %T is not a *DecodeError", tc.name, err)
		}
		if tc.msg != "" && !strings.HasPrefix(err.Error(), tc.msg) {
			t.Errorf("%s: message %q, want prefix %q", tc.name, err, tc.msg)
		}
		if len(recs) == 0 || recs[len(recs)-1].Kind != KindUndecodable {
			t.Errorf("%s: records %+v", tc.name, recs)
		}
	}
}

func TestDecodeRecordErrors(t *testing.T) {
	ok := offsetKeyBytes(1, "g", "t", 0)
	for _, tc := range []struct {
		name string
		rec  kv
		want error
		msg  string
	}{
		{"key v3", kv{append([]byte{0, 3}, ok[2:]...), nil}, ErrUnknownVersion, "record key: field version: unknown version 3 at byte 0"},
		{"key v-1", kv{append([]byte{0xff, 0xff}, ok[2:]...), nil}, ErrUnknownVersion, ""},
		{"null key", kv{nil, []byte{1}}, ErrMalformed, "record 0: field key: malformed null key at byte 0"},
		{"offset value v4", kv{ok, offsetValueBytes(4, 1, 1, "", 1, -1)}, ErrUnknownVersion,
			"offset value: field version: unknown version 4 at byte 0"},
		{"offset value v-1", kv{ok, []byte{0xff, 0xff, 0, 0}}, ErrUnknownVersion, ""},
		{"group value v5", kv{groupKeyBytes("g"), append([]byte{0, 5}, groupValueBytes(4, 1)[2:]...)}, ErrUnknownVersion,
			"group value: field version: unknown version 5 at byte 0"},
		{"negative metadata length", kv{ok, []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xfe}}, ErrMalformed,
			"offset value v1: field metadata: malformed negative string length -2 at byte 10"},
		{"empty key", kv{[]byte{}, nil}, ErrTruncated, "record key: field version: truncated at byte 0"},
	} {
		// the good record after the bad one must still decode
		recs, err := Decode(nil, buildBatch(t, batchOpts{}, tc.rec, kv{ok, offsetValueBytes(1, 7, -1, "", 1, -1)}))
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
			continue
		}
		if tc.msg != "" && err.Error() != tc.msg {
			t.Errorf("%s: message %q, want %q", tc.name, err, tc.msg)
		}
		if len(recs) != 2 || recs[0].Kind != KindUndecodable || recs[1].Kind != KindOffsetCommit || *recs[1].Offset != 7 {
			t.Errorf("%s: records %s", tc.name, mustJSON(t, recs))
		}
	}
	// an undecodable offset value keeps the key's fields
	recs, _ := Decode(nil, buildBatch(t, batchOpts{}, kv{ok, []byte{0, 1, 0}}))
	if recs[0].Group != "g" || recs[0].Topic != "t" || recs[0].Partition == nil {
		t.Errorf("partial record %+v", recs[0])
	}
}

// Burrow-style tables: one row per truncation point of each schema version. The wanted
// field is where the value ends; the error offset is the start of that field.
func TestTruncationOffsetValueV1(t *testing.T) {
	full := offsetValueBytes(1, 10900, -1, "m", 1700000000123, 1700000009999)
	// version 0-1, offset 2-9, metadata length 10-11, metadata 12, commitTimestamp 13-20, expireTimestamp 21-28
	rows := []struct {
		upTo  int // truncation points below this
		field string
		at    int
	}{{2, "version", 0}, {10, "offset", 2}, {12, "metadata", 10}, {13, "metadata", 12}, {21, "commitTimestamp", 13}, {29, "expireTimestamp", 21}}
	i := 0
	for _, row := range rows {
		for ; i < row.upTo; i++ {
			var d decoder
			err := d.decodeOffsetValue(full[:i])
			part := "offset value v1"
			if row.field == "version" {
				part = "offset value"
			}
			want := part + ": field " + row.field + ": truncated at byte " + itoa(row.at)
			if err == nil || err.Error() != want {
				t.Errorf("cut at %d: %v, want %q", i, err, want)
			}
		}
	}
	var d decoder
	if err := d.decodeOffsetValue(full); err != nil {
		t.Fatal(err)
	}
}

func TestTruncationOffsetKey(t *testing.T) {
	full := offsetKeyBytes(1, "gr", "tp", 4)
	// version 0-1, group len 2-3, group 4-5, topic len 6-7, topic 8-9, partition 10-13
	want := []string{"version", "version", "group", "group", "group", "group", "topic", "topic", "topic", "topic", "partition", "partition", "partition", "partition"}
	for i := range full {
		var d decoder
		_, err := d.decodeKey(full[:i])
		if !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "field "+want[i]+":") {
			t.Errorf("cut at %d: %v, want field %s", i, err, want[i])
		}
	}
}

// Every schema version, cut at every byte: always ErrTruncated with a field, never a panic,
// never success.
func TestTruncationAllVersions(t *testing.T) {
	type tc struct {
		name string
		b    []byte
		dec  func(*decoder, []byte) error
	}
	offsetDec := func(d *decoder, b []byte) error { return d.decodeOffsetValue(b) }
	groupDec := func(d *decoder, b []byte) error { return d.decodeGroupValue(b) }
	keyDec := func(d *decoder, b []byte) error { _, err := d.decodeKey(b); return err }
	cases := []tc{{"offset key v0", offsetKeyBytes(0, "g", "t", 1), keyDec}, {"group key", groupKeyBytes("g"), keyDec}}
	for v := int16(0); v <= 3; v++ {
		cases = append(cases, tc{"offset value v" + itoa(int(v)), offsetValueBytes(v, 1, 2, "md", 3, 4), offsetDec})
	}
	for v := int16(0); v <= 4; v++ {
		cases = append(cases, tc{"group value v" + itoa(int(v)), groupValueBytes(v, 2), groupDec})
	}
	for _, c := range cases {
		var d decoder
		if err := c.dec(&d, c.b); err != nil {
			t.Fatalf("%s: full value: %v", c.name, err)
		}
		for i := 0; i < len(c.b); i++ {
			err := c.dec(&d, c.b[:i])
			var de *DecodeError
			if !errors.Is(err, ErrTruncated) || !errors.As(err, &de) || de.Field == "" || de.Offset > i {
				t.Errorf("%s cut at %d: %v", c.name, i, err)
			}
		}
	}
	// the whole message, cut at every byte
	msg := buildBatch(t, batchOpts{Codec: codecNone}, kv{groupKeyBytes("g"), groupValueBytes(4, 1)})
	for i := 1; i < len(msg); i++ {
		if _, err := Decode(nil, msg[:i]); !errors.Is(err, ErrTruncated) {
			t.Errorf("message cut at %d: %v", i, err)
		}
	}
}

func TestUndecodable(t *testing.T) {
	r := Undecodable(errors.New("boom"))
	if r.Kind != KindUndecodable || r.Error != "boom" || mustJSON(t, r) != `{"kind":"undecodable","error":"boom"}` {
		t.Fatalf("%+v", r)
	}
}

func TestMillisJSON(t *testing.T) {
	m := Millis(1700000000123)
	if got := mustJSON(t, m); got != `"2023-11-14T22:13:20.123Z"` {
		t.Fatal(got)
	}
	var back Millis
	if err := json.Unmarshal([]byte(`"2023-11-14T22:13:20.123Z"`), &back); err != nil || back != m {
		t.Fatal(back, err)
	}
	if err := json.Unmarshal([]byte(`1700000000123`), &back); err != nil || back != m {
		t.Fatal(back, err)
	}
	if got := mustJSON(t, Millis(0)); got != `"1970-01-01T00:00:00.000Z"` {
		t.Fatal(got)
	}
}

// TestGolden decodes a fixed set of messages and compares the ndjson with
// testdata/decode.golden.ndjson (rewrite with -update).
func TestGolden(t *testing.T) {
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	for _, s := range fuzzSeeds(t) {
		recs, _ := Decode(s.Key, s.Value)
		for _, r := range recs {
			line := struct {
				Name string `json:"name"`
				Record
			}{s.Name, r}
			if err := enc.Encode(line); err != nil {
				t.Fatal(err)
			}
		}
	}
	path := filepath.Join("testdata", "decode.golden.ndjson")
	if *update {
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("golden mismatch; got:\n%s", out.String())
	}
}

func mustDecode(t *testing.T, v []byte) []Record {
	t.Helper()
	recs, err := Decode(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

var mustJSON = offsetlogtest.MustJSON

func TestDecodeConcurrent(t *testing.T) {
	var vals [][]byte
	for _, c := range []int16{codecNone, codecGzip, codecSnappy, codecLZ4, codecZstd} {
		vals = append(vals, buildBatch(t, batchOpts{Codec: c}, kv{groupKeyBytes("g"), groupValueBytes(4, 2)}))
	}
	want := mustJSON(t, mustDecode(t, vals[0]))
	done := make(chan string, 40)
	for i := 0; i < cap(done); i++ {
		go func() {
			recs, _ := Decode(nil, vals[i%len(vals)])
			b, _ := json.Marshal(recs)
			done <- string(b)
		}()
	}
	for i := 0; i < cap(done); i++ {
		if got := <-done; got != want {
			t.Fatalf("concurrent decode: %s", got)
		}
	}
}

// A group record without members says so in JSON ("members": []); other records carry no
// members field at all.
func TestGroupWithoutMembersJSON(t *testing.T) {
	recs, err := Decode(nil, buildBatch(t, batchOpts{}, kv{groupKeyBytes("G"), groupValueBytes(1, 0)}, offsetRec("G", 0, 5)))
	if err != nil || len(recs) != 2 {
		t.Fatalf("%v %v", recs, err)
	}
	g, o := mustJSON(t, recs[0]), mustJSON(t, recs[1])
	if !strings.Contains(g, `"members":[]`) {
		t.Errorf("group record: %s", g)
	}
	if strings.Contains(o, "members") {
		t.Errorf("offset record: %s", o)
	}
}
