package reload

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/audit"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/session"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/lease"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
)

// fakeTopic is a topic in memory; err refuses the producer (no permission to produce).
type fakeTopic struct {
	mu    sync.Mutex
	err   error
	name  string
	lines []string
}

func (f *fakeTopic) open(_ context.Context, topic string) (audit.Publisher, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.name = topic
	if f.err != nil {
		return nil, f.err
	}
	return f, nil
}

func (f *fakeTopic) Publish(_ context.Context, b []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lines = append(f.lines, string(b))
	return nil
}

func (f *fakeTopic) Close() {}

// withAuditTopic makes the harness's sessions write the trail at file and to topic.
func withAuditTopic(h *harness, file string, topic *fakeTopic) {
	base := h.opts.NewSession
	h.opts.NewSession = func(target config.Cluster, all []config.Cluster) (*session.Session, error) {
		s, err := base(target, all)
		if err != nil {
			return nil, err
		}
		s.Guard(session.Writes{AuditFile: file, AuditTopic: "persistent://{tenant}/kop-offsets/audit"}, target, &lease.MemBroker{}, topic.open)
		return s, nil
	}
}

func TestAuditTopicGetsTheFilesLines(t *testing.T) {
	h := newHarness(t)
	h.opts.Yes = true
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	topic := &fakeTopic{}
	withAuditTopic(h, file, topic)
	if err := reloadRun(context.Background(), h.opts); err != nil {
		t.Fatalf("%v\n%s", err, h.err)
	}
	if topic.name != "persistent://public/kop-offsets/audit" {
		t.Errorf("topic %s, want the tenant substituted", topic.name)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(want) != len(h.admin.Writes()) || strings.Join(topic.lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("topic messages\n%s\nwant the file's lines\n%s\n(writes %v)", strings.Join(topic.lines, "\n"), b, h.admin.Writes())
	}
}

func TestUnwritableAuditTopicRefusesTheWrites(t *testing.T) {
	h := newHarness(t)
	h.opts.Yes = true
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	withAuditTopic(h, file, &fakeTopic{err: errors.New("server error: AuthorizationError")})
	err := reloadRun(context.Background(), h.opts)
	if cmdutil.OutcomeOf(err) != outcome.Usage || len(h.admin.Writes()) != 0 {
		t.Fatalf("exit %d (%v), writes %v: want exit 2 and nothing written", cmdutil.ExitCode(err), err, h.admin.Writes())
	}
	for _, want := range []string{"audit topic persistent://public/kop-offsets/audit cannot be written", "AuthorizationError", "nothing was written"} {
		if !strings.Contains(h.err.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, h.err)
		}
	}
	if recs := readTrail(t, file); len(recs) != 0 {
		t.Errorf("records of writes never sent: %+v", recs)
	}
}
