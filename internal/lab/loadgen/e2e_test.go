//go:build e2e

package loadgen

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest/labrun"
)

func TestMain(m *testing.M) { labrun.Main(m) }

// TestWritePulsarReplays loads a small, uniquely named load into scus's offsets topic and reads
// it back with the product's reader and KoP's replay: every record decodes and every live key
// holds the offset of its last round. The records are valid KoP commits of groups no other test
// uses, so they leave nothing KoP cannot load in the shared topic.
func TestWritePulsarReplays(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	l, err := labrun.Ensure(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := l.Cluster("scus")
	var b [4]byte
	_, _ = rand.Read(b[:])
	s := Spec{Groups: 300, KeysPerGroup: 3, Topics: 10, TopicPartitions: 2, Commits: 300 * 3 * 2,
		GroupPrefix: "e2e-load-" + hex.EncodeToString(b[:]) + "-"}.WithDefaults()
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: c.ServiceURL, Logger: plog.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	st, err := WritePulsar(ctx, client, lab.OffsetsTopic, lab.OffsetsTopicPartitions, s, PulsarOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Requests != 600 || st.Commits != s.Commits {
		t.Fatalf("%+v", st)
	}
	rd := pulsarx.NewReader(c.Name, client, labtest.PulsarxAdmin(t, c), "public", "__kafka", pulsarx.LoaderView)
	parts := map[int32]bool{}
	for i := range s.Groups {
		parts[loader.PartitionFor(s.GroupName(i), lab.OffsetsTopicPartitions)] = true
	}
	var all []*loader.PersistedOffsets
	for p := range parts {
		po, err := loader.ReplayPartition(ctx, rd, p, loader.OrderingKoP)
		if err != nil {
			t.Fatalf("partition %d: %v", p, err)
		}
		all = append(all, po)
	}
	po := loader.Merge(all...)
	for i := range s.Groups {
		for j, k := range s.Keys(i) {
			got, ok := po.Lookup(s.GroupName(i), s.FullTopic(k.Topic), k.Partition)
			if !ok || got.Offset != s.Offset(i, j, 1) {
				t.Fatalf("group %s key %+v: %+v %v, want %d", s.GroupName(i), k, got, ok, s.Offset(i, j, 1))
			}
		}
	}
	t.Logf("%s; read back from %d partitions", st, len(parts))
}
