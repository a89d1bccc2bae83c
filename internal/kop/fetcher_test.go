package kop_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

// fetcher is a Fetcher of k with the product's client options.
func fetcher(t *testing.T, k *fakes.KoP, wait time.Duration) *kop.Fetcher {
	return k.Fetcher(t, wait, kop.ClientOpts(10*time.Second)...)
}

// A deadline bounds one request or one group's retries, never the sweep: with requests
// slow enough that the sweep outlasts CoordinatorWait several times, every group is answered.
func TestFetchOffsetsDeadlinePerRequestNotSweep(t *testing.T) {
	fk := fakes.NewKoP(t)
	var mu sync.Mutex
	var metadata int
	fk.Cluster.ControlKey(int16(kmsg.Metadata), func(kmsg.Request) (kmsg.Response, error, bool) {
		fk.Cluster.KeepControl()
		mu.Lock()
		metadata++
		mu.Unlock()
		return nil, nil, false
	})
	fk.SetDelay(150 * time.Millisecond) // 12 batches one at a time: 1.8 s, past the old whole-sweep deadline (wait + 1 s)
	var groups []string
	for i := range 600 {
		g := fmt.Sprintf("g-%03d", i)
		groups = append(groups, g)
		fk.Set(g, "topic-1", 0, int64(i))
	}
	f := fetcher(t, fk, 200*time.Millisecond)
	f.Parallel, f.BatchSize = 1, 50
	start := time.Now()
	got := f.FetchOffsets(context.Background(), groups)
	elapsed := time.Since(start)
	if elapsed < 2*f.CoordinatorWait {
		t.Fatalf("the sweep took %s: too fast to show anything", elapsed)
	}
	for i, g := range groups {
		gf := got[g]
		if gf.Err != nil || gf.Offsets["topic-1"][0] != int64(i) {
			t.Fatalf("group %s: %+v after a sweep of %s", g, gf, elapsed)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	// 12 batches; the old path asked for metadata after every answer.
	if metadata > 2 {
		t.Errorf("%d Metadata requests for 12 OffsetFetch batches", metadata)
	}
	if fk.Fetches() != 12 {
		t.Errorf("%d OffsetFetch requests, want 12", fk.Fetches())
	}
}

// A deleted topic is a topic-level error: the warning names the topic, not a partition -1.
func TestEndOffsetsDeletedTopic(t *testing.T) {
	fk := fakes.NewKoP(t)
	fk.SetEnd("topic-1", 0, 1)
	_, err := fetcher(t, fk, time.Second).EndOffsets(context.Background(), []string{"topic-1", "gone"})
	if err == nil || !strings.Contains(err.Error(), "topic gone: ") || strings.Contains(err.Error(), "[-1]") {
		t.Fatalf("err %v", err)
	}
}

func TestEndOffsets(t *testing.T) {
	fk := fakes.NewKoP(t)
	fk.SetEnd("topic-1", 0, 11000)
	fk.SetEnd("topic-1", 2, 7)
	got, err := fetcher(t, fk, time.Second).EndOffsets(context.Background(), []string{"topic-1"})
	if err != nil || len(got["topic-1"]) != 3 || got["topic-1"][0] != 11000 || got["topic-1"][1] != 0 || got["topic-1"][2] != 7 {
		t.Fatalf("%v %v", got, err)
	}
}

// Loading is retried within CoordinatorWait; a group KoP never serves is Unavailable, and
// another error is the group's own, not retried.
func TestFetchOffsetsCoordinatorErrors(t *testing.T) {
	fk := fakes.NewKoP(t)
	fk.Set("loading", "topic-1", 1, 5)
	fk.SetLoading("loading", 2)
	fk.Set("unserved", "topic-1", 0, 6)
	fk.SetUnserved("unserved", true)
	got := fetcher(t, fk, time.Second).FetchOffsets(context.Background(), []string{"loading", "unserved", "unknown"})
	if gf := got["loading"]; gf.Err != nil || gf.Unavailable || gf.Offsets["topic-1"][1] != 5 || fk.LoadingLeft("loading") != 0 {
		t.Errorf("loading: %+v, loading answers left %d", gf, fk.LoadingLeft("loading"))
	}
	if gf := got["unserved"]; !gf.Unavailable || gf.Offsets["topic-1"][0] != 0 {
		t.Errorf("unserved: %+v", gf)
	}
	if gf := got["unknown"]; gf.Err != nil || gf.Unavailable || len(gf.Offsets["topic-1"]) != 0 {
		t.Errorf("unknown: %+v", gf)
	}

	fk.SetBroken(true)
	before := fk.Fetches()
	gf := fetcher(t, fk, time.Second).FetchOffsets(context.Background(), []string{"loading"})["loading"]
	if !errors.Is(gf.Err, kerr.GroupAuthorizationFailed) || gf.Unavailable || fk.Fetches() != before+1 {
		t.Errorf("broken: %+v after %d fetches", gf, fk.Fetches()-before)
	}
}

func TestListGroupsDescribed(t *testing.T) {
	fk := fakes.NewKoP(t)
	fk.Set("idle", "topic-1", 0, 1)
	fk.SetMembers("live", 2)
	f := fetcher(t, fk, time.Second)
	ls, err := f.ListGroups(context.Background())
	if err != nil || len(ls) != 2 || ls[0] != (kop.ListedGroup{Group: "idle", State: "Empty", ProtocolType: "consumer"}) {
		t.Fatalf("listed: %+v %v", ls, err)
	}
	f.Describe = true
	ls, err = f.ListGroups(context.Background())
	want := []kop.ListedGroup{{Group: "idle", State: "Empty", ProtocolType: "consumer"}, {Group: "live", State: "Stable", ProtocolType: "consumer", Members: 2}}
	if err != nil || !slices.Equal(ls, want) {
		t.Fatalf("described: %+v %v", ls, err)
	}
}

// KoP 2.10 and 3.0 answer OffsetFetch below v8, one group a request. After the first answer
// shows it, every group is asked on its own, several at once, each within its own
// RequestTimeout: a batch's requests one after the other under one deadline failed the
// batch's last groups on a slow broker.
func TestFetchOffsetsOneGroupARequest(t *testing.T) {
	fk := fakes.NewKoP(t)
	fk.SetDelay(10 * time.Millisecond) // answers one at a time: 300 in a row take 3 s
	var groups []string
	for i := range 300 {
		g := fmt.Sprintf("g-%03d", i)
		groups = append(groups, g)
		fk.Set(g, "topic-1", 0, int64(i))
	}
	f := fk.Fetcher(t, time.Second, append(kop.ClientOpts(10*time.Second), kgo.MaxVersions(kversion.V2_1_0()))...)
	f.BatchSize, f.Parallel, f.RequestTimeout = 300, 1, time.Second
	got := f.FetchOffsets(context.Background(), groups)
	for i, g := range groups {
		if gf := got[g]; gf.Err != nil || gf.Offsets["topic-1"][0] != int64(i) {
			t.Fatalf("group %s: %+v", g, gf)
		}
	}
	// The first request (v5 carries one group of a batch) shows the version; then one each.
	if n := fk.Fetches(); n != len(groups)+1 {
		t.Errorf("%d OffsetFetch requests for %d groups, want %d", n, len(groups), len(groups)+1)
	}
	before := fk.Fetches()
	if gf := f.FetchOffsets(context.Background(), []string{"g-007"})["g-007"]; gf.Err != nil || gf.Offsets["topic-1"][0] != 7 {
		t.Fatalf("g-007 again: %+v", gf)
	}
	if n := fk.Fetches() - before; n != 1 {
		t.Errorf("a second sweep sent %d requests for one group, want 1 (the version is known)", n)
	}
}
