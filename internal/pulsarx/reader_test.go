package pulsarx

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/kop-offsets/kop-offsets/internal/loader"
)

const testTopic = "persistent://public/__kafka/__consumer_offsets"

var subName = regexp.MustCompile(`^kop-offsets-reader-[0-9a-f]{10}$`)

func newTestReader(c *fakeClient, n int32, o ReaderOptions) *Reader {
	return NewReader("scus", c, fakeCounter{n: n}, "public", "__kafka", o)
}

func collect(t *testing.T, r *Reader, p int32) []loader.Message {
	t.Helper()
	var got []loader.Message
	if err := r.ReadPartition(context.Background(), p, func(m loader.Message) error {
		got = append(got, m)
		return nil
	}); err != nil {
		t.Fatalf("ReadPartition: %v", err)
	}
	return got
}

func ids(ms []loader.Message) string {
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = m.MessageID
	}
	return strings.Join(s, " ")
}

func TestReadPartitionOptions(t *testing.T) {
	c := &fakeClient{readers: map[string]*fakeReader{
		testTopic + "-partition-3": {last: fakeID{5, -1, -1, 0}},
	}}
	r := newTestReader(c, 8, ReaderOptions{})
	collect(t, r, 3)
	if len(c.opts) != 1 {
		t.Fatalf("readers created: %d", len(c.opts))
	}
	o := c.opts[0]
	if o.Topic != testTopic+"-partition-3" || o.SubscriptionRolePrefix != "kop-offsets-reader" ||
		o.ReceiverQueueSize != DefaultReceiverQueueSize || !subName.MatchString(o.SubscriptionName) || o.ReadCompacted {
		t.Errorf("options: %+v", o)
	}
	if o.StartMessageID.LedgerID() != pulsar.EarliestMessageID().LedgerID() || !o.StartMessageIDInclusive {
		t.Errorf("start: %v inclusive=%v", o.StartMessageID, o.StartMessageIDInclusive)
	}
}

func TestReadPartitionEmpty(t *testing.T) {
	rd := &fakeReader{last: fakeID{-1, -1, -1, 0}}
	c := &fakeClient{readers: map[string]*fakeReader{testTopic + "-partition-0": rd}}
	start := time.Now()
	if got := collect(t, newTestReader(c, 8, ReaderOptions{}), 0); len(got) != 0 {
		t.Fatalf("got %d messages", len(got))
	}
	if rd.nexts != 0 || !rd.closed || time.Since(start) > time.Second {
		t.Errorf("nexts=%d closed=%v took %v", rd.nexts, rd.closed, time.Since(start))
	}
}

func TestReadPartitionStopsAtLastAtStart(t *testing.T) {
	rd := &fakeReader{
		msgs: []fakeMsg{single(7, 0, "", "a"), single(7, 1, "", "b"), single(7, 2, "", "c"), single(8, 0, "", "late")},
		last: fakeID{7, 2, -1, 0},
	}
	c := &fakeClient{readers: map[string]*fakeReader{testTopic + "-partition-1": rd}}
	got := collect(t, newTestReader(c, 8, ReaderOptions{}), 1)
	if ids(got) != "7:0:1:0 7:1:1:0 7:2:1:0" {
		t.Fatalf("ids: %s", ids(got))
	}
	if rd.nexts != 3 {
		t.Errorf("Next called %d times, want 3 (stop without waiting for more)", rd.nexts)
	}
	if got[1].Partition != 1 || string(got[1].Value) != "b" || !got[1].PublishTime.Equal(time.UnixMilli(1_700_000_000_001)) {
		t.Errorf("message: %+v", got[1])
	}
}

func TestReadPartitionSkipsMessagesAfterLast(t *testing.T) {
	// The last id points at an entry never delivered (e.g. a server-side marker) but a later
	// entry arrives: stop without delivering it.
	rd := &fakeReader{
		msgs: []fakeMsg{single(7, 0, "", "a"), single(7, 5, "", "after")},
		last: fakeID{7, 3, -1, 0},
	}
	c := &fakeClient{readers: map[string]*fakeReader{testTopic + "-partition-0": rd}}
	if got := collect(t, newTestReader(c, 8, ReaderOptions{}), 0); ids(got) != "7:0:0:0" {
		t.Fatalf("ids: %s", ids(got))
	}
}

