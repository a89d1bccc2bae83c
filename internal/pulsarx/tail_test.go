package pulsarx

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/testsupport/wait"
)

func TestTailCatchesUpThenFollows(t *testing.T) {
	late := single(8, 0, "", "late")
	late.from = "scus"
	rd := &fakeReader{
		msgs: []fakeMsg{single(7, 0, "", "a"), single(7, 1, "", "b"), late},
		last: fakeID{7, 1, -1, 0},
	}
	c := &fakeClient{readers: map[string]*fakeReader{testTopic + "-partition-2": rd}}
	r := newTestReader(c, 8, ReaderOptions{Compacted: true})
	ctx, cancel := context.WithCancel(context.Background())
	var got []string
	caughtAt := -1
	done := make(chan error, 1)
	go func() {
		done <- r.Tail(ctx, 2, func(m TailMessage) error {
			got = append(got, string(m.Value)+"@"+m.ReplicatedFrom)
			if len(got) == 3 {
				cancel()
			}
			return nil
		}, func() { caughtAt = len(got) })
	}()
	if err := wait.Await(t, done, 5*time.Second, "Tail did not return after cancel"); err != nil {
		t.Fatalf("Tail: %v", err)
	}
	if strings.Join(got, " ") != "a@ b@ late@scus" {
		t.Errorf("messages: %v", got)
	}
	if caughtAt != 2 {
		t.Errorf("caught up after %d messages, want 2", caughtAt)
	}
	if !c.opts[0].ReadCompacted || !rd.closed {
		t.Errorf("compacted=%v closed=%v", c.opts[0].ReadCompacted, rd.closed)
	}
}

func TestTailEmptyPartitionIsCaughtUpAtOnce(t *testing.T) {
	rd := &fakeReader{last: fakeID{-1, -1, -1, 0}}
	c := &fakeClient{readers: map[string]*fakeReader{testTopic + "-partition-0": rd}}
	ctx, cancel := context.WithCancel(context.Background())
	err := newTestReader(c, 8, ReaderOptions{}).Tail(ctx, 0, func(TailMessage) error { return nil }, cancel)
	if err != nil || ctx.Err() == nil {
		t.Fatalf("err %v, caught up: %v", err, ctx.Err() != nil)
	}
}

func TestTailCreateErrorNamesPartition(t *testing.T) {
	c := &fakeClient{readers: map[string]*fakeReader{}}
	err := newTestReader(c, 8, ReaderOptions{}).Tail(context.Background(), 5, func(TailMessage) error { return nil }, func() {})
	if err == nil || !strings.Contains(err.Error(), "cluster scus") || !strings.Contains(err.Error(), "partition 5") {
		t.Fatalf("err: %v", err)
	}
}

// ClusterNames: a commit replicated from the cluster Pulsar calls scus, which the config
// calls east, is reported as from east (issue 21).
func TestTailOriginUnderConfigName(t *testing.T) {
	late := single(8, 0, "", "late")
	late.from = "scus"
	rd := &fakeReader{msgs: []fakeMsg{single(7, 0, "", "a"), late}, last: fakeID{7, 0, -1, 0}}
	c := &fakeClient{readers: map[string]*fakeReader{testTopic + "-partition-2": rd}}
	r := newTestReader(c, 8, ReaderOptions{Compacted: true, ClusterNames: map[string]string{"scus": "east"}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []string
	err := r.Tail(ctx, 2, func(m TailMessage) error {
		got = append(got, string(m.Value)+"@"+m.ReplicatedFrom+"/"+m.Message.ReplicatedFrom)
		if len(got) == 2 {
			cancel()
		}
		return nil
	}, func() {})
	if err != nil || strings.Join(got, " ") != "a@/ late@east/east" {
		t.Errorf("err %v, messages %v", err, got)
	}
}
