package watch

import (
	"context"
	"slices"

	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/match"
)

// keep writes, on every cluster with a Keeper, the kept translations of the commits that
// replicated there since the last cycle (the groups that changed) and of those kept short
// (replication of the data behind), while their source answers (package standby).
func (w *Watcher) keep(ctx context.Context, dirty [][]string) {
	// A source watch does not follow (--cluster) counts as up: its reads say otherwise.
	up := func(name string) bool {
		for _, c := range w.clusters {
			if c.Name == name {
				return c.up
			}
		}
		return true
	}
	for i, c := range w.clusters {
		if c.Keeper == nil || !c.up {
			continue
		}
		before := c.Keeper.Stats()
		groups := append(slices.Clone(dirty[i]), c.Keeper.Again()...)
		slices.Sort(groups)
		groups = slices.Compact(groups)
		// The writer lease is taken before the step's first write, not before a step that
		// writes nothing (a source gone: a failover must find it free), and given back after.
		l := &stepLease{w: w, c: c}
		for i, g := range groups {
			if ctx.Err() != nil {
				break
			}
			if !w.keepGroup(ctx, c, g, up, l) {
				c.Keeper.Later(groups[i:]...) // another process writes here: next cycle
				break
			}
		}
		l.release()
		after := c.Keeper.Stats()
		w.m.keepReads.WithLabelValues(c.Name, "source").Add(float64(after.SourceReads - before.SourceReads))
		w.m.keepReads.WithLabelValues(c.Name, "target").Add(float64(after.TargetReads - before.TargetReads))
	}
}

// keepGroup keeps g's translations on c; false when it could not take the writer lease.
func (w *Watcher) keepGroup(ctx context.Context, c *clusterRT, g string, up func(string) bool, l *stepLease) bool {
	if !match.Any(w.o.Groups, g) {
		return true
	}
	p := c.partitionOf(g)
	if p == nil {
		return true
	}
	var offs []loader.CommittedOffset
	for co := range p.offsetsOf(g) {
		if match.Any(w.o.Topics, loader.ShortName(co.Topic, c.KafkaNamespace), co.Topic) {
			offs = append(offs, co)
		}
	}
	want := c.Keeper.Want(offs)
	if len(want) == 0 {
		c.Keeper.Done(g)
		return true
	}
	if w.o.DryRun {
		for _, co := range want {
			if up(co.Origin) {
				w.m.kept.WithLabelValues(c.Name, co.Origin, "dry_run").Inc()
				w.log.Info("would keep a translation (dry run)", "cluster", c.Name, "group", g, "topic", loader.ShortName(co.Topic, c.KafkaNamespace), "partition", co.Partition, "from", co.Origin, "offset", co.Offset)
			}
		}
		return true
	}
	if slices.ContainsFunc(want, func(co loader.CommittedOffset) bool { return up(co.Origin) }) && !l.take(ctx) {
		return false // Keep writes only what a source that answers translates
	}
	res := c.Keeper.Keep(ctx, g, want, up)
	for _, k := range res.Kept {
		result := "written"
		if k.Behind {
			result = "behind"
		}
		w.m.kept.WithLabelValues(c.Name, k.From, result).Inc()
		w.log.Debug("kept a translation", "cluster", c.Name, "group", g, "topic", loader.ShortName(k.Key.Topic, c.KafkaNamespace),
			"partition", k.Key.Partition, "from", k.From, "source", k.Source, "translated", k.Translated, "behind", k.Behind)
	}
	for _, err := range res.Errors {
		w.m.errors.WithLabelValues(c.Name, "keep").Inc()
		w.log.Warn("translation not kept", "cluster", c.Name, "group", g, "err", err.Error())
	}
	return true
}

// stepLease is c's writer lease for one cycle's keeping: taken before its first write, given
// back after its last. While another process holds it, nothing is written here: the groups
// wait for the next cycle, and the pause is logged when it starts and ends.
type stepLease struct {
	w    *Watcher
	c    *clusterRT
	held bool
}

func (l *stepLease) take(ctx context.Context) bool {
	c, w := l.c, l.w
	if l.held || c.KeepLease == nil {
		return true
	}
	cctx, cancel := context.WithTimeout(ctx, w.o.CallTimeout)
	err := c.KeepLease.Acquire(cctx)
	cancel()
	if err != nil {
		w.m.errors.WithLabelValues(c.Name, "keep").Inc()
		if !c.keepPaused {
			w.log.Warn("keeping paused: another process writes this cluster's offsets topic (a watch --sync, a failover or a repair); no translation is kept here until it stops",
				"cluster", c.Name, "err", err.Error())
		}
		c.keepPaused = true
		return false
	}
	if c.keepPaused {
		w.log.Info("keeping again: the cluster's writer lease is taken", "cluster", c.Name)
	}
	c.keepPaused, l.held = false, true
	return true
}

func (l *stepLease) release() {
	if l.held {
		l.c.KeepLease.Release()
		l.held = false
	}
}
