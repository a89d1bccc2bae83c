package kop

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// heldAcks is a pulsar client whose producers acknowledge nothing until want messages are
// pending, in all of them: a writer that awaited each message before the next never gets
// there. Messages to fail (by Pulsar key) are answered with an error.
type heldAcks struct {
	mu      sync.Mutex
	want    int
	pending []func()
	sync    int
	msgs    []*pulsar.ProducerMessage
	topics  []string
	fail    map[string]bool
}

type heldProducer struct {
	pulsar.Producer // unused methods panic
	c               *heldAcks
	topic           string
}

func (c *heldAcks) CreateProducer(o pulsar.ProducerOptions) (pulsar.Producer, error) {
	return &heldProducer{c: c, topic: o.Topic}, nil
}

func (p *heldProducer) Send(context.Context, *pulsar.ProducerMessage) (pulsar.MessageID, error) {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	p.c.sync++
	return nil, errors.New("a synchronous send")
}

func (p *heldProducer) SendAsync(_ context.Context, m *pulsar.ProducerMessage, done func(pulsar.MessageID, *pulsar.ProducerMessage, error)) {
	c := p.c
	c.mu.Lock()
	n := len(c.msgs)
	c.msgs, c.topics = append(c.msgs, m), append(c.topics, p.topic)
	var err error
	if c.fail[m.Key] {
		err = errors.New("producer closed")
	}
	c.pending = append(c.pending, func() { done(pulsar.NewMessageID(1, int64(n), -1, 0), m, err) })
	var release []func()
	if len(c.pending) == c.want {
		release, c.pending = c.pending, nil
	}
	c.mu.Unlock()
	for _, f := range release {
		go f() // the client calls back from its own goroutines
	}
}

func commitsOf(groups ...string) [][]OffsetCommit {
	var reqs [][]OffsetCommit
	for _, g := range groups {
		reqs = append(reqs, []OffsetCommit{{Group: g, Topic: "persistent://public/default/t", Partition: 0, Offset: 5},
			{Group: g, Topic: "persistent://public/default/t", Partition: 1, Offset: 6}})
	}
	return reqs
}

// sendGuarded runs send; a writer that waits for an acknowledgement before sending the
// rest never returns (heldAcks), which the guard turns into a failure instead of a hang.
func sendGuarded(t *testing.T, send func() []Sent) []Sent {
	t.Helper()
	done := make(chan []Sent, 1)
	go func() { done <- send() }()
	select {
	case s := <-done:
		return s
	case <-time.After(time.Minute):
		t.Fatal("the writer waited for an acknowledgement before sending every message")
		return nil
	}
}

// TestCommitRequestsSendsAllBeforeWaiting: 200 groups' requests are all in flight at once
// (no round trip each), each answered on its own; a failed one names its partition and
// does not stop the others.
func TestCommitRequestsSendsAllBeforeWaiting(t *testing.T) {
	var groups []string
	for i := range 200 {
		groups = append(groups, fmt.Sprintf("g%03d", i))
	}
	reqs := commitsOf(groups...)
	bad, _, _ := EncodeRequest(reqs[17], time.Now())
	c := &heldAcks{want: len(reqs), fail: map[string]bool{base64.StdEncoding.EncodeToString(bad): true}}
	w := NewWriter(c, "persistent://public/__kafka/__consumer_offsets", 8)
	w.Local = true
	sent := sendGuarded(t, func() []Sent { return w.CommitRequests(context.Background(), reqs) })
	if len(sent) != len(reqs) || c.sync != 0 || len(c.msgs) != len(reqs) {
		t.Fatalf("%d results, %d sync sends, %d messages for %d requests", len(sent), c.sync, len(c.msgs), len(reqs))
	}
	for i, s := range sent {
		wantPart := loader.PartitionFor(groups[i], 8)
		switch {
		case s.Partition != wantPart:
			t.Errorf("request %d: partition %d, want %d", i, s.Partition, wantPart)
		case i == 17 && (s.Err == nil || !strings.Contains(s.Err.Error(), "__consumer_offsets-partition-") || !strings.Contains(s.Err.Error(), "producer closed")):
			t.Errorf("the failed request: %v", s.Err)
		case i != 17 && (s.Err != nil || s.ID == nil):
			t.Errorf("request %d: %v, id %v", i, s.Err, s.ID)
		}
	}
	for i, m := range c.msgs {
		if !m.DisableReplication || m.Properties[loader.PropHeldFrom] != "" {
			t.Errorf("message %d: replication %v, properties %v", i, !m.DisableReplication, m.Properties)
		}
	}
}

// HoldRequests sends as CommitRequests does, each message marked with the held origin.
func TestHoldRequestsMarksTheOrigin(t *testing.T) {
	reqs := commitsOf("a", "b", "c")
	c := &heldAcks{want: len(reqs)}
	w := NewWriter(c, "persistent://public/__kafka/__consumer_offsets", 8)
	sent := sendGuarded(t, func() []Sent { return HoldWriter{W: w, From: "scus"}.CommitRequests(context.Background(), reqs) })
	for i, s := range sent {
		if m := c.msgs[i]; s.Err != nil || !m.DisableReplication || m.Properties[loader.PropHeldFrom] != "scus" {
			t.Errorf("request %d: %v, %+v", i, s.Err, m)
		}
	}
	if s := w.CommitRequests(context.Background(), [][]OffsetCommit{nil}); s[0].Err == nil {
		t.Error("an empty request was sent")
	}
}
