package watch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/promexport"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// history is one cluster's offsets topic and KoP: what check reads with a reader and watch
// follows with a tail.
type history struct {
	n     int32
	mu    sync.Mutex
	msgs  map[int32][]loader.Message
	cache map[string]map[string]map[int32]int64 // group -> topic -> partition -> offset
}

func newHistory(n int32) *history {
	return &history{n: n, msgs: map[int32][]loader.Message{}, cache: map[string]map[string]map[int32]int64{}}
}

// commit writes c as KoP does (from: the cluster it was replicated from, "" local).
func (h *history) commit(from string, c kop.OffsetCommit) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := loader.PartitionFor(c.Group, h.n)
	m := kop.Message(p, len(h.msgs[p]), c)
	m.ReplicatedFrom = from
	h.msgs[p] = append(h.msgs[p], m)
}

// txn writes c as a transactional commit of producer pid whose COMMIT marker no reader sees.
func (h *history) txn(c kop.OffsetCommit, pid int64) {
	p := loader.PartitionFor(c.Group, h.n)
	m := loader.Message{Partition: p, MessageID: fmt.Sprintf("1:%d:%d:-1", len(h.msgs[p]), p), Key: kop.PulsarKey(c.Group),
		Value: kop.EncodeTxnBatch(kop.EncodeKey(c), kop.EncodeValue(c), pid)}
	h.msgs[p] = append(h.msgs[p], m)
}

// serve makes KoP serve off for group on topic-1 partition p.
func (h *history) serve(group string, p int32, off int64) { h.serveTopic(group, "topic-1", p, off) }

func (h *history) serveTopic(group, topic string, p int32, off int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fakes.PutOffset(h.cache, group, topic, p, off)
}

// drop makes KoP forget group.
func (h *history) drop(group string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.cache, group)
}

func (h *history) Partitions(context.Context) (int32, error) { return h.n, nil }

func (h *history) ReadPartition(ctx context.Context, p int32, fn func(loader.Message) error) error {
	h.mu.Lock()
	msgs := slices.Clone(h.msgs[p])
	h.mu.Unlock()
	for _, m := range msgs {
		if err := fn(m); err != nil {
			return err
		}
	}
	return ctx.Err()
}

func (h *history) Tail(ctx context.Context, p int32, fn func(pulsarx.TailMessage) error, caughtUp func()) error {
	if err := h.ReadPartition(ctx, p, func(m loader.Message) error {
		return fn(pulsarx.TailMessage{Message: m, ReplicatedFrom: m.ReplicatedFrom})
	}); err != nil {
		return err
	}
	caughtUp()
	<-ctx.Done()
	return nil
}

func (h *history) ListGroups(context.Context) ([]survey.ListedGroup, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []survey.ListedGroup
	for g := range h.cache {
		out = append(out, survey.ListedGroup{Group: g})
	}
	return out, nil
}

func (h *history) EachOffsets(_ context.Context, groups []string, fn func(string, verdict.GroupFetch)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, g := range groups {
		fn(g, verdict.GroupFetch{Offsets: h.cache[g]})
	}
}

// EndOffsets: every topic has 3 partitions of 1000 messages.
func (h *history) EndOffsets(_ context.Context, topics []string) (map[string]map[int32]int64, error) {
	out := map[string]map[int32]int64{}
	for _, t := range topics {
		out[t] = map[int32]int64{0: 1000, 1: 1000, 2: 1000}
	}
	return out, nil
}

var agreeNow = time.Unix(1_800_000_000, 0)

// histories are the states both engines must judge alike, one per scenario.
func histories() map[string]func(scus, wus *history, repl survey.StaticReplication) {
	c := func(g string, p int32, off int64, age time.Duration) kop.OffsetCommit {
		return kop.OffsetCommit{Group: g, Topic: topic1, Partition: p, Offset: off, CommitTime: agreeNow.Add(-age)}
	}
	return map[string]func(scus, wus *history, repl survey.StaticReplication){
		"ok, stale cache, missing": func(scus, wus *history, _ survey.StaticReplication) {
			scus.commit("", c("g-ok", 0, 100, time.Hour))
			wus.commit("scus", c("g-ok", 0, 100, time.Hour))
			scus.serve("g-ok", 0, 100)
			wus.serve("g-ok", 0, 100)
			scus.commit("", c("g-stale", 1, 200, time.Hour))
			wus.commit("scus", c("g-stale", 1, 200, time.Hour))
			scus.serve("g-stale", 1, 200)
			wus.serve("g-stale", 1, 150)
			scus.commit("", c("g-scus-only", 2, 7, time.Hour))
			scus.serve("g-scus-only", 2, 7)
		},
		// expiring is a warning: check's default --fail-on leaves it out, and so does watch.
		"expiring": func(scus, wus *history, _ survey.StaticReplication) {
			age := kop.KoPOffsetsRetention - time.Hour
			scus.commit("", c("g-exp", 0, 5, age))
			wus.commit("scus", c("g-exp", 0, 5, age))
			scus.serve("g-exp", 0, 5)
			wus.serve("g-exp", 0, 5)
		},
		"expired and replication lag": func(scus, wus *history, repl survey.StaticReplication) {
			scus.commit("", c("g-old", 0, 5, kop.KoPOffsetsRetention+time.Hour))
			wus.commit("scus", c("g-old", 0, 5, kop.KoPOffsetsRetention+time.Hour))
			scus.commit("", c("g-lag", 0, 90, time.Minute))
			wus.commit("scus", c("g-lag", 0, 40, time.Hour))
			scus.serve("g-lag", 0, 90)
			wus.serve("g-lag", 0, 40)
			repl[loader.PartitionFor("g-lag", nParts)] = map[string]verdict.Inbound{"wus": {Backlog: 3, Connected: true}}
		},
		// A transactional commit the loader leaves pending: both name its producer.
		"pending transactional commit": func(scus, wus *history, _ survey.StaticReplication) {
			scus.commit("", c("g-txn", 0, 10, time.Hour))
			scus.txn(c("g-txn", 0, 20, time.Minute), 4242)
			scus.serve("g-txn", 0, 20)
			wus.commit("scus", c("g-txn", 0, 10, time.Hour))
			wus.serve("g-txn", 0, 10)
		},
	}
}

