package loadgen

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/loader"
)

func small() Spec {
	return Spec{Groups: 7, KeysPerGroup: 3, Topics: 4, TopicPartitions: 2, Commits: 7*3*2 + 5}.WithDefaults()
}

func TestSpecCounts(t *testing.T) {
	s := small()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	var reqs, commits int
	keys := map[string]bool{}
	err := s.Requests(func(r Request) error {
		reqs++
		commits += len(r.Commits)
		for _, c := range r.Commits {
			if c.Group != r.Group {
				t.Fatalf("request of %s holds a commit of %s", r.Group, c.Group)
			}
			keys[fmt.Sprint(c.Group, c.Topic, c.Partition)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if commits != s.Commits || reqs != 7*2+2 || len(keys) != s.LiveKeys() || s.Rounds() != 3 {
		t.Fatalf("requests %d commits %d keys %d (live %d) rounds %d", reqs, commits, len(keys), s.LiveKeys(), s.Rounds())
	}
	bad := []Spec{{}, {Groups: 1, KeysPerGroup: 9, Topics: 2, TopicPartitions: 2, Commits: 1}, {Groups: 1, KeysPerGroup: 1, Topics: 1, TopicPartitions: 1, Commits: 1, FirstGroup: -1}}
	for _, b := range bad {
		if b.Validate() == nil {
			t.Errorf("%+v accepted", b)
		}
	}
}

// TestLoadReplays encodes the load as WritePulsar does and replays it as KoP's loader does:
// every message decodes, and the live state is the last round's offsets.
func TestLoadReplays(t *testing.T) {
	s := small()
	const parts = 8
	rs := make([]*loader.Replayer, parts)
	for p := range rs {
		rs[p] = loader.NewReplayer(int32(p), loader.OrderingKoP)
	}
	seq := 0
	err := s.Requests(func(r Request) error {
		k, v, err := kop.EncodeRequest(r.Commits, time.Now())
		if err != nil {
			return err
		}
		p := loader.PartitionFor(r.Group, parts)
		seq++
		return rs[p].ApplyMessage(loader.Message{Partition: p, MessageID: fmt.Sprintf("1:%d:%d:-1", seq, p), Key: k, Value: v})
	})
	if err != nil {
		t.Fatal(err)
	}
	var all []*loader.PersistedOffsets
	for _, r := range rs {
		if c := r.Counts(); c.Undecodable != 0 || c.Placeholders != 0 {
			t.Fatalf("partition counts %+v", c)
		}
		all = append(all, r.Result())
	}
	po := loader.Merge(all...)
	if po.Len() != s.LiveKeys() {
		t.Fatalf("live keys %d, want %d", po.Len(), s.LiveKeys())
	}
	// Groups 0 and 1 got a third round (5 commits: 3 + 2), the others stopped at round 1.
	for i := range s.Groups {
		for j, k := range s.Keys(i) {
			want := s.Offset(i, j, 1)
			if i == 0 || (i == 1 && j < 2) {
				want = s.Offset(i, j, 2)
			}
			got, ok := po.Lookup(s.GroupName(i), s.FullTopic(k.Topic), k.Partition)
			if !ok || got.Offset != want {
				t.Errorf("group %d key %d: %+v %v, want %d", i, j, got, ok, want)
			}
		}
	}
}

func TestFirstGroupAdds(t *testing.T) {
	a := Spec{Groups: 3, KeysPerGroup: 2, Topics: 3, TopicPartitions: 1, Commits: 6}.WithDefaults()
	b := a
	b.FirstGroup = 3
	if a.GroupName(2) == b.GroupName(0) || b.GroupName(0) != "load-g-0000003" {
		t.Fatalf("%s %s", a.GroupName(2), b.GroupName(0))
	}
	if b.Keys(0)[0] != (Key{Topic: "load-t-0000", Partition: 0}) {
		t.Fatalf("%+v", b.Keys(0))
	}
}

func fakeKafka(t *testing.T, s Spec) []kgo.Opt {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(s.TopicPartitions), s.TopicNames()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.MaxVersions(kversion.V3_8_0())}
}

func TestWriteKafka(t *testing.T) {
	s := small()
	opts := fakeKafka(t, s)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := WriteKafka(ctx, cl, s, KafkaOptions{Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	if st.Commits != s.Commits {
		t.Fatalf("%+v", st)
	}
	adm := kadm.NewClient(cl)
	os, err := adm.FetchOffsets(ctx, s.GroupName(3))
	if err != nil || os.Error() != nil {
		t.Fatal(err, os.Error())
	}
	for j, k := range s.Keys(3) {
		o, ok := os.Lookup(k.Topic, k.Partition)
		if !ok || o.At != s.Offset(3, j, 1) {
			t.Errorf("key %d: %+v %v", j, o, ok)
		}
	}
}

func TestWriteKafkaUnknownTopicFails(t *testing.T) {
	s := small()
	opts := fakeKafka(t, Spec{Topics: 1, TopicPartitions: 1, TopicPrefix: "other-"}.WithDefaults())
	cl, _ := kgo.NewClient(opts...)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := WriteKafka(ctx, cl, s, KafkaOptions{Retry: time.Second})
	if err == nil {
		t.Fatal("commits to missing topics reported no error")
	}
	t.Log(err)
}

func TestMembers(t *testing.T) {
	s := small()
	opts := fakeKafka(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := Members(ctx, opts, s, 3, 0); err != nil {
		t.Fatal(err)
	}
	cl, _ := kgo.NewClient(opts...)
	defer cl.Close()
	os, err := kadm.NewClient(cl).FetchOffsets(ctx, s.GroupPrefix+"member-0002")
	if err != nil {
		t.Fatal(err)
	}
	k := s.Keys(2)[0]
	if o, ok := os.Lookup(k.Topic, k.Partition); !ok || o.At != 1000 {
		t.Fatalf("member commit %+v %v", o, ok)
	}
}
