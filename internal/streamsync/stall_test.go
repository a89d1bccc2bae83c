package streamsync

import (
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

// TestEngineOneStalledCopyStallsNoOtherGroup: wus's copy of topic-2 hangs. A group committing
// on topic-2 waits for it, not synced and not an error; a group committing on topic-1 after
// it is synced at once all the same (the read of topic-2 goes on in the background), and so
// are its later commits. Once the copy answers, the waiting group is synced. Before, the
// step waited for every read it started: one copy that hung stopped every group's sync.
func TestEngineOneStalledCopyStallsNoOtherGroup(t *testing.T) {
	env := newEngineEnv(t, Options{Window: 5 * time.Millisecond, ReadWait: 50 * time.Millisecond, Retry: 20 * time.Millisecond}, nil, nil)
	topic2 := "persistent://public/default/topic-2"
	both := fakes.Sequence(0, 20_000)
	env.e.syncer.Pool.Sources["scus"] = fakes.MemCopies{Topics: map[string][]uint64{
		"topic-1": append(fakes.Sequence(1<<40, 1<<40+extra), both...), "topic-2": both}}
	release := make(chan struct{})
	env.e.syncer.Pool.Sources["wus"] = fakes.Stalled{RangeSource: fakes.MemCopies{Topics: map[string][]uint64{
		"topic-1": both, "topic-2": both}}, Topic: "topic-2", Release: release}
	env.scus.setMembers("slow", 1)
	env.scus.setMembers("orders", 1)
	env.scus.start()
	env.wus.start()
	env.up()
	env.run()

	slow := kop.OffsetCommit{Group: "slow", Topic: topic2, Partition: 0, Offset: 900, CommitTime: commitBase}
	env.scus.live(slow)
	waitFor(t, "slow's sync waits for the read", func() bool {
		for _, r := range env.obs.resultsOf("slow") {
			if len(r.Reading) > 0 {
				return true
			}
		}
		return false
	})
	start := time.Now()
	env.scus.live(commitOf("orders", 0, 6000))
	waitFor(t, "orders synced while topic-2 is read", env.wus.hasCommit("orders", 0, 6000-extra))
	env.scus.live(commitOf("orders", 0, 6100))
	waitFor(t, "orders' next commit synced", env.wus.hasCommit("orders", 0, 6100-extra))
	took := time.Since(start)
	if got := env.wus.commitsOf("slow"); len(got) != 0 {
		t.Fatalf("slow committed on wus %+v before its copy was read", got)
	}
	for _, r := range env.obs.resultsOf("slow") {
		if len(r.Errors) > 0 {
			t.Fatalf("slow's wait reported as errors: %v", r.Errors)
		}
	}

	close(release)
	waitFor(t, "slow synced once the copy answers", func() bool {
		got := env.wus.commitsOf("slow")
		return len(got) == 1 && got[0].Topic == "topic-2" && got[0].Offset == 900
	})
	t.Logf("orders' two commits synced in %s while topic-2's read hung", took)
}