// TestCheckAndWatchAgree drives check and watch over the same histories: the rows, their
// statuses, the exit code and the Prometheus series of check's names must be equal.
func TestCheckAndWatchAgree(t *testing.T) {
	for name, build := range histories() {
		t.Run(name, func(t *testing.T) {
			scus, wus, repl := newHistories(build)
			const ns = "public/default"

			rep, err := survey.Run(context.Background(), []survey.Cluster{
				{Name: "scus", KafkaNamespace: ns, Reader: scus, Fetcher: scus, Replication: repl},
				{Name: "wus", KafkaNamespace: ns, Reader: wus, Fetcher: wus, Replication: survey.StaticReplication{}},
			}, survey.Options{Now: agreeNow, SkipAlignment: true}) // watch does not align
			if err != nil {
				t.Fatal(err)
			}
			watched := watchHistories(t, scus, wus, repl)
			wrep := watched.Report()

			if got, want := rowsJSON(t, wrep.Rows), rowsJSON(t, rep.Rows); got != want {
				t.Errorf("rows differ\ncheck: %s\nwatch: %s", want, got)
			}
			if len(rep.Rows) == 0 {
				t.Fatal("no rows: the history is empty")
			}
			if fmt.Sprint(wrep.Summary) != fmt.Sprint(rep.Summary) || wrep.ExitCode != rep.ExitCode {
				t.Errorf("check: %v exit %d; watch: %v exit %d", rep.Summary, rep.ExitCode, wrep.Summary, wrep.ExitCode)
			}
			creg, err := promexport.Registry(rep)
			if err != nil {
				t.Fatal(err)
			}
			var exposed bytes.Buffer // what /metrics serves
			if err := watched.Metrics().WriteText(&exposed); err != nil {
				t.Fatal(err)
			}
			if got, want := series(t, &exposed), series(t, gathered(t, creg)); got != want {
				t.Errorf("series differ\ncheck:\n%s\nwatch:\n%s", want, got)
			}
			t.Logf("%v exit %d", rep.Summary, rep.ExitCode)
		})
	}
}

// newHistories are the histories of scus and wus that build writes, and scus's replication.
func newHistories(build func(scus, wus *history, repl survey.StaticReplication)) (scus, wus *history, repl survey.StaticReplication) {
	scus, wus, repl = newHistory(nParts), newHistory(nParts), survey.StaticReplication{}
	build(scus, wus, repl)
	return scus, wus, repl
}

// watchHistories watches scus and wus (see watchOnce).
func watchHistories(t *testing.T, scus, wus *history, repl survey.StaticReplication) *Watcher {
	t.Helper()
	const ns = "public/default"
	return watchOnce(t, []Cluster{
		{Name: "scus", KafkaNamespace: ns, Tailer: scus, Fetcher: scus, Replication: repl},
		{Name: "wus", KafkaNamespace: ns, Tailer: wus, Fetcher: wus, Replication: survey.StaticReplication{}},
	})
}

// watchOnce runs a watcher until every partition is replayed and one cycle more has run on
// that view.
func watchOnce(t *testing.T, clusters []Cluster) *Watcher {
	t.Helper()
	w := New(clusters, Options{Now: func() time.Time { return agreeNow }, Backoff: 10 * time.Millisecond, CallTimeout: 5 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	wait := w.Start(ctx)
	t.Cleanup(func() { cancel(); wait() })
	for i := 0; !w.Ready(); i++ {
		if i > 1000 {
			t.Fatal("watch never replayed the histories")
		}
		w.Cycle(ctx)
		time.Sleep(5 * time.Millisecond)
	}
	w.Cycle(ctx)
	return w
}

func rowsJSON(t *testing.T, rows []verdict.Row) string {
	t.Helper()
	b, err := json.MarshalIndent(rows, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// gathered is the text exposition of what g gathers.
func gathered(t *testing.T, g prometheus.Gatherer) io.Reader {
	t.Helper()
	var buf bytes.Buffer
	if err := promexport.EncodeText(&buf, g); err != nil {
		t.Fatal(err)
	}
	return &buf
}

// series is the families of an exposition named like check's series, each family's samples
// sorted (watch streams them in row order, a registry sorts them).
func series(t *testing.T, exposition io.Reader) string {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(exposition)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, name := range checkSeries {
		mf, ok := fams[name]
		if !ok {
			continue
		}
		key := func(m *dto.Metric) string { return fmt.Sprint(m.GetLabel()) }
		slices.SortFunc(mf.Metric, func(a, b *dto.Metric) int { return strings.Compare(key(a), key(b)) })
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			t.Fatal(err)
		}
	}
	return buf.String()
}

var checkSeries = []string{promexport.MetricCached, promexport.MetricPersisted, promexport.MetricTranslated, promexport.MetricUnserved,
	promexport.MetricLag, promexport.MetricDrift, promexport.MetricStatus, promexport.MetricExitCode}
