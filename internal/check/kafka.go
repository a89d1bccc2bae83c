package check

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kop-offsets/kop-offsets/internal/offsets"
)

// Defaults of KafkaFetcher.
const (
	DefaultBatchSize       = 50
	DefaultFetchParallel   = 4
	DefaultCoordinatorWait = 15 * time.Second
)

// KafkaFetcher is the OffsetFetcher of KoP's Kafka listeners, with kadm. Groups are fetched
// in batches (one OffsetFetch v8+ per coordinator per batch, FetchManyOffsets), at most
// Parallel batches at once. Groups answered with COORDINATOR_LOAD_IN_PROGRESS,
// NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE are asked again with exponential backoff
// until CoordinatorWait has passed, then reported Unavailable.
type KafkaFetcher struct {
	Admin           *kadm.Client
	BatchSize       int
	Parallel        int
	CoordinatorWait time.Duration
	// Describe also describes listed groups (state, members) in ListGroups.
	Describe bool
}

// FetcherClientOpts are the kgo options a KafkaFetcher's client needs: kgo retries
// COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR of OffsetFetch itself until its retry
// timeout; a short one for OffsetFetch hands those errors back so that the fetcher's own
// bounded retry (CoordinatorWait) decides. Other requests keep requestTimeout.
func FetcherClientOpts(requestTimeout time.Duration) []kgo.Opt {
	return []kgo.Opt{kgo.RetryTimeoutFn(func(key int16) time.Duration {
		if key == kmsg.OffsetFetch.Int16() || key == kmsg.FindCoordinator.Int16() {
			return 500 * time.Millisecond
		}
		return requestTimeout
	})}
}

// ListGroups implements OffsetFetcher: ListGroups, then DescribeGroups when Describe is set.
func (f *KafkaFetcher) ListGroups(ctx context.Context) ([]ListedGroup, error) {
	ls, err := f.Admin.ListGroups(ctx)
	if err != nil {
		return nil, err
	}
	var out []ListedGroup
	for _, g := range ls.Sorted() {
		out = append(out, ListedGroup{Group: g.Group, State: g.State, ProtocolType: g.ProtocolType})
	}
	if !f.Describe || len(out) == 0 {
		return out, nil
	}
	ds, err := f.Admin.DescribeGroups(ctx, ls.Groups()...)
	if err != nil {
		return nil, err
	}
	for i := range out {
		if d, ok := ds[out[i].Group]; ok && d.Err == nil {
			out[i].State, out[i].Members = d.State, len(d.Members)
			if d.ProtocolType != "" {
				out[i].ProtocolType = d.ProtocolType
			}
		}
	}
	return out, nil
}

