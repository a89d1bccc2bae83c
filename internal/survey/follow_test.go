package survey

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/offsetsync"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// syncCopies are the copies of sync.md's reset story: scus holds 300 messages of its own
// before 700 it shares with wus (scus N+300 is wus N).
func syncCopies(scus, wus *fakes.MemReader) []Cluster {
	scusIDs := append(fakes.Sequence(5000, 5300), fakes.Sequence(0, 700)...)
	return []Cluster{
		{Name: "scus", KafkaNamespace: "public/default", Reader: scus, Copies: fakes.MemCopies{Topics: map[string][]uint64{"topic-1": scusIDs}}},
		{Name: "wus", KafkaNamespace: "public/default", Reader: wus, Copies: fakes.MemCopies{Topics: map[string][]uint64{"topic-1": fakes.Sequence(0, 700)}}},
	}
}

// at is a commit of group g on topic-1[0] at testNow minus ago, with metadata md.
func at(off int64, ago time.Duration, md string) kop.OffsetCommit {
	return kop.OffsetCommit{Group: "g", Topic: topic1, Offset: off, Metadata: md, CommitTime: testNow.Add(-ago)}
}

func synced(from string, source, floor int64) string {
	return offsetsync.Mark{From: from, Source: source, Floor: floor, HasFloor: true}.Metadata("")
}

