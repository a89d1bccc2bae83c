//go:build kop

package kop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
)

// disasterKeys is how many keys (topics, partition 0 of each) each group of
// TestDisasterScale commits.
const disasterKeys = 5

// TestDisasterScale is issue 47 item 5, a measurement (docs/performance.md): KOP_DISASTER_SCALE
// member-less groups (e.g. 10000) commit disasterKeys keys each on scus through KoP (aligned
// topics, KOP_DISASTER_RATE commits a second, default 1000), replicated to wus, with `watch
// --keep-translations --cluster wus` running until it caught up. Then scus stops (SIGSTOP: a
// region gone), watch stops (it holds wus's writer lease), and `failover --source scus --target wus
// --source-gone --yes -o json` runs. It measures the time from the command to every row
// served on wus (the failover's own proof), the rows landed per kind (plan.landings), and for
// a sample of groups that a Kafka consumer on wus starts exactly where the plan says. It
// asserts what must hold whatever the machine: every row landed kept, proven, and the sampled
// consumers start where the plan says. Opt-in: it takes minutes and leaves the groups in both
// offsets topics.
func TestDisasterScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("KOP_DISASTER_SCALE"))
	if n == 0 {
		t.Skip("a measurement: set KOP_DISASTER_SCALE=10000 (groups) to run it (docs/performance.md)")
	}
	rate := 1000
	if v := os.Getenv("KOP_DISASTER_RATE"); v != "" {
		rate, _ = strconv.Atoi(v)
	}
	prefix := labtest.Name(fmt.Sprintf("ds%d", n)) + "-"
	const commit = 40 // every key's offset (aligned topics: the same number on wus)
	var topics []string
	for i := range disasterKeys {
		tp := labtest.NewTopic(t, theLab, fmt.Sprintf("%st%d", prefix, i))
		produceKeys(t, "scus", tp, "m", commit+10)
		topics = append(topics, tp)
	}
	for _, tp := range topics {
		labtest.WaitEndOffset(t, theLab.Cluster("wus"), tp, commit+10)
	}
	group := func(i int) string { return fmt.Sprintf("%sg%06d", prefix, i) }
	gen := &committer{cl: labtest.Kafka(t, theLab.Cluster("scus")), n: n, group: group,
		topic: func(int) string { return topics[0] }, keys: func(int) []string { return topics }, log: map[int]*commitLog{}}

	cfg := labtest.ConfigCopy(t, theLab, fmt.Sprintf("disaster-scale-%d", n))
	listen := labtest.FreeListen(t)
	keeper := startProcess(t, labtest.Binary(t), "keep", cfg, "--timeout", "10s", "watch", "--keep-translations", "--cluster", "wus",
		"--interval", "5s", "--listen", listen, "--group", prefix+"*")
	defer stopProcess(t, keeper)
	labtest.WaitReady(t, "http://"+listen+"/readyz", func() error { return nil })
	start := time.Now()
	sent := gen.run(context.Background(), t, rate, n, commit)
	loadEnd := time.Now()
	// Caught up: every key's commit kept (the counter counts keys), or nothing new kept for
	// two minutes (a keeper that stalls is measured as it is: the rows say how they land).
	want, kept, lastWrite := float64(n*disasterKeys), 0.0, time.Now()
	for kept < want && time.Since(lastWrite) < 2*time.Minute {
		time.Sleep(time.Second)
		if k := metric(t, listen, "kop_offsets_watch_kept_translations_total", `cluster="wus"`, `result="written"`); k != kept {
			kept, lastWrite = k, time.Now()
		}
	}
	caughtUp := max(lastWrite.Sub(loadEnd), 0)
	t.Logf("%d groups x %d keys: %d commits acknowledged in %s, %.0f kept translations written, caught up %s after the load",
		n, disasterKeys, sent, loadEnd.Sub(start).Round(time.Millisecond), kept, caughtUp.Round(100*time.Millisecond))

	how := "SIGSTOP"
	if os.Getenv("KOP_DISASTER_KILL") != "" {
		// A crash, not a cut link: every broker JVM of scus killed (the standalone, or each
		// broker of a several-brokers cluster; started again when the test ends).
		how = "SIGKILL"
		for _, i := range scusBrokers() {
			labtest.KillBroker(t, theLab, "scus", i)
		}
	} else {
		resume := labtest.PauseCluster(t, theLab, "scus")
		defer resume()
	}
	stopProcess(t, keeper)
	d, code, took := scaleFailover(t, labtest.Binary(t), cfg, prefix+"*")
	proven, rows := 0, 0
	if d.Result != nil {
		proven = d.Result.Proven
	}
	for _, c := range d.Plan.Landings {
		rows += c
	}
	sampled, at := disasterSample(t, d, cfg, n, group, topics)
	row := fmt.Sprintf("| %d x %d | %s | %.0f in %s | %d | %s | %s | %d of %d | %d of %d |", n, disasterKeys, how, kept, caughtUp.Round(100*time.Millisecond),
		code, took.Round(100*time.Millisecond), landings(d.Plan.Landings), proven, rows, at, sampled)
	t.Logf("issue 47, a disaster at fleet scale:\n%s\n%s", disasterHeader, row)
	if d.Plan.Landings["kept"] != n*disasterKeys || proven != rows || code != 0 {
		t.Errorf("failover --source-gone: exit %d, landings %v, %d of %d rows proven served; want every row kept and proven (%s)",
			code, d.Plan.Landings, proven, rows, func() string {
				if d.Result == nil {
					return "no result"
				}
				return d.Result.Error
			}())
	}
	if at != sampled {
		t.Errorf("%d of %d sampled consumers on wus start where the plan says", at, sampled)
	}
}