func TestReadPartitionBatches(t *testing.T) {
	batch := func(entry int64, n int32) []fakeMsg {
		var out []fakeMsg
		for i := range n {
			out = append(out, fakeMsg{id: fakeID{9, entry, i, n}, value: []byte(fmt.Sprint(i))})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		last fakeID
	}{
		{"broker reports batch index", fakeID{9, 1, 2, 0}},
		{"broker reports -1", fakeID{9, 1, -1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs := append(batch(0, 2), batch(1, 3)...)
			msgs = append(msgs, batch(2, 2)...)
			rd := &fakeReader{msgs: msgs, last: tc.last}
			c := &fakeClient{readers: map[string]*fakeReader{testTopic + "-partition-2": rd}}
			got := collect(t, newTestReader(c, 8, ReaderOptions{}), 2)
			if ids(got) != "9:0:2:0 9:0:2:1 9:1:2:0 9:1:2:1 9:1:2:2" {
				t.Fatalf("ids: %s", ids(got))
			}
		})
	}
}

func TestReadPartitionKeys(t *testing.T) {
	kafkaKey := []byte{0, 1, 0, 5, 'g', 'r', 'o', 'u', 'p'}
	b64 := base64.StdEncoding.EncodeToString(kafkaKey)
	msgs := []fakeMsg{single(1, 0, b64, "v"), single(1, 1, "not base64!", "v"), single(1, 2, "", "v")}
	for _, tc := range []struct {
		mode KeyMode
		want []string
	}{
		{KeyBase64, []string{string(kafkaKey), "not base64!", ""}},
		{KeyRaw, []string{b64, "not base64!", ""}},
	} {
		rd := &fakeReader{msgs: msgs, last: fakeID{1, 2, -1, 0}}
		c := &fakeClient{readers: map[string]*fakeReader{testTopic + "-partition-0": rd}}
		got := collect(t, newTestReader(c, 8, ReaderOptions{KeyMode: tc.mode}), 0)
		for i, m := range got {
			if string(m.Key) != tc.want[i] {
				t.Errorf("mode %d message %d: key %q, want %q", tc.mode, i, m.Key, tc.want[i])
			}
		}
		if got[2].Key != nil {
			t.Errorf("empty key should be nil")
		}
	}
}

func TestReadPartitionFnErrorUnchanged(t *testing.T) {
	rd := &fakeReader{msgs: []fakeMsg{single(1, 0, "", "a"), single(1, 1, "", "b")}, last: fakeID{1, 1, -1, 0}}
	c := &fakeClient{readers: map[string]*fakeReader{testTopic + "-partition-0": rd}}
	boom := errors.New("boom")
	calls := 0
	err := newTestReader(c, 8, ReaderOptions{}).ReadPartition(context.Background(), 0, func(loader.Message) error {
		calls++
		return boom
	})
	if err != boom || calls != 1 || !rd.closed { //nolint:errorlint // the test asserts fn's error comes back unchanged, not merely wrapped
		t.Fatalf("err=%v calls=%d closed=%v", err, calls, rd.closed)
	}
}

func TestReadPartitionErrorsNameClusterTopicPartition(t *testing.T) {
	c := &fakeClient{readers: map[string]*fakeReader{}, err: errors.New("connection refused")}
	err := newTestReader(c, 8, ReaderOptions{}).ReadPartition(context.Background(), 6, func(loader.Message) error { return nil })
	want := "cluster scus: topic " + testTopic + " partition 6: create reader: connection refused"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

func TestReadPartitionIdleTimeout(t *testing.T) {
	rd := &fakeReader{msgs: []fakeMsg{single(3, 0, "", "a")}, last: fakeID{3, 4, -1, 0}}
	c := &fakeClient{readers: map[string]*fakeReader{testTopic + "-partition-5": rd}}
	err := newTestReader(c, 8, ReaderOptions{IdleTimeout: 50 * time.Millisecond}).
		ReadPartition(context.Background(), 5, func(loader.Message) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "partition 5: read: no message for 50ms before the last message id 3:4:5:-1 (last read 3:0:5:0)") {
		t.Fatalf("err = %v", err)
	}
}

func TestReadPartitionContextCancelled(t *testing.T) {
	rd := &fakeReader{last: fakeID{3, 4, -1, 0}}
	c := &fakeClient{readers: map[string]*fakeReader{testTopic + "-partition-0": rd}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	err := newTestReader(c, 8, ReaderOptions{}).ReadPartition(ctx, 0, func(loader.Message) error { return nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

func TestReadPartitionFrom(t *testing.T) {
	from := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	t.Run("nothing since", func(t *testing.T) {
		rd := &fakeReader{msgs: []fakeMsg{single(1, 0, "", "old")}, last: fakeID{1, 0, -1, 0}, hasNext: false}
		c := &fakeClient{readers: map[string]*fakeReader{testTopic + "-partition-0": rd}}
		if got := collect(t, newTestReader(c, 8, ReaderOptions{From: from}), 0); len(got) != 0 || !rd.sought.Equal(from) || rd.nexts != 0 {
			t.Fatalf("got %d, sought %v, nexts %d", len(got), rd.sought, rd.nexts)
		}
	})
	t.Run("messages since", func(t *testing.T) {
		rd := &fakeReader{msgs: []fakeMsg{single(1, 4, "", "new")}, last: fakeID{1, 4, -1, 0}, hasNext: true}
		c := &fakeClient{readers: map[string]*fakeReader{testTopic + "-partition-0": rd}}
		if got := collect(t, newTestReader(c, 8, ReaderOptions{From: from}), 0); ids(got) != "1:4:0:0" {
			t.Fatalf("ids %s", ids(got))
		}
	})
}

func TestFollowUntilCancelled(t *testing.T) {
	rd := &fakeReader{msgs: []fakeMsg{single(1, 0, "", "a"), single(1, 1, "", "b"), single(2, 0, "", "c")}}
	c := &fakeClient{readers: map[string]*fakeReader{testTopic + "-partition-0": rd}}
	ctx, cancel := context.WithCancel(context.Background())
	var got []loader.Message
	err := newTestReader(c, 8, ReaderOptions{}).Follow(ctx, 0, func(m loader.Message) error {
		got = append(got, m)
		if len(got) == 3 {
			cancel()
		}
		return nil
	})
	if err != nil || ids(got) != "1:0:0:0 1:1:0:0 2:0:0:0" {
		t.Fatalf("err=%v ids=%s", err, ids(got))
	}
}

func partitionReaders(n int, perPartition int) map[string]*fakeReader {
	m := map[string]*fakeReader{}
	for p := range n {
		rd := &fakeReader{last: fakeID{int64(p + 1), int64(perPartition - 1), -1, 0}}
		for e := range perPartition {
			rd.msgs = append(rd.msgs, single(int64(p+1), int64(e), "", "x"))
		}
		m[PartitionTopic(testTopic, int32(p))] = rd
	}
	return m
}

func TestReadAllBoundedAndSerialized(t *testing.T) {
	c := &fakeClient{readers: partitionReaders(8, 50)}
	var inFn, maxInFn atomic.Int32
	perPartition := map[int32][]string{}
	err := newTestReader(c, 8, ReaderOptions{}).ReadAll(context.Background(), nil, 3, func(m loader.Message) error {
		n := inFn.Add(1)
		if n > maxInFn.Load() {
			maxInFn.Store(n)
		}
		perPartition[m.Partition] = append(perPartition[m.Partition], m.MessageID)
		time.Sleep(10 * time.Microsecond)
		inFn.Add(-1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(perPartition) != 8 {
		t.Fatalf("partitions read: %d", len(perPartition))
	}
	for p, l := range perPartition {
		if len(l) != 50 || l[0] != fmt.Sprintf("%d:0:%d:0", p+1, p) || l[49] != fmt.Sprintf("%d:49:%d:0", p+1, p) {
			t.Errorf("partition %d: %d messages, first %s", p, len(l), l[0])
		}
	}
	if maxInFn.Load() != 1 {
		t.Errorf("fn ran concurrently: %d", maxInFn.Load())
	}
	if m := c.maxOpen.Load(); m > 3 || m < 1 {
		t.Errorf("max open readers %d, want 1..3", m)
	}
	if c.open.Load() != 0 {
		t.Errorf("readers left open: %d", c.open.Load())
	}
}

func TestReadAllSubsetAndFirstError(t *testing.T) {
	c := &fakeClient{readers: partitionReaders(8, 10)}
	boom := errors.New("boom")
	seen := map[int32]bool{}
	err := newTestReader(c, 8, ReaderOptions{}).ReadAll(context.Background(), []int32{2, 5}, 0, func(m loader.Message) error {
		seen[m.Partition] = true
		if m.Partition == 5 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	for p := range seen {
		if p != 2 && p != 5 {
			t.Errorf("read partition %d not asked for", p)
		}
	}
}

func TestReadAllMissingPartitionNamed(t *testing.T) {
	readers := partitionReaders(8, 3)
	delete(readers, PartitionTopic(testTopic, 4))
	c := &fakeClient{readers: readers}
	err := newTestReader(c, 8, ReaderOptions{}).ReadAll(context.Background(), nil, 2, func(loader.Message) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "cluster scus: topic "+testTopic+" partition 4: create reader") {
		t.Fatalf("err = %v", err)
	}
}

func TestFollowAll(t *testing.T) {
	c := &fakeClient{readers: partitionReaders(4, 2)}
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err := newTestReader(c, 4, ReaderOptions{}).FollowAll(ctx, nil, func(loader.Message) error {
		if n++; n == 8 {
			cancel()
		}
		return nil
	})
	if err != nil || n != 8 || c.maxOpen.Load() != 4 {
		t.Fatalf("err=%v n=%d maxOpen=%d", err, n, c.maxOpen.Load())
	}
}

func TestPartitions(t *testing.T) {
	r := NewReader("wus", &fakeClient{}, fakeCounter{n: 0}, "public", "__kafka", ReaderOptions{})
	if _, err := r.Partitions(context.Background()); err == nil || err.Error() != "cluster wus: "+testTopic+" is not a partitioned topic" {
		t.Fatalf("err = %v", err)
	}
	r = NewReader("wus", &fakeClient{}, fakeCounter{n: 50}, "public", "__kafka", ReaderOptions{})
	if n, err := r.Partitions(context.Background()); n != 50 || err != nil {
		t.Fatalf("n=%d err=%v", n, err)
	}
}

// proberCounter is a PartitionCounter that also answers cursor positions.
type proberCounter struct {
	fakeCounter
	ledger, entry int64
	calls         atomic.Int32
	subs          []string
}

func (p *proberCounter) CursorMarkDelete(_ context.Context, topic, sub string) (int64, int64, bool, error) {
	p.calls.Add(1)
	p.subs = append(p.subs, topic+" "+sub)
	return p.ledger, p.entry, true, nil
}

func TestReadPartitionLastMessageDroppedByClient(t *testing.T) {
	// Entry 7:2 (an empty placeholder) never arrives: the client dropped and acked it.
	rd := &fakeReader{msgs: []fakeMsg{single(7, 0, "", "a"), single(7, 1, "", "b")}, last: fakeID{7, 2, -1, 0}}
	c := &fakeClient{readers: map[string]*fakeReader{testTopic + "-partition-0": rd}}
	pc := &proberCounter{fakeCounter: fakeCounter{n: 8}, ledger: 7, entry: 2}
	r := NewReader("scus", c, pc, "public", "__kafka", ReaderOptions{IdleTimeout: time.Minute})
	start := time.Now()
	var got []loader.Message
	if err := r.ReadPartition(context.Background(), 0, func(m loader.Message) error { got = append(got, m); return nil }); err != nil {
		t.Fatal(err)
	}
	if ids(got) != "7:0:0:0 7:1:0:0" || time.Since(start) > 5*time.Second || pc.calls.Load() != 1 {
		t.Fatalf("ids=%s took %v probes %d", ids(got), time.Since(start), pc.calls.Load())
	}
	if want := testTopic + "-partition-0 " + c.opts[0].SubscriptionName; pc.subs[0] != want {
		t.Errorf("probed %q, want %q", pc.subs[0], want)
	}
	if n := r.Undelivered(); n != 1 {
		t.Errorf("undelivered %d, want 1 (the dropped last entry)", n)
	}
}

// Entries missing between received ones of a ledger (Pulsar markers, discarded
// placeholders) are counted; the compacted view, whose ids are sparse by nature, is not.
func TestReadPartitionCountsUndelivered(t *testing.T) {
	for _, tc := range []struct {
		compacted bool
		want      int64
	}{{false, 3}, {true, 0}} {
		rd := &fakeReader{msgs: []fakeMsg{single(7, 0, "", "a"), single(7, 3, "", "b"), single(8, 0, "", "c"), single(8, 2, "", "d")}, last: fakeID{8, 2, -1, 0}}
		c := &fakeClient{readers: map[string]*fakeReader{testTopic + "-partition-1": rd}}
		r := newTestReader(c, 8, ReaderOptions{Compacted: tc.compacted})
		if got := collect(t, r, 1); len(got) != 4 {
			t.Fatalf("got %d messages", len(got))
		}
		if n := r.Undelivered(); n != tc.want {
			t.Errorf("compacted %v: undelivered %d, want %d", tc.compacted, n, tc.want)
		}
	}
}

func TestReadPartitionProbeBehindKeepsWaiting(t *testing.T) {
	rd := &fakeReader{msgs: []fakeMsg{single(7, 0, "", "a")}, last: fakeID{7, 2, -1, 0}}
	c := &fakeClient{readers: map[string]*fakeReader{testTopic + "-partition-0": rd}}
	pc := &proberCounter{fakeCounter: fakeCounter{n: 8}, ledger: 7, entry: 0}
	r := NewReader("scus", c, pc, "public", "__kafka", ReaderOptions{IdleTimeout: 2500 * time.Millisecond})
	err := r.ReadPartition(context.Background(), 0, func(loader.Message) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "no message for 2.5s") || pc.calls.Load() < 2 {
		t.Fatalf("err=%v probes=%d", err, pc.calls.Load())
	}
}

// TestReadPartitionKeptMark: a kept translation's properties reach the loader as its mark;
// a mark that does not parse leaves an ordinary message.
func TestReadPartitionKeptMark(t *testing.T) {
	kept := single(7, 0, "", "a")
	kept.props = loader.KeptMark{From: "scus", Sources: []int64{60}, At: time.UnixMilli(1_700_000_000_000)}.Properties()
	bad := single(7, 1, "", "b")
	bad.props = map[string]string{loader.PropKeptFrom: "scus", loader.PropKeptAt: "soon"}
	rd := &fakeReader{msgs: []fakeMsg{kept, bad}, last: fakeID{7, 1, -1, 0}}
	c := &fakeClient{readers: map[string]*fakeReader{testTopic + "-partition-1": rd}}
	got := collect(t, newTestReader(c, 8, ReaderOptions{}), 1)
	if len(got) != 2 || got[0].Kept == nil || got[0].Kept.From != "scus" || got[0].Kept.Sources[0] != 60 || got[1].Kept != nil {
		t.Fatalf("marks: %+v / %+v", got[0].Kept, got[1].Kept)
	}
}
