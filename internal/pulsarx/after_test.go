package pulsarx

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// horizonCounter is a PartitionCounter that also tells a topic's horizon.
type horizonCounter struct {
	fakeCounter
	horizon string
	topics  []string
}

func (h *horizonCounter) ViewHorizon(_ context.Context, topic string) (string, error) {
	h.topics = append(h.topics, topic)
	return h.horizon, nil
}

func readAfter(t *testing.T, r *Reader, after string) (string, string) {
	t.Helper()
	var got []loader.Message
	end, err := r.ReadPartitionAfter(context.Background(), 2, after, func(m loader.Message) error { got = append(got, m); return nil })
	if err != nil {
		t.Fatalf("ReadPartitionAfter(%q): %v", after, err)
	}
	return ids(got), end
}

// TestReadPartitionAfter: a read from the start returns where it ended, the next one starts
// past it and reads only what was appended; with nothing appended it returns at once.
func TestReadPartitionAfter(t *testing.T) {
	rd := &fakeReader{msgs: []fakeMsg{single(7, 0, "", "a"), single(7, 1, "", "b")}, last: fakeID{7, 1, -1, 0}}
	c := &fakeClient{readers: map[string]*fakeReader{testTopic + "-partition-2": rd}}
	hc := &horizonCounter{fakeCounter: fakeCounter{n: 8}, horizon: "first ledger 7, compacted ledger -1"}
	r := NewReader("wus", c, hc, "public", "__kafka", ReaderOptions{IdleTimeout: time.Minute})
	got, end := readAfter(t, r, "")
	if got != "7:0:2:0 7:1:2:0" || end != "7:1:2:0" || !c.opts[0].StartMessageIDInclusive {
		t.Fatalf("whole read: %s, end %q", got, end)
	}
	rd.msgs = append(rd.msgs, single(7, 2, "", "c"))
	rd.last = fakeID{7, 2, -1, 0}
	got, end = readAfter(t, r, end)
	if o := c.opts[1]; got != "7:2:2:0" || end != "7:2:2:0" || o.StartMessageIDInclusive || o.StartMessageID.EntryID() != 1 {
		t.Fatalf("tail: %s, end %q, start %+v", got, end, o)
	}
	start := time.Now()
	if got, end2 := readAfter(t, r, end); got != "" || end2 != end || time.Since(start) > 5*time.Second {
		t.Fatalf("nothing appended: %q, end %q, took %v", got, end2, time.Since(start))
	}
	if h, err := r.Horizon(context.Background(), 2); err != nil || h != hc.horizon || hc.topics[0] != testTopic+"-partition-2" {
		t.Fatalf("horizon %q, %v, asked %v", h, err, hc.topics)
	}
	if _, err := r.ReadPartitionAfter(context.Background(), 2, "7:x", nil); err == nil {
		t.Fatal("a malformed position was read")
	}
	if _, err := newTestReader(c, 8, ReaderOptions{}).Horizon(context.Background(), 2); !errors.Is(err, errNoHorizon) {
		t.Fatalf("horizon without an admin that tells it: %v", err)
	}
}

// The last entry is a placeholder the client drops: the read ends past it (the bound), so
// that the next read does not wait for it again.
func TestReadPartitionAfterEndsPastDroppedEntry(t *testing.T) {
	rd := &fakeReader{msgs: []fakeMsg{single(7, 0, "", "a")}, last: fakeID{7, 1, -1, 0}}
	c := &fakeClient{readers: map[string]*fakeReader{testTopic + "-partition-2": rd}}
	pc := &proberCounter{fakeCounter: fakeCounter{n: 8}, ledger: 7, entry: 1}
	r := NewReader("wus", c, pc, "public", "__kafka", ReaderOptions{IdleTimeout: time.Minute})
	if got, end := readAfter(t, r, ""); got != "7:0:2:0" || end != "7:1:2:-1" {
		t.Fatalf("got %s, end %q", got, end)
	}
}
