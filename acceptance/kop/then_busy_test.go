//go:build kop

package kop

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// TestCheckWhileGroupsCommitEverywhere: groups live on every cluster, each committing
// through its own cluster's KoP every 500 ms (ten times a consumer's default auto-commit
// rate), while check runs 50 times on each cluster. A commit between check's read of the
// offsets topic and KoP's answer made the row cache_ahead and check exit 1; check now reads
// the group's partition again after KoP answered (docs/reload.md "Live groups"). Only a
// group that commits in both windows of one run can still show cache_ahead: at most 5 of
// the 100 runs may, every other run exits 0 with the row ok.
func TestCheckWhileGroupsCommitEverywhere(t *testing.T) {
	const runs, period, allowed = 50, 500 * time.Millisecond, 5
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }() // the committers stop before the test ends
	groups := map[string]string{}          // cluster -> its live group
	for _, name := range []string{"scus", "wus"} {
		c := theLab.Cluster(name)
		topic := labtest.NewTopic(t, theLab, "busy-"+name)
		group := labtest.Name("busy-" + name)
		groups[name] = group
		labtest.Settle(t, theLab, group) // its commits replicate: nothing stale left for later tests
		adm := kadm.NewClient(labtest.Kafka(t, c))
		commit := func(off int64) error {
			cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
			defer ccancel()
			var os kadm.Offsets
			os.Add(kadm.Offset{Topic: topic, Partition: 0, At: off, LeaderEpoch: -1})
			resp, err := adm.CommitOffsets(cctx, group, os)
			if err == nil {
				err = resp.Error()
			}
			return err
		}
		if err := commit(1); err != nil {
			t.Fatalf("%s: first commit of %s: %v", name, group, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(period)
			defer tick.Stop()
			for off := int64(2); ; off++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				if err := commit(off); err != nil && ctx.Err() == nil {
					t.Logf("%s: commit %d of %s: %v", name, off, group, err)
				}
			}
		}()
	}

	ahead, failed := 0, 0
	start := time.Now()
	for i := range runs {
		for _, name := range []string{"scus", "wus"} {
			rep, code := cli.Check(t, "--cluster", name, "--group", groups[name])
			if len(rep.Rows) != 1 {
				t.Fatalf("run %d on %s: %d rows, exit %d", i, name, len(rep.Rows), code)
			}
			switch st := rep.Rows[0].Status; {
			case st == verdict.StatusCacheAhead:
				ahead++
			case st != verdict.StatusOK || code != 0:
				failed++
				t.Errorf("run %d on %s: row %s, exit %d", i, name, st, code)
			}
		}
	}
	t.Logf("%d check runs in %s while both groups committed every %s: %d cache_ahead, %d other failures",
		2*runs, time.Since(start).Round(time.Second), period, ahead, failed)
	if ahead > allowed {
		t.Errorf("%d of %d runs said cache_ahead for a group committing every %s: check does not settle commits made during its run", ahead, 2*runs, period)
	}
}