// TestFollowResetNotSynced is the failure: scus reset to 0, wus kept the translation
// of 600 (300) and check said ok on both. wus is ahead: a consumer moved there skips 300.
func TestFollowResetNotSynced(t *testing.T) {
	scus := fakes.NewMemReader(8).Commit(at(600, 20*time.Minute, ""), at(0, 10*time.Minute, ""))
	wus := fakes.NewMemReader(8).Commit(at(300, 20*time.Minute-20*time.Millisecond, synced("scus", 600, 0)))
	rep, err := Run(context.Background(), syncCopies(scus, wus), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Rows[0]
	w := r.Cell("wus")
	if r.Status != verdict.StatusAhead || w.Status != verdict.StatusAhead || r.Cell("scus").Status != verdict.StatusOK || rep.ExitCode != outcome.Found {
		t.Fatalf("row %s scus %+v wus %+v exit %d", r.Status, r.Cell("scus"), w, rep.ExitCode)
	}
	if f := w.Follow; f == nil || f.Cluster != "scus" || f.Offset != 0 || f.Translated != 0 {
		t.Fatalf("follow %+v", w.Follow)
	}
	for _, want := range []string{"wus holds 300, past 0", "skip 300 messages", "watch --sync"} {
		if !strings.Contains(w.Detail, want) {
			t.Errorf("detail %q lacks %q", w.Detail, want)
		}
	}
	// Once sync followed the reset: ok on both.
	wus.Commit(at(0, 10*time.Minute-20*time.Millisecond, synced("scus", 0, 0)))
	rep, _ = Run(context.Background(), syncCopies(scus, wus), Options{Now: testNow})
	if r := rep.Rows[0]; r.Status != verdict.StatusOK || rep.ExitCode != outcome.OK {
		t.Fatalf("followed: %s scus %+v wus %+v", r.Status, r.Cell("scus"), r.Cell("wus"))
	}
}

// TestFollowSteadyAndLag: the misaligned topic followed by sync is ok; a newer commit not
// followed is ok within the grace and sync_lag past it.
func TestFollowSteadyAndLag(t *testing.T) {
	scus := fakes.NewMemReader(8).Commit(at(600, 10*time.Minute, ""))
	wus := fakes.NewMemReader(8).Commit(at(300, 10*time.Minute-18*time.Millisecond, synced("scus", 600, 0)))
	rep, _ := Run(context.Background(), syncCopies(scus, wus), Options{Now: testNow})
	if r := rep.Rows[0]; r.Status != verdict.StatusOK || r.Cell("wus").Follow == nil || r.Cell("wus").Follow.Translated != 300 {
		t.Fatalf("steady: %s wus %+v", r.Status, r.Cell("wus"))
	}
	scus.Commit(at(650, 30*time.Second, ""))
	rep, _ = Run(context.Background(), syncCopies(scus, wus), Options{Now: testNow})
	if r := rep.Rows[0]; r.Status != verdict.StatusOK {
		t.Fatalf("within the grace: %s wus %+v", r.Status, r.Cell("wus"))
	}
	rep, _ = Run(context.Background(), syncCopies(scus, wus), Options{Now: testNow, SyncGrace: 10 * time.Second})
	if r := rep.Rows[0]; r.Status != verdict.StatusSyncLag || !strings.Contains(r.Cell("wus").Detail, "behind 350") {
		t.Fatalf("past the grace: %s wus %+v", r.Status, r.Cell("wus"))
	}
}

// TestFollowFailback: homed on wus after a failback, scus's own 300 messages below the
// group's old position there are not replayed when wus is reset (sync.md): scus at 300 for
// wus 0 is ok, not ahead; scus left at the translation of wus 400 (700) is ahead.
func TestFollowFailback(t *testing.T) {
	wus := fakes.NewMemReader(8).Commit(at(400, 10*time.Minute, ""), at(0, 5*time.Minute, ""))
	for _, tc := range []struct {
		synced kop.OffsetCommit
		want   verdict.Status
	}{
		{at(300, 5*time.Minute-20*time.Millisecond, synced("wus", 0, 900)), verdict.StatusOK},
		{at(700, 10*time.Minute-20*time.Millisecond, synced("wus", 400, 900)), verdict.StatusAhead},
	} {
		scus := fakes.NewMemReader(8).Commit(at(900, time.Hour, ""), tc.synced)
		rep, _ := Run(context.Background(), syncCopies(scus, wus), Options{Now: testNow})
		if r := rep.Rows[0]; r.Status != tc.want || r.Cell("scus").Follow == nil || r.Cell("scus").Follow.Translated != 300 {
			t.Errorf("scus %d: %s scus %+v", tc.synced.Offset, r.Status, r.Cell("scus"))
		}
	}
}

// TestFollowKept: a kept translation in a kept deployment is followed with the keeper's
// floor; with no tool's write on the row the rules are replication's.
func TestFollowKept(t *testing.T) {
	scus := fakes.NewMemReader(8).Commit(at(600, 10*time.Minute, ""))
	wus := fakes.NewMemReader(8).Replicated("scus", at(600, 10*time.Minute, "")).
		Kept(loader.KeptMark{From: "scus", Sources: []int64{600}, At: testNow.Add(-9 * time.Minute)}, at(300, 10*time.Minute, ""))
	rep, _ := Run(context.Background(), syncCopies(scus, wus), Options{Now: testNow})
	if r := rep.Rows[0]; r.Status != verdict.StatusOK || r.Cell("wus").Follow == nil {
		t.Fatalf("kept: %s wus %+v", r.Status, r.Cell("wus"))
	}
	wrong := fakes.NewMemReader(8).Replicated("scus", at(600, 10*time.Minute, "")).
		Kept(loader.KeptMark{From: "scus", Sources: []int64{600}, At: testNow.Add(-9 * time.Minute)}, at(450, 10*time.Minute, ""))
	rep, _ = Run(context.Background(), syncCopies(scus, wrong), Options{Now: testNow})
	if r := rep.Rows[0]; r.Status != verdict.StatusAhead {
		t.Fatalf("kept too far: %s wus %+v", r.Status, r.Cell("wus"))
	}
	// No tool's write: replication's rules, no follow.
	plain := fakes.NewMemReader(8).Commit(at(300, 20*time.Minute, ""))
	rep, _ = Run(context.Background(), syncCopies(scus, plain), Options{Now: testNow})
	if r := rep.Rows[0]; r.Cell("wus").Follow != nil || r.Cell("wus").Status == verdict.StatusAhead {
		t.Fatalf("no tool's write: %s wus %+v", r.Status, r.Cell("wus"))
	}
	// The group's own 900 on scus (wus 600), then a reset to 0 on wus: the keeper on scus
	// follows it back (sync's rule) to scus 300, scus's own 300 messages below the group's
	// position there not replayed; a kept translation held at the group's 900 is ahead.
	reset := fakes.NewMemReader(8).Commit(at(0, 10*time.Minute, ""))
	for _, tc := range []struct {
		kept int64
		want verdict.Status
	}{{300, verdict.StatusOK}, {900, verdict.StatusAhead}} {
		scus := fakes.NewMemReader(8).Commit(at(900, time.Hour, "")).Replicated("wus", at(0, 10*time.Minute, "")).
			Kept(loader.KeptMark{From: "wus", Sources: []int64{0}, At: testNow.Add(-9 * time.Minute)}, at(tc.kept, 10*time.Minute, ""))
		rep, _ = Run(context.Background(), syncCopies(scus, reset), Options{Now: testNow})
		if r := rep.Rows[0]; r.Status != tc.want || r.Cell("scus").Follow == nil || r.Cell("scus").Follow.Translated != 300 {
			t.Errorf("kept %d after the reset: %s scus %+v", tc.kept, r.Status, r.Cell("scus"))
		}
	}
}
