package fakes

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

func TestKoPAnswersFromItsCache(t *testing.T) {
	ctx := context.Background()
	k := NewKoP(t)
	k.Set("g", "topic-1", 0, 10900)
	k.Set("g", "topic-1", 2, 7)
	k.SetMembers("live", 2)
	k.SetEnd("topic-1", 0, 11000)
	adm := k.Admin(t)

	fo, err := adm.FetchOffsets(ctx, "g")
	if err != nil || fo.Error() != nil {
		t.Fatalf("fetch: %v %v", err, fo.Error())
	}
	if o, ok := fo.Lookup("topic-1", 0); !ok || o.At != 10900 {
		t.Errorf("topic-1/0: %+v %v", o, ok)
	}
	if o, ok := fo.Lookup("topic-1", 2); !ok || o.At != 7 {
		t.Errorf("topic-1/2: %+v %v", o, ok)
	}
	dg, err := adm.DescribeGroups(ctx, "g", "live", "never")
	if err != nil {
		t.Fatal(err)
	}
	if dg["g"].State != "Empty" || dg["live"].State != "Stable" || len(dg["live"].Members) != 2 || dg["never"].State != "Dead" {
		t.Errorf("describe: %+v", dg)
	}
	lg, err := adm.ListGroups(ctx)
	if err != nil || !slices.Equal(lg.Groups(), []string{"g", "live"}) {
		t.Errorf("list: %v %v", lg.Groups(), err)
	}
	ends, err := adm.ListEndOffsets(ctx, "topic-1")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := ends.Lookup("topic-1", 0); !ok || o.Offset != 11000 {
		t.Errorf("end: %+v %v", o, ok)
	}
	if got := k.TakeAsked(); !slices.Equal(got, []string{"g"}) || k.Fetches() != 1 {
		t.Errorf("asked %v, fetches %d", got, k.Fetches())
	}
}

func TestKoPCoordinatorErrors(t *testing.T) {
	ctx := context.Background()
	k := NewKoP(t)
	k.Set("g", "topic-1", 0, 1)
	// Short retries hand the coordinator errors back instead of kgo retrying them.
	adm := k.Admin(t, kgo.RetryTimeout(100*time.Millisecond))
	fetchErr := func() error {
		fo, err := adm.FetchOffsets(ctx, "g")
		if err != nil {
			return err
		}
		return fo.Error()
	}
	k.SetLoading("g", -1)
	if err := fetchErr(); !errors.Is(err, kerr.CoordinatorLoadInProgress) {
		t.Errorf("loading: %v", err)
	}
	k.SetLoading("g", 0)
	k.SetUnserved("g", true)
	if err := fetchErr(); !errors.Is(err, kerr.NotCoordinator) {
		t.Errorf("unserved: %v", err)
	}
	k.SetUnserved("g", false)
	k.SetBroken(true)
	if err := fetchErr(); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Errorf("broken: %v", err)
	}
	k.SetBroken(false)
	k.Drop("g")
	if fo, err := adm.FetchOffsets(ctx, "g"); err != nil || len(fo) != 0 {
		t.Errorf("dropped: %+v %v", fo, err)
	}
}

func TestAdminBundles(t *testing.T) {
	ctx := context.Background()
	f := NewAdmin("scus")
	unloaded := ""
	f.OnUnload = func(r string) { unloaded = r }
	n, err := f.OffsetsTopicPartitions(ctx, "public", "__kafka")
	if err != nil || n != 8 || len(f.BundleList) != 4 {
		t.Fatalf("%d %v %v", n, err, f.BundleList)
	}
	r := f.BundleList[1].Range
	if err := f.UnloadBundle(ctx, "public/__kafka", r); err != nil || f.Owned(r) || unloaded != r || !f.Owned(f.BundleList[0].Range) {
		t.Fatalf("unload: %v owned %v", err, f.Owned(r))
	}
	b, _ := pulsarx.FindBundle(f.BundleList, "persistent://public/__kafka/__consumer_offsets-partition-0")
	if _, err := f.LookupOwner(ctx, "persistent://public/__kafka/__consumer_offsets-partition-0"); err != nil || !f.Owned(b.Range) {
		t.Fatalf("lookup: %v", err)
	}
	if w := f.Writes(); len(w) != 2 || len(f.Calls()) != 3 {
		t.Errorf("writes %v calls %v", w, f.Calls())
	}
	f.OffsetsPartitions = 0
	if _, err := f.OffsetsTopicPartitions(ctx, "public", "__kafka"); !errors.Is(err, pulsarx.ErrNotFound) {
		t.Errorf("missing offsets topic: %v", err)
	}
	f.Down = true
	if _, err := f.Bundles(ctx, "public/__kafka"); !errors.Is(err, pulsarx.ErrUnreachable) {
		t.Errorf("down: %v", err)
	}
}

// Split halves a bundle as split-bundle does; the old range is then no bundle of the
// namespace and an unload of it fails as Pulsar's does (412).
func TestAdminSplit(t *testing.T) {
	ctx := context.Background()
	f := NewAdmin("scus")
	r := f.BundleList[2].Range
	lo, hi, err := f.Split(r)
	if err != nil || lo != "0x80000000_0xa0000000" || hi != "0xa0000000_0xc0000000" || len(f.BundleList) != 5 {
		t.Fatalf("split %s: %s %s %v, bundles %v", r, lo, hi, err, f.BundleList)
	}
	var ae *pulsarx.AdminError
	if err := f.UnloadBundle(ctx, "public/__kafka", r); !errors.As(err, &ae) || ae.Status != http.StatusPreconditionFailed {
		t.Errorf("unload of the split range: %v", err)
	}
	if err := f.UnloadBundle(ctx, "public/__kafka", lo); err != nil || f.Owned(lo) || !f.Owned(hi) {
		t.Errorf("unload of a part: %v", err)
	}
	if _, _, err := f.Split(r); !errors.Is(err, pulsarx.ErrNotFound) {
		t.Errorf("split of a range that is no bundle: %v", err)
	}
}
