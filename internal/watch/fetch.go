package watch

// Ingest of the remote sides per cycle: replication stats, KoP's answers, log-end offsets.

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/verdict"
)

// fetch reads the replication stats of the offsets partitions of groups, asks KoP for
// groups and the log-end offsets of their topics.
func (x *exporter) fetch(ctx context.Context, c *clusterRT, groups []string) {
	if !c.up {
		return
	}
	x.fetchReplication(ctx, c, groups)
	if c.Fetcher == nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, x.o.CallTimeout)
	defer cancel()
	if !x.fetchCached(ctx, cctx, c, groups) {
		return
	}
	err := survey.ReadEndOffsets(cctx, c.Fetcher, c.KafkaNamespace, x.topicsOf(c, groups), c.leo)
	if err != nil {
		x.log.Warn("log-end offsets", "cluster", c.Name, "err", err.Error())
	}
}

// fetchReplication reads c's replication stats of the offsets partitions of groups (only
// with peers to replicate to).
func (x *exporter) fetchReplication(ctx context.Context, c *clusterRT, groups []string) {
	n, _ := c.partitions()
	if c.Replication == nil || len(x.clusters) <= 1 || n <= 0 {
		return
	}
	need := map[int32]bool{}
	for _, g := range groups {
		need[loader.PartitionFor(g, n)] = true
	}
	p, err := survey.ReadOutbound(ctx, c.Replication, need, x.o.CallTimeout, c.repl)
	if err != nil && ctx.Err() == nil {
		x.m.errors.WithLabelValues(c.Name, "admin").Inc()
		x.log.Warn("replication stats", "cluster", c.Name, "offsetsPartition", p, "err", err.Error())
	}
}

// fetchCached asks KoP on c for the offsets of groups (c.cached, this cycle's answers) and
// reports whether KoP answers (a group at least: those it does not serve fail alone). ctx is
// the cycle's, cctx the call's.
func (x *exporter) fetchCached(ctx, cctx context.Context, c *clusterRT, groups []string) bool {
	t0 := time.Now()
	failed := 0
	var firstErr error
	names := verdict.Names{}
	c.cached = make(map[string]answer, len(groups))
	keep := func(g string, f verdict.GroupFetch) {
		if f.Err != nil && !f.Unavailable {
			failed++
			firstErr = cmp.Or(firstErr, f.Err)
		}
		c.cached[g] = newAnswer(f, c.KafkaNamespace, names)
	}
	// Each answer is compacted as it comes: a resync asks every group, and kop.Fetcher's
	// maps of every group at once were watch's largest peak (about 260 B per key).
	c.Fetcher.EachOffsets(cctx, groups, keep)
	for _, g := range groups {
		if _, ok := c.cached[g]; !ok {
			keep(g, verdict.GroupFetch{Err: fmt.Errorf("group %s: no answer", g)})
		}
	}
	x.m.fetchDuration.WithLabelValues(c.Name).Observe(time.Since(t0).Seconds())
	x.m.groupsFetched.WithLabelValues(c.Name).Add(float64(len(groups)))
	if ctx.Err() != nil {
		return false
	}
	if failed > 0 {
		x.m.errors.WithLabelValues(c.Name, "kafka").Inc()
	}
	kopUp := failed < len(groups)
	x.setKoPUp(c, kopUp, len(groups), firstErr)
	return kopUp
}

// setKoPUp records whether KoP on c answers and logs the change.
func (x *exporter) setKoPUp(c *clusterRT, kopUp bool, groups int, firstErr error) {
	if kopUp != c.kopUp || !c.kopKnown {
		if kopUp {
			x.log.Info("KoP answers", "cluster", c.Name)
		} else {
			x.log.Warn("KoP does not answer OffsetFetch", "cluster", c.Name, "groups", groups, "err", firstErr.Error())
		}
	}
	c.kopUp, c.kopKnown = kopUp, true
	x.m.kopUp.WithLabelValues(c.Name).Set(b2f(kopUp))
}

// topicsOf yields the topics of groups on c, persisted or served by KoP (with repeats):
// those whose log-end offsets the rows need.
func (x *exporter) topicsOf(c *clusterRT, groups []string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for _, g := range groups {
			if p := c.partitionOf(g); p != nil {
				for co := range p.offsetsOf(g) {
					if !yield(co.Topic) {
						return
					}
				}
			}
			for _, o := range c.cached[g].offs {
				if !yield(o.topic) {
					return
				}
			}
		}
	}
}
