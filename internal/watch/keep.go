package watch

import (
	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/match"
	"github.com/kop-offsets/kop-offsets/internal/standby"
	"github.com/kop-offsets/kop-offsets/internal/streamkeep"
)

// newKeepEngines gives every cluster with a Keeper its keeping engine (package streamkeep):
// a commit replicated there is kept as it is read, not at the next cycle.
func (w *Watcher) newKeepEngines() {
	for _, c := range w.clusters {
		if c.Keeper == nil {
			continue
		}
		accept := func(co loader.CommittedOffset) bool {
			return match.Any(w.o.Groups, co.Group) && match.Any(w.o.Topics, loader.ShortName(co.Topic, c.KafkaNamespace), co.Topic)
		}
		c.keep = streamkeep.New(c.Keeper, c.KeepLease, &keepObserver{w: w, c: c}, streamkeep.Options{
			Accept: accept, Up: func(n string) bool { return w.clusterUp(n, true) }, DryRun: w.o.DryRun, CallTimeout: w.o.CallTimeout})
	}
}

// keepObserver turns one cluster's keeping into metrics and log lines.
type keepObserver struct {
	w    *Watcher
	c    *clusterRT
	last align.TrackerStats
}

func (o *keepObserver) Kept(res standby.Result) {
	w, c := o.w, o.c
	for _, k := range res.Kept {
		result := "written"
		if k.Behind {
			result = "behind"
		}
		w.m.kept.WithLabelValues(c.Name, k.From, result).Inc()
		w.log.Debug("kept a translation", "cluster", c.Name, "group", k.Key.Group, "topic", loader.ShortName(k.Key.Topic, c.KafkaNamespace),
			"partition", k.Key.Partition, "from", k.From, "source", k.Source, "translated", k.Translated, "behind", k.Behind)
	}
	for _, err := range res.Errors {
		w.m.errors.WithLabelValues(c.Name, "keep").Inc()
		w.log.Warn("translation not kept", "cluster", c.Name, "err", err.Error())
	}
}

func (o *keepObserver) Read(s align.TrackerStats) {
	o.w.m.keepReads.WithLabelValues(o.c.Name, "source").Add(float64(s.SourceReads - o.last.SourceReads))
	o.w.m.keepReads.WithLabelValues(o.c.Name, "target").Add(float64(s.TargetReads - o.last.TargetReads))
	o.last = s
}

func (o *keepObserver) WouldKeep(co loader.CommittedOffset) {
	o.w.m.kept.WithLabelValues(o.c.Name, co.Origin, "dry_run").Inc()
	o.w.log.Info("would keep a translation (dry run)", "cluster", o.c.Name, "group", co.Group, "topic", loader.ShortName(co.Topic, o.c.KafkaNamespace),
		"partition", co.Partition, "from", co.Origin, "offset", co.Offset)
}

func (o *keepObserver) Paused(err error) {
	o.w.m.errors.WithLabelValues(o.c.Name, "keep").Inc()
	o.w.log.Warn("keeping paused: another process writes this cluster's offsets topic (a watch --sync, a failover or a repair); no translation is kept here until it stops",
		"cluster", o.c.Name, "err", err.Error())
}

func (o *keepObserver) Resumed() {
	o.w.log.Info("keeping again: the cluster's writer lease is taken", "cluster", o.c.Name)
}
