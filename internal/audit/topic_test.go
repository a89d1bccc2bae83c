package audit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/kop"
)

type memPublisher struct {
	sent   []string
	err    error
	closed bool
}

func (m *memPublisher) Publish(_ context.Context, b []byte) error {
	if m.err != nil {
		return m.err
	}
	m.sent = append(m.sent, string(b))
	return nil
}

func (m *memPublisher) Close() { m.closed = true }

func TestTopicSendsTheFilesLine(t *testing.T) {
	pub := &memPublisher{}
	opened := 0
	topic := &Topic{Name: "persistent://public/kop-offsets/audit", New: func(context.Context, string) (Publisher, error) {
		opened++
		return pub, nil
	}}
	file := &File{Path: filepath.Join(t.TempDir(), "a.jsonl")}
	r := Record{Cluster: "wus", Action: ActionUnload, Bundle: "0x00000000_0x40000000", Result: ResultOK, Groups: []string{"g"}}
	if err := (Sinks{file, topic}).Write(r); err != nil {
		t.Fatal(err)
	}
	if err := topic.Open(context.Background()); err != nil || opened != 1 {
		t.Errorf("Open after the first write: %v, opened %d times", err, opened)
	}
	_ = file.Close()
	b, err := os.ReadFile(file.Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(pub.sent) != 1 || pub.sent[0]+"\n" != string(b) {
		t.Errorf("sent %q, file %q", pub.sent, b)
	}
	topic.Close()
	if !pub.closed {
		t.Error("publisher not closed")
	}
}

func TestTopicErrorsNameTheTopic(t *testing.T) {
	topic := &Topic{Name: "persistent://t/ns/audit", New: func(context.Context, string) (Publisher, error) {
		return nil, errors.New("AuthorizationError")
	}}
	if err := topic.Open(context.Background()); err == nil || !strings.Contains(err.Error(), "audit topic persistent://t/ns/audit cannot be written: AuthorizationError") {
		t.Errorf("Open: %v", err)
	}
	pub := &memPublisher{err: errors.New("timeout")}
	topic = &Topic{Name: "persistent://t/ns/audit", New: func(context.Context, string) (Publisher, error) { return pub, nil }}
	file := &File{Path: filepath.Join(t.TempDir(), "a.jsonl")}
	err := (Sinks{file, topic}).Write(Record{Action: ActionLookup})
	if err == nil || !strings.Contains(err.Error(), "audit topic persistent://t/ns/audit: timeout") {
		t.Errorf("Write: %v", err)
	}
	_ = file.Close()
	if recs, _ := ReadFile(file.Path, Filter{}); len(recs) != 1 {
		t.Errorf("the file lost the record the topic refused: %d records", len(recs))
	}
}

// batchPublisher counts how the records reach the topic.
type batchPublisher struct {
	memPublisher
	batches [][]string
}

func (b *batchPublisher) PublishAll(_ context.Context, payloads [][]byte) error {
	var batch []string
	for _, p := range payloads {
		batch = append(batch, string(p))
	}
	b.batches = append(b.batches, batch)
	return nil
}

// TestCommitsReachTheTopicAtOnce: a batch of commit requests is recorded in the file and
// sent to the audit topic in one batch, not a round trip per group.
func TestCommitsReachTheTopicAtOnce(t *testing.T) {
	pub := &batchPublisher{}
	topic := &Topic{Name: "persistent://public/kop-offsets/audit", New: func(context.Context, string) (Publisher, error) { return pub, nil }}
	file := &File{Path: filepath.Join(t.TempDir(), "a.jsonl")}
	c := Commits{CommitWriter: fakeCommits{}, Cluster: "wus", Topic: "persistent://public/__kafka/__consumer_offsets", Sink: Sinks{file, topic}}
	var reqs [][]kop.OffsetCommit
	for _, g := range []string{"a", "b", "c"} {
		reqs = append(reqs, []kop.OffsetCommit{{Group: g, Topic: "persistent://public/default/t", Offset: 5}})
	}
	c.CommitRequests(context.Background(), reqs)
	_ = file.Close()
	recs, err := ReadFile(file.Path, Filter{})
	if err != nil || len(recs) != 3 || len(pub.sent) != 0 || len(pub.batches) != 1 || len(pub.batches[0]) != 3 {
		t.Fatalf("file %d records (%v), topic: %d single sends, batches %v", len(recs), err, len(pub.sent), pub.batches)
	}
	// A publisher without batches gets them one by one.
	one := &memPublisher{}
	topic = &Topic{Name: "persistent://public/kop-offsets/audit", New: func(context.Context, string) (Publisher, error) { return one, nil }}
	if err := topic.WriteAll(make([]Record, 2)); err != nil || len(one.sent) != 2 {
		t.Fatalf("%v, %d sent", err, len(one.sent))
	}
}