// FetchOffsets implements OffsetFetcher.
func (f *KafkaFetcher) FetchOffsets(ctx context.Context, groups []string) map[string]GroupFetch {
	batch := cmpOr(f.BatchSize, DefaultBatchSize)
	par := cmpOr(f.Parallel, DefaultFetchParallel)
	wait := f.CoordinatorWait
	if wait <= 0 {
		wait = DefaultCoordinatorWait
	}
	deadline := time.Now().Add(wait)
	out := make(map[string]GroupFetch, len(groups))
	var mu sync.Mutex
	pending := slices.Clone(groups)
	backoff := 100 * time.Millisecond
	for attempt := 0; len(pending) > 0; attempt++ {
		var retry []string
		var wg sync.WaitGroup
		sem := make(chan struct{}, par)
		for start := 0; start < len(pending); start += batch {
			chunk := pending[start:min(start+batch, len(pending))]
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				actx, cancel := context.WithDeadline(ctx, deadline.Add(time.Second))
				rs := f.Admin.FetchManyOffsets(actx, chunk...)
				cancel()
				mu.Lock()
				defer mu.Unlock()
				for _, g := range chunk {
					r, ok := rs[g]
					switch {
					case !ok:
						out[g] = GroupFetch{Err: fmt.Errorf("group %s: no answer", g)}
					case r.Err != nil && isCoordinatorLoading(r.Err):
						out[g] = GroupFetch{Unavailable: true, Err: fmt.Errorf("group %s: %w", g, r.Err)}
						retry = append(retry, g)
					case r.Err != nil:
						out[g] = GroupFetch{Err: fmt.Errorf("group %s: %w", g, r.Err)}
					default:
						gf := GroupFetch{Offsets: map[string]map[int32]int64{}}
						var perr error
						r.Fetched.Each(func(o kadm.OffsetResponse) {
							if o.Err != nil {
								perr = o.Err
								return
							}
							if o.At < 0 {
								return // no committed offset
							}
							if gf.Offsets[o.Topic] == nil {
								gf.Offsets[o.Topic] = map[int32]int64{}
							}
							gf.Offsets[o.Topic][o.Partition] = o.At
						})
						if perr != nil && isCoordinatorLoading(perr) {
							out[g] = GroupFetch{Unavailable: true, Err: fmt.Errorf("group %s: %w", g, perr)}
							retry = append(retry, g)
						} else if perr != nil {
							out[g] = GroupFetch{Err: fmt.Errorf("group %s: %w", g, perr)}
						} else {
							out[g] = gf
						}
					}
				}
			}()
		}
		wg.Wait()
		if len(retry) == 0 || ctx.Err() != nil || time.Now().Add(backoff).After(deadline) {
			break
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
		}
		backoff = min(backoff*2, 2*time.Second)
		slices.Sort(retry)
		pending = retry
	}
	return out
}

// EndOffsets implements OffsetFetcher with ListOffsets (latest).
func (f *KafkaFetcher) EndOffsets(ctx context.Context, topics []string) (map[string]map[int32]int64, error) {
	ls, err := f.Admin.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, err
	}
	out := map[string]map[int32]int64{}
	var errs []error
	ls.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			errs = append(errs, fmt.Errorf("%s[%d]: %w", o.Topic, o.Partition, o.Err))
			return
		}
		if out[o.Topic] == nil {
			out[o.Topic] = map[int32]int64{}
		}
		out[o.Topic][o.Partition] = o.Offset
	})
	return out, errors.Join(errs...)
}

func cmpOr(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// KafkaRecordReader reads single records through KoP with a direct partition consumer: a
// new kgo client per call, consuming from the exact offset, with no group (nothing is
// committed). NewClient builds the client from the given options (the cluster's connection
// settings come from the caller).
type KafkaRecordReader struct {
	NewClient func(opts ...kgo.Opt) (*kgo.Client, error)
	Timeout   time.Duration // default 10s
}

// Fingerprint implements RecordReader.
func (k *KafkaRecordReader) Fingerprint(ctx context.Context, topic string, partition int32, offset int64) (offsets.RecordFingerprint, error) {
	cl, err := k.NewClient(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {partition: kgo.NewOffset().At(offset)},
	}))
	if err != nil {
		return offsets.RecordFingerprint{}, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Duration(cmpOr(int(k.Timeout), int(10*time.Second))))
	defer cancel()
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return offsets.RecordFingerprint{}, fmt.Errorf("record %s[%d]@%d: %w", topic, partition, offset, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return offsets.RecordFingerprint{}, fmt.Errorf("record %s[%d]@%d: %w", topic, partition, offset, ferr)
		}
		var found *kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			if found == nil && r.Offset == offset {
				found = r
			}
		})
		if found != nil {
			return Fingerprint(found), nil
		}
	}
}

// Fingerprint identifies a record: offset, timestamp, key, CRC-32 of the value.
func Fingerprint(r *kgo.Record) offsets.RecordFingerprint {
	return offsets.RecordFingerprint{
		Offset: r.Offset, TimestampMs: r.Timestamp.UnixMilli(), Key: string(r.Key), KeyNull: r.Key == nil,
		ValueCRC32: crc32.ChecksumIEEE(r.Value), ValueLen: len(r.Value),
	}
}
