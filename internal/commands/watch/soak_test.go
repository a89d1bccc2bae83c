//go:build e2e && soak

package watch

// Soak of `kop-offsets watch` on the real lab: the built binary follows both clusters while
// commits are written to scus (and replicated to wus) at a steady rate; its resident memory
// and goroutines, read from its own /metrics, must stay flat after a warm-up, and it must
// log no error. Run under the lab lock:
//
//	flock /tmp/kop-lab.flock go test -tags 'e2e soak' -run TestSoak -timeout 60m -v ./internal/commands/watch/
//
// KOP_SOAK_DURATION sets the load's duration (default 30m), KOP_SOAK_RATE commits per
// second (default 50).

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/lab"
)

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	if v := os.Getenv(name); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return d
	}
	return def
}

func median[T any](xs []T, f func(T) float64) float64 {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

func TestSoak(t *testing.T) {
	dur := envDuration(t, "KOP_SOAK_DURATION", 30*time.Minute)
	rate := 50
	if v := os.Getenv("KOP_SOAK_RATE"); v != "" {
		rate, _ = strconv.Atoi(v)
	}
	ctx := context.Background()
	l, bin, wr := labWriter(t)

	prefix := fmt.Sprintf("soak-%d-", time.Now().UnixNano())
	const groups = 200
	addr := freeAddr(t)
	base := "http://" + addr
	w := startWatch(t, bin, "--config", l.ConfigPath, "--timeout", "5s", "watch",
		"--interval", "5s", "--resync", "1m", "--listen", addr, "--group", prefix+"*", "--coordinator-wait", "1s")
	waitReady(t, base)

	// The load, in the background.
	lctx2, stopLoad := context.WithCancel(ctx)
	loadDone := make(chan int64, 1)
	go func() {
		var n int64
		tick := time.NewTicker(time.Second / time.Duration(max(rate, 1)))
		defer tick.Stop()
		for {
			select {
			case <-lctx2.Done():
				loadDone <- n
				return
			case <-tick.C:
			}
			g := fmt.Sprintf("%s%d", prefix, n%groups)
			if _, _, err := wr.Commit(lctx2, kop.OffsetCommit{Group: g, Topic: lab.Topic1, Partition: int32(n % 3), Offset: n}); err == nil {
				n++
			}
		}
	}()

	type sample struct {
		at         time.Duration
		rss, gorou float64
		msgs       float64
	}
	var samples []sample
	t0 := time.Now()
	step := max(dur/20, 15*time.Second)
	for time.Since(t0) < dur {
		time.Sleep(step)
		rss, ok1, _ := scrape(t, base, "process_resident_memory_bytes")
		gr, ok2, _ := scrape(t, base, "go_goroutines")
		msgs, _, _ := scrape(t, base, `kop_offsets_watch_messages_total{cluster="wus"}`)
		if !ok1 || !ok2 {
			t.Fatalf("/metrics lacks the process collectors")
		}
		samples = append(samples, sample{time.Since(t0).Round(time.Second), rss, gr, msgs})
		t.Logf("t=%s rss=%.1fMB goroutines=%.0f wus messages=%.0f", samples[len(samples)-1].at, rss/1e6, gr, msgs)
	}
	stopLoad()
	written := <-loadDone

	// Flat after warm-up (the first fifth of the run): the median RSS of the last quarter
	// against the median of the quarter after the warm-up (a single sample can catch a
	// garbage peak), and the goroutine count's range.
	after := samples[len(samples)/5:]
	q := max(len(after)/4, 1)
	early, late := median(after[:q], func(s sample) float64 { return s.rss }), median(after[len(after)-q:], func(s sample) float64 { return s.rss })
	maxRSS, minG, maxG := 0.0, math.Inf(1), 0.0
	for _, s := range after {
		maxRSS = max(maxRSS, s.rss)
		minG, maxG = min(minG, s.gorou), max(maxG, s.gorou)
	}
	t.Logf("commits written %d; after warm-up: median rss %.1fMB -> %.1fMB (max %.1fMB), goroutines %.0f..%.0f",
		written, early/1e6, late/1e6, maxRSS/1e6, minG, maxG)
	if late > early*1.25+16e6 {
		t.Errorf("RSS grew after warm-up: median %.1fMB -> %.1fMB", early/1e6, late/1e6)
	}
	if maxG-minG > 10 {
		t.Errorf("goroutines vary after warm-up: %.0f..%.0f", minG, maxG)
	}
	if last := samples[len(samples)-1]; last.msgs < float64(written)*0.9 {
		t.Errorf("wus read %.0f messages after the replay, %d were written on scus", last.msgs, written)
	}

	if err := w.terminate(t); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
	var errorsLogged []string
	for _, ln := range strings.Split(w.stderr.String(), "\n") {
		if strings.Contains(ln, `"level":"ERROR"`) {
			errorsLogged = append(errorsLogged, ln)
		}
	}
	if len(errorsLogged) > 0 {
		t.Errorf("%d error lines, first: %s", len(errorsLogged), errorsLogged[0])
	}
}
