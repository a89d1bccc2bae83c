package kop_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kop-offsets/kop-offsets/internal/kop"
)

// committerAdmin is kadm over a kfake cluster that keeps commits as Kafka does (KoP's
// OffsetCommit is Kafka's), with the request versions KoP speaks.
func committerAdmin(t *testing.T) *kadm.Client {
	t.Helper()
	_, adm := committerCluster(t)
	return adm
}

func committerCluster(t *testing.T) (*kfake.Cluster, *kadm.Client) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.MaxVersions(kversion.V3_6_0()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return c, kadm.NewClient(cl)
}

func TestCommitterCommitFetchDelete(t *testing.T) {
	ctx := context.Background()
	adm := committerAdmin(t)
	c := kop.Committer{Admin: adm}
	cs := []kop.SyncCommit{
		{Topic: "orders", Partition: 0, Offset: 900, Metadata: "kop-offsets-sync:from=scus,source=1200|app"},
		{Topic: "orders", Partition: 2, Offset: 15},
	}
	if err := c.Commit(ctx, "G", cs); err != nil {
		t.Fatal(err)
	}
	got, err := adm.FetchOffsets(ctx, "G")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range cs {
		o, ok := got.Lookup(want.Topic, want.Partition)
		if !ok || o.Err != nil || o.At != want.Offset || o.Metadata != want.Metadata {
			t.Fatalf("%s[%d]: fetched %+v (%v), want %d %q", want.Topic, want.Partition, o, ok, want.Offset, want.Metadata)
		}
	}
	if err := c.Delete(ctx, "G", map[string][]int32{"orders": {0}}); err != nil {
		t.Fatal(err)
	}
	got, err = adm.FetchOffsets(ctx, "G")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := got.Lookup("orders", 0); ok && o.At >= 0 {
		t.Fatalf("orders[0] still committed after the delete: %+v", o)
	}
	if o, ok := got.Lookup("orders", 2); !ok || o.At != 15 {
		t.Fatalf("orders[2] after deleting orders[0]: %+v (%v), want 15", o, ok)
	}
}

// TestCommitterNamesRefusedPartitions: a partition KoP refuses is named with the group and
// the Kafka error; an empty commit or delete asks nothing.
func TestCommitterNamesRefusedPartitions(t *testing.T) {
	ctx := context.Background()
	c := kop.Committer{Admin: committerAdmin(t)}
	err := c.Commit(ctx, "G", []kop.SyncCommit{{Topic: "orders", Partition: 1, Offset: 3}, {Topic: "gone", Partition: 4, Offset: 7}})
	if err == nil || !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("err = %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
	for _, s := range []string{"group G", "gone[4]"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %s", err, s)
		}
	}
	if strings.Contains(err.Error(), "orders[1]") {
		t.Errorf("error %q names the partition committed", err)
	}
	if err := c.Commit(ctx, "G", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, "G", nil); err != nil {
		t.Fatal(err)
	}
}

// TestCommitterDeleteNamesRefusedPartitions: KoP refuses to delete the offsets of a topic
// the group still subscribes to (kfake does not, so the answer is KoP's, injected).
func TestCommitterDeleteNamesRefusedPartitions(t *testing.T) {
	ctx := context.Background()
	fk, adm := committerCluster(t)
	fk.ControlKey(int16(kmsg.OffsetDelete), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req := kreq.(*kmsg.OffsetDeleteRequest)
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetDeleteResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetDeleteResponseTopicPartition()
				sp.Partition = rp.Partition
				if rt.Topic == "payments" {
					sp.ErrorCode = kerr.GroupSubscribedToTopic.Code
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	err := kop.Committer{Admin: adm}.Delete(ctx, "G", map[string][]int32{"orders": {0}, "payments": {4, 1}})
	if !errors.Is(err, kerr.GroupSubscribedToTopic) {
		t.Fatalf("err = %v, want GROUP_SUBSCRIBED_TO_TOPIC", err)
	}
	if got := err.Error(); got != "delete group G payments[1]: "+kerr.GroupSubscribedToTopic.Error()+"\n"+
		"delete group G payments[4]: "+kerr.GroupSubscribedToTopic.Error() {
		t.Fatalf("err = %q, want payments[1] and [4] in order", got)
	}
}
