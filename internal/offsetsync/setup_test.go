package offsetsync

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/explain"
)

// policies is a cluster's replication policies of its offsets topic.
type policies struct {
	namespace, topic []string
	err              error
}

func (p *policies) TopicReplicationClusters(context.Context, string) ([]string, bool, error) {
	if p.err != nil {
		return nil, false, p.err
	}
	if p.topic != nil {
		return p.topic, true, nil
	}
	return p.namespace, false, nil
}

func (p *policies) SetTopicReplicationClusters(_ context.Context, _ string, cs []string) error {
	p.topic = cs
	return nil
}

func (p *policies) RemoveTopicReplicationClusters(context.Context, string) error {
	p.topic = nil
	return nil
}

func sites(ps ...*policies) []Site {
	names := []string{"scus", "wus", "eus"}
	var out []Site
	for i, p := range ps {
		out = append(out, Site{Name: names[i], PulsarName: names[i], OffsetsTopic: "persistent://public/__kafka/__consumer_offsets", Admin: p})
	}
	return out
}

func TestCheckReplicatedNamespace(t *testing.T) {
	ns := []string{"eus", "scus", "wus"}
	// eus is replicated but not synced: its replication stays.
	steps := Check(context.Background(), sites(&policies{namespace: ns}, &policies{namespace: ns}))
	if !reflect.DeepEqual(steps[0].Synced, []string{"wus"}) || !reflect.DeepEqual(steps[0].Want, []string{"eus", "scus"}) {
		t.Fatalf("scus: %+v", steps[0])
	}
	if !reflect.DeepEqual(steps[1].Want, []string{"eus", "wus"}) {
		t.Fatalf("wus: %+v", steps[1])
	}
	err := Refusal(steps)
	if err == nil || !strings.Contains(err.Error(), "cluster scus: persistent://public/__kafka/__consumer_offsets replicates to wus (its namespace's policy)") ||
		explain.FixOf(err) != "kop-offsets sync setup --cluster scus --cluster wus" {
		t.Fatalf("refusal: %v", err)
	}
}

func TestCheckSetUp(t *testing.T) {
	steps := Check(context.Background(), sites(&policies{namespace: []string{"scus", "wus"}, topic: []string{"scus"}}, &policies{topic: []string{"wus"}}))
	if err := Refusal(steps); err != nil || steps[0].Want != nil || !steps[0].TopicLevel {
		t.Fatalf("set up: %+v %v", steps, err)
	}
}

func TestCheckUnreadable(t *testing.T) {
	steps := Check(context.Background(), sites(&policies{topic: []string{"scus"}}, &policies{err: errors.New("connection refused")}))
	if err := Refusal(steps); err == nil || err.Error() != "cluster wus: connection refused" {
		t.Fatalf("unreadable: %v", err)
	}
}

func TestChangesAndUndo(t *testing.T) {
	scus, wus := &policies{namespace: []string{"scus", "wus"}}, &policies{namespace: []string{"scus", "wus"}}
	ss := sites(scus, wus)
	ctx := context.Background()
	cs := Changes(Check(ctx, ss), false)
	if len(cs) != 2 || !reflect.DeepEqual(cs[0].To, []string{"scus"}) || !reflect.DeepEqual(cs[1].To, []string{"wus"}) {
		t.Fatalf("changes: %+v", cs)
	}
	for i, c := range cs {
		if err := c.Apply(ctx, ss[i].Admin); err != nil {
			t.Fatal(err)
		}
	}
	if err := Refusal(Check(ctx, ss)); err != nil {
		t.Fatalf("after setup: %v", err)
	}
	if cs := Changes(Check(ctx, ss), false); len(cs) != 0 {
		t.Fatalf("setup twice: %+v", cs)
	}
	undo := Changes(Check(ctx, ss), true)
	if len(undo) != 2 || !undo[0].Remove {
		t.Fatalf("undo: %+v", undo)
	}
	for i, c := range undo {
		if err := c.Apply(ctx, ss[i].Admin); err != nil {
			t.Fatal(err)
		}
	}
	if Refusal(Check(ctx, ss)) == nil {
		t.Fatal("undo left the offsets topic unreplicated")
	}
}
