package streamsync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/offsetsync"
)

// ErrStandby is SweepAll's error when a synced cluster's writer lease could not be taken:
// most often another process holds it (a watch --sync runs, and it syncs).
var ErrStandby = errors.New("the writer lease of a synced cluster could not be taken")

// ErrNotReady is SweepAll's error before every cluster up has replayed its offsets topic.
var ErrNotReady = errors.New("not every cluster that answers has replayed its offsets topic")

// SweepAll syncs every group once, now (sync setup's seed): it needs the engine ready and
// every lease; Run must not be running.
func (e *Engine) SweepAll(ctx context.Context) (Sweep, error) {
	if !e.ready() {
		return Sweep{}, ErrNotReady
	}
	e.leases.next = time.Time{}
	if !e.leases.hold(ctx) {
		return Sweep{}, fmt.Errorf("%w: %w", ErrStandby, e.leases.err)
	}
	e.all()
	var sw Sweep
	for ctx.Err() == nil {
		groups := e.q.take(time.Now(), chunk)
		if len(groups) == 0 {
			e.flying.Wait() // their groups may be due again: taken by the next round
			if due, _ := e.q.size(); due == 0 {
				break
			}
			continue
		}
		e.step(ctx, groups, &sw)
	}
	e.flying.Wait()
	if err := ctx.Err(); err != nil {
		return Sweep{}, err
	}
	now := time.Now()
	for _, c := range e.clusters {
		if !e.health.answers(c.Name, now) {
			sw.Down = append(sw.Down, c.Name)
		}
	}
	slices.Sort(sw.Again)
	slices.Sort(sw.SplitBrain)
	return sw, nil
}

// Sweep is what one sync of every group did (SweepAll).
type Sweep struct {
	Groups  int `json:"groups"`  // groups looked at
	Synced  int `json:"synced"`  // groups with an offset committed on a target
	Offsets int `json:"offsets"` // offsets committed
	Deleted int `json:"deleted"` // offsets deleted
	// Again are the groups watch --sync takes up again: a failure, data not all replicated
	// yet (behind), or members unknown on a cluster that answers.
	Again      []string `json:"again,omitempty"`
	SplitBrain []string `json:"splitBrain,omitempty"`
	// Down are the clusters that did not answer: nothing was synced to or from them.
	Down []string `json:"down,omitempty"`
}

func (sw *Sweep) add(res offsetsync.Result, again bool) {
	sw.Groups++
	sw.Offsets += len(res.Synced)
	sw.Deleted += len(res.Deleted)
	if len(res.Synced) > 0 {
		sw.Synced++
	}
	if res.SplitBrain != "" {
		sw.SplitBrain = append(sw.SplitBrain, res.Group)
	}
	if again {
		sw.Again = append(sw.Again, res.Group)
	}
}
