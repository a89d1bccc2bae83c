package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"time"

	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// KoP's GroupMetadataManager logs one line per offsets partition it has loaded.
var (
	// KoP 3.1: "Finished loading public/__kafka/__consumer_offsets-partition-0 offsets and
	// group metadata from 0 in 966 milliseconds" (Kafka's own wording puts the partition after "from").
	kopLoaded    = regexp.MustCompile(`Finished loading (?:(\S+) offsets and group metadata from \S+|offsets and group metadata from (\S+)) in (\d+) milliseconds`)
	kopLoadError = regexp.MustCompile(`Error loading offsets from (\S+)`)
	partitionOf  = regexp.MustCompile(`-(\d+)$`)
)

// kopLoad forces KoP on cluster c to load every offsets partition again: one unload of the
// whole metadata namespace (a single request, so no partition is unloaded twice, see issue
// 15), then a lookup of each partition so that the broker takes the bundles back and KoP
// loads their partitions. It reads KoP's own timings from the
// broker log. A load KoP reports as failed ("Error loading offsets", seen when a lookup came
// while the unload was still closing topics) or that does not finish within wait, or within
// a minute of the last partition that did (KoP logged "Already loading" for a partition and
// never loaded it: issue 15), makes it start
// over, at most three times; the sample says how many attempts it took. In the Sample, Wall
// is from the unload to the last "Finished loading" line seen (polled every 100 ms), KoPMax the
// longest and KoPSum the sum of KoP's per-partition load times.
//
// When every attempt leaves partitions unloaded, the attempt that loaded the most is the
// sample, with Partial naming the partitions KoP never loaded: KoP's times for the others
// are still its own load of them.
func kopLoad(ctx context.Context, c lab.Cluster, logPath string, wait time.Duration) (Sample, error) {
	var last error
	var best Sample
	bestLoaded := 0
	for attempt := 1; attempt <= 3; attempt++ {
		s, loaded, err := kopLoadOnce(ctx, c, logPath, wait)
		if err == nil {
			s.Attempts = attempt
			return s, nil
		}
		if ctx.Err() != nil {
			return Sample{}, err
		}
		last = err
		if len(loaded) > bestLoaded {
			best, bestLoaded = s, len(loaded)
			var never []int
			for p := range lab.OffsetsTopicPartitions {
				if _, ok := loaded[p]; !ok {
					never = append(never, p)
				}
			}
			best.Partial = fmt.Sprintf("KoP loaded %d of %d offsets partitions; it never loaded %v in %s (stuck, as in docs/kop-facts.md)", len(loaded), lab.OffsetsTopicPartitions, never, wait)
		}
	}
	if bestLoaded > 0 {
		best.Attempts = 3
		return best, nil
	}
	return Sample{}, fmt.Errorf("cluster %s: KoP did not load every offsets partition in 3 attempts: %w", c.Name, last)
}

// kopWait is how long KoP may take to load the offsets partitions of live keys: a minute,
// plus a minute per 100,000 keys (KoP took about 75 s per partition, all at once, for
// 500,000 keys on the shared 2-vCPU lab).
func kopWait(live int) time.Duration { return time.Minute + time.Duration(live/100_000)*time.Minute }

// lookup asks for a partition's owner until the broker answers: right after an unload, and
// while KoP loads a large partition, a broker may answer 500 for a while.
func lookup(ctx context.Context, a pulsaradmin.Client, tn *utils.TopicName, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		_, err := a.Topics().LookupWithContext(ctx, *tn)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func kopLoadOnce(ctx context.Context, c lab.Cluster, logPath string, wait time.Duration) (Sample, map[int]int64, error) {
	fi, err := os.Stat(logPath)
	if err != nil {
		return Sample{}, nil, err
	}
	from := fi.Size()
	a, err := lab.NewAdmin(c)
	if err != nil {
		return Sample{}, nil, err
	}
	// Other clients (replicators, KoP's own) take the bundles back within a second of the
	// unload anyway, so the time counts from the unload.
	start := time.Now()
	if err := a.Namespaces().UnloadWithContext(ctx, lab.MetadataNamespace); err != nil {
		return Sample{}, nil, fmt.Errorf("cluster %s: unload %s: %w", c.Name, lab.MetadataNamespace, err)
	}
	for p := range lab.OffsetsTopicPartitions {
		tn, err := utils.GetTopicName(pulsarx.PartitionTopic(lab.OffsetsTopic, int32(p)))
		if err != nil {
			return Sample{}, nil, err
		}
		if err := lookup(ctx, a, tn, wait); err != nil {
			return Sample{}, nil, fmt.Errorf("cluster %s: lookup %s: %w", c.Name, tn, err)
		}
	}
	loaded, failed := map[int]int64{}, map[int]bool{}
	var last time.Time
	deadline := start.Add(wait)
	for len(loaded) < lab.OffsetsTopicPartitions {
		n, next, err := scanLog(logPath, from, loaded, failed)
		if err != nil {
			return Sample{}, nil, err
		}
		from = next
		if n > 0 {
			last = time.Now()
		}
		for p := range failed {
			if _, ok := loaded[p]; !ok {
				return Sample{}, nil, fmt.Errorf("KoP on %s: error loading offsets partition %d (broker log %s)", c.Name, p, logPath)
			}
		}
		// KoP loads the partitions at once, and they end within seconds of each other: a
		// partition still missing a minute after the others is stuck ("Already loading").
		if time.Now().After(deadline) || (!last.IsZero() && time.Since(last) > time.Minute) {
			return loadSample(start, last, loaded), loaded, fmt.Errorf("KoP on %s loaded %d of %d offsets partitions within %s (%v)", c.Name, len(loaded), lab.OffsetsTopicPartitions, wait, loaded)
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return Sample{}, nil, ctx.Err()
		}
	}
	return loadSample(start, last, loaded), loaded, nil
}

// loadSample is KoP's load from its log's per-partition times.
func loadSample(start, last time.Time, loaded map[int]int64) Sample {
	var sum, mx int64
	for _, ms := range loaded {
		sum += ms
		mx = max(mx, ms)
	}
	return Sample{Wall: last.Sub(start), KoPMax: time.Duration(mx) * time.Millisecond, KoPSum: time.Duration(sum) * time.Millisecond}
}

// scanLog reads complete lines from offset on and records KoP's load times by partition.
func scanLog(path string, offset int64, loaded map[int]int64, failed map[int]bool) (found int, next int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, offset, err
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return 0, offset, err
	}
	r := bufio.NewReaderSize(f, 1<<20)
	next = offset
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return found, next, nil // an incomplete last line is read again next time
		}
		next += int64(len(line))
		if m := kopLoadError.FindStringSubmatch(line); m != nil {
			if pm := partitionOf.FindStringSubmatch(m[1]); pm != nil {
				p, _ := strconv.Atoi(pm[1])
				failed[p] = true
			}
			continue
		}
		m := kopLoaded.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		name := m[1] + m[2]
		pm := partitionOf.FindStringSubmatch(name)
		if pm == nil {
			continue
		}
		p, _ := strconv.Atoi(pm[1])
		ms, _ := strconv.ParseInt(m[3], 10, 64)
		loaded[p] = ms
		found++
	}
}