const disasterHeader = "| groups x keys | scus stopped by | kept before the stop, the last this long after the load | failover exit | command to every row served on wus | landings | rows proven served | sampled consumers start where the plan says |"

// scaleFailover runs `failover --source-gone` of the groups matching glob from scus to wus
// (bin, the lab's config cfg) and returns its document, exit code and duration. Its stderr is
// logged with each line's time since the start: where the time goes (the plan before the
// first unload, then each bundle's reload and verification).
func scaleFailover(t *testing.T, bin, cfg, glob string) (disasterDoc, int, time.Duration) {
	t.Helper()
	args := []string{"--config", cfg, "--timeout", "10s", "failover", "-o", "json", "--yes", "--source-gone", "--source", "scus", "--target", "wus", "--group", glob}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var stamped strings.Builder
	sc := bufio.NewScanner(errPipe)
	for sc.Scan() {
		fmt.Fprintf(&stamped, "+%5.1fs %s\n", time.Since(start).Seconds(), sc.Text())
	}
	code := 0
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("failover: %v", err)
		}
		code = ee.ExitCode()
	}
	took := time.Since(start)
	t.Logf("$ kop-offsets %s -> exit %d in %s, %d bytes of JSON\n%s", strings.Join(args, " "), code, took.Round(time.Millisecond), out.Len(), labtest.Tail(stamped.String(), 40))
	var d disasterDoc
	if err := json.Unmarshal(out.Bytes(), &d); err != nil {
		t.Fatalf("failover: exit %d, not a document: %v", code, err)
	}
	return d, code, took
}

// disasterSample checks, for up to 10 groups spread over the fleet, that a Kafka consumer of
// the group on wus starts at the record the plan's row names (aligned: offset and key m-N).
// A group the document does not list (landed kept and proven: counted, not listed) is
// planned again with --show-all (a dry run: where the tool says it stands now).
func disasterSample(t *testing.T, d disasterDoc, cfg string, n int, group func(int) string, topics []string) (sampled, at int) {
	t.Helper()
	want := map[string]int64{} // every key of a group commits the same offset
	for _, r := range d.Plan.Rows {
		if r.Translated != nil {
			want[r.Group] = *r.Translated
		}
	}
	var sample, missing []string
	for i := 0; i < n; i += max(n/10, 1) {
		sample = append(sample, group(i))
		if _, ok := want[group(i)]; !ok {
			missing = append(missing, group(i))
		}
	}
	if len(missing) > 0 {
		args := []string{"--config", cfg, "--timeout", "10s", "failover", "-o", "json", "--dry-run", "--show-all", "--source-gone", "--from", "scus", "--to", "wus"}
		for _, g := range missing {
			args = append(args, "--group", g)
		}
		out, _ := exec.Command(labtest.Binary(t), args...).Output() // exit 0 or 1: the document says
		var dry disasterDoc
		if err := json.Unmarshal(out, &dry); err != nil {
			t.Fatalf("failover --dry-run of the sample: not a document: %v", err)
		}
		for _, r := range dry.Plan.Rows {
			if r.Translated != nil && r.Landing == "kept" {
				want[r.Group] = *r.Translated
			}
		}
	}
	for i, g := range sample {
		o, ok := want[g]
		if !ok {
			continue
		}
		sampled++
		rec := labtest.FirstRecord(t, theLab, "wus", g, topics[(i*max(n/10, 1))%len(topics)])
		if rec.Offset == o && string(rec.Key) == fmt.Sprintf("m-%d", o) {
			at++
		} else {
			t.Logf("%s: a consumer on wus starts at %d (%s), the plan says %d", g, rec.Offset, rec.Key, o)
		}
	}
	return sampled, at
}

// landings is "N kept, ..." in the plan's order of kinds, the kinds that landed rows only.
func landings(l map[string]int) string {
	var out []string
	for _, k := range []string{"kept", "older_kept", "own_commit", "earliest", "left"} {
		if l[k] > 0 {
			out = append(out, fmt.Sprintf("%d %s", l[k], k))
		}
	}
	return strings.Join(out, ", ")
}

// scusBrokers are the indexes of scus's brokers (0 alone on a standalone lab).
func scusBrokers() []int {
	var out []int
	for _, cs := range theLab.State.Clusters {
		if cs.Name != "scus" {
			continue
		}
		for _, ps := range cs.Processes {
			if ps.Role == lab.RoleBroker || ps.Role == lab.RoleStandalone {
				out = append(out, ps.Index)
			}
		}
	}
	return out
}
