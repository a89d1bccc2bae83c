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

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// KoP's GroupMetadataManager logs one line per offsets partition it has loaded.
var (
	kopLoaded    = regexp.MustCompile(`Finished loading offsets and group metadata from (\S+) in (\d+) milliseconds`)
	kopLoadError = regexp.MustCompile(`Error loading offsets from (\S+)`)
	partitionOf  = regexp.MustCompile(`-(\d+)$`)
)

// kopLoad forces KoP on cluster c to load every offsets partition again: one unload of the
// whole metadata namespace (a single request, so no partition is unloaded twice while it
// loads, see issue 15), then a lookup of each partition so that the broker takes the bundles
// back and KoP loads their partitions. It reads KoP's own timings from the broker log. In the
// Sample, Wall is from the unload to the last "Finished loading" line seen (polled every
// 100 ms) and CPU holds the sum of KoP's per-partition load times.
func kopLoad(ctx context.Context, c lab.Cluster, logPath string) (Sample, error) {
	fi, err := os.Stat(logPath)
	if err != nil {
		return Sample{}, err
	}
	from := fi.Size()
	a, err := lab.NewAdmin(c)
	if err != nil {
		return Sample{}, err
	}
	start := time.Now()
	if err := a.Namespaces().UnloadWithContext(ctx, lab.MetadataNamespace); err != nil {
		return Sample{}, fmt.Errorf("cluster %s: unload %s: %w", c.Name, lab.MetadataNamespace, err)
	}
	for p := range lab.OffsetsTopicPartitions {
		tn, err := utils.GetTopicName(pulsarx.PartitionTopic(lab.OffsetsTopic, int32(p)))
		if err != nil {
			return Sample{}, err
		}
		if _, err := a.Topics().LookupWithContext(ctx, *tn); err != nil {
			return Sample{}, fmt.Errorf("cluster %s: lookup %s: %w", c.Name, tn, err)
		}
	}
	loaded := map[int]int64{}
	var last time.Time
	deadline := start.Add(5 * time.Minute)
	for len(loaded) < lab.OffsetsTopicPartitions {
		if time.Now().After(deadline) {
			return Sample{}, fmt.Errorf("cluster %s: KoP loaded %d of %d offsets partitions within 5m (%v)", c.Name, len(loaded), lab.OffsetsTopicPartitions, loaded)
		}
		n, next, err := scanLog(logPath, from, loaded)
		if err != nil {
			return Sample{}, err
		}
		from = next
		if n > 0 {
			last = time.Now()
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return Sample{}, ctx.Err()
		}
	}
	var sum int64
	for _, ms := range loaded {
		sum += ms
	}
	return Sample{Wall: last.Sub(start), CPU: time.Duration(sum) * time.Millisecond}, nil
}

// scanLog reads complete lines from offset on and records KoP's load times by partition.
func scanLog(path string, offset int64, loaded map[int]int64) (found int, next int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, offset, err
	}
	defer f.Close()
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
			return found, next, fmt.Errorf("KoP failed to load %s: %s", m[1], line)
		}
		m := kopLoaded.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		pm := partitionOf.FindStringSubmatch(m[1])
		if pm == nil {
			continue
		}
		p, _ := strconv.Atoi(pm[1])
		ms, _ := strconv.ParseInt(m[2], 10, 64)
		loaded[p] = ms
		found++
	}
}
