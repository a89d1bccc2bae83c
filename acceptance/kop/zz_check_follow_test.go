//go:build kop

package kop

import (
	"context"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// TestCheckSeesAClusterAhead is issue 51 item 4 on real KoP: in a sync deployment on a
// misaligned topic (scus N is wus N-300), the group consumed to 600 on scus (wus 300), then,
// with no sync running, was reset to 0 on scus. check says wus is ahead (a consumer moved
// there would skip 300 messages) and exits 1; once watch --sync runs again, wus follows the
// reset and check says ok.
func TestCheckSeesAClusterAhead(t *testing.T) {
	topic, group, _ := settledGroup(t, "check-ahead")
	shiftedCopies(t, topic, 300, 600)
	syncSetUp(t, "--group", group)
	scus, wus := kafkaAdmin(t, "scus"), kafkaAdmin(t, "wus")
	cfg := labtest.ConfigCopy(t, theLab, "check-ahead")
	p := startSync(t, cfg, labtest.FreeListen(t), "10s", group)
	commitOn(t, scus, "scus", group, topic, 600)
	if _, got, ok := servedWithin(context.Background(), wus, group, topic, 300, 10*time.Second); !ok {
		t.Fatalf("wus serves %d, want 300", got)
	}
	stopProcess(t, p)

	commitOn(t, scus, "scus", group, topic, 0) // the reset, with no sync running
	rep, code := quietly[survey.Report](t, "--timeout", "10s", "check", "-o", "json", "--group", group)
	if len(rep.Rows) != 1 || code != 1 {
		t.Fatalf("check after the reset: exit %d, rows %+v", code, rep.Rows)
	}
	r := rep.Rows[0]
	c := r.Cell("wus")
	if r.Status != verdict.StatusAhead || c.Status != verdict.StatusAhead || c.Follow == nil || c.Follow.Translated != 0 {
		t.Fatalf("check after the reset: row %s, wus %+v (follow %+v), want ahead of the translation 0", r.Status, c, c.Follow)
	}
	t.Logf("check after the reset on scus, no sync running: wus %s (holds %s, the reset translates to %d): %s", c.Status, labtest.Val(c.Persisted), c.Follow.Translated, c.Detail)

	startSync(t, cfg, labtest.FreeListen(t), "10s", group)
	if _, got, ok := servedWithin(context.Background(), wus, group, topic, 0, 10*time.Second); !ok {
		t.Fatalf("wus serves %d once sync runs again, want 0", got)
	}
	rep, code = quietly[survey.Report](t, "--timeout", "10s", "check", "-o", "json", "--group", group)
	if len(rep.Rows) != 1 || code != 0 || rep.Rows[0].Status != verdict.StatusOK {
		t.Fatalf("check once synced: exit %d, rows %+v", code, rep.Rows)
	}
	t.Logf("once watch --sync ran again: wus serves 0, check ok")
}
