package pulsarx

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// ReaderClient is the part of pulsar.Client the Reader uses; pulsar.Client satisfies it.
type ReaderClient interface {
	CreateReader(pulsar.ReaderOptions) (pulsar.Reader, error)
}

// PartitionCounter answers the partition count of a partitioned topic; *Admin satisfies it.
type PartitionCounter interface {
	PartitionedTopicPartitions(ctx context.Context, topic string) (int32, error)
}

// CursorProber is optionally implemented by the PartitionCounter given to NewReader (*Admin
// does). pulsar-client-go v0.19.0 drops non-batched messages with an empty payload and no
// properties (it takes them for corrupt, logs "Discarding corrupted message" and acks them):
// KoP's placeholders are such messages. When one is the last message of a partition, the
// reader never receives the last message id; the prober lets a bounded read see on the
// broker that its subscription has acknowledged everything up to it, and end.
type CursorProber interface {
	// CursorMarkDelete returns the mark-delete position (ledger, entry) of subscription on
	// topic; ok is false when the broker does not list the subscription.
	CursorMarkDelete(ctx context.Context, topic, subscription string) (ledger, entry int64, ok bool, err error)
}

// probeInterval is how long a bounded read waits for a message before it asks the broker
// (CursorProber) whether nothing is left.
const probeInterval = time.Second

// KeyMode says how the Pulsar key of a message becomes loader.Message.Key.
type KeyMode int

const (
	// KeyBase64 decodes the key from standard base64 when it is valid base64, else keeps it
	// as is. KoP writes keys with the Java client's keyBytes(), which sends base64 text and
	// sets partition_key_b64_encoded; pulsar-client-go v0.19.0 parses that flag but does not
	// expose it on pulsar.Message, so validity is the best test available.
	KeyBase64 KeyMode = iota
	// KeyRaw keeps the key string's bytes.
	KeyRaw
)

// Defaults of ReaderOptions.
const (
	DefaultSubscriptionRolePrefix = "kop-offsets-reader"
	// Offsets messages are small (one record batch of ~100-300 bytes): a queue of 1,000 keeps
	// the broker streaming while fn decodes (the client asks for more at half of it), without
	// holding 5,000 buffered messages per partition read.
	DefaultReceiverQueueSize = 1000
	DefaultIdleTimeout       = 60 * time.Second
)

// ReaderOptions tune a Reader. The zero value is usable.
type ReaderOptions struct {
	// ClusterNames maps Pulsar cluster names to the config's (config.PulsarNames): the
	// ReplicatedFrom of each message is reported under the config name, so that an origin
	// names a configured cluster. A name not in it is kept.
	ClusterNames map[string]string
	// SubscriptionRolePrefix starts the name of each non-durable subscription
	// ("<prefix>-<random>"), so an operator can see the tool in topic stats. Default
	// DefaultSubscriptionRolePrefix.
	SubscriptionRolePrefix string
	ReceiverQueueSize      int
	// From, when set, starts each partition at the first message published at or after it
	// (broker seek by publish time) instead of the earliest message.
	From time.Time
	// Compacted reads the compacted view of the topic (latest value per key).
	Compacted bool
	// IdleTimeout bounds the wait for the next message in a bounded read: if the broker
	// sends nothing for this long before the last message id is reached (data removed by
	// retention, a server-only marker as last entry), ReadPartition fails instead of hanging.
	// Default DefaultIdleTimeout; it does not apply to Follow.
	IdleTimeout time.Duration
	KeyMode     KeyMode
}

// Reader reads KoP's offsets topic of one cluster with non-durable readers. It implements
// loader.OffsetTopicReader.
type Reader struct {
	cluster string
	topic   string
	client  ReaderClient
	admin   PartitionCounter
	opts    ReaderOptions

	undelivered atomic.Int64
}

// Undelivered counts the entries that bounded reads of the whole topic (not Compacted)
// never received although they lie between received ones in the same ledger, or after the
// last received one: Pulsar marker entries (KoP's transaction markers, which no reader gets)
// and empty placeholders that pulsar-client-go discards. dump reports it, since neither can
// be shown.
func (r *Reader) Undelivered() int64 { return r.undelivered.Load() }

// countGap adds the entries strictly between two positions of the same ledger.
func (r *Reader) countGap(from, to pulsar.MessageID, inclusiveEnd bool) {
	if r.opts.Compacted || from == nil || to == nil || from.LedgerID() != to.LedgerID() {
		return
	}
	gap := to.EntryID() - from.EntryID() - 1
	if inclusiveEnd {
		gap++
	}
	if gap > 0 {
		r.undelivered.Add(gap)
	}
}

var _ loader.OffsetTopicReader = (*Reader)(nil)

// LoaderView reads the offsets topic the way KoP's loader does (GroupMetadataManager reads
// it with a compacted reader): the compacted ledger up to the compaction horizon, then the rest
// of the topic. KoP keys every offset-commit message with a per-group key, so after a
// compaction only a group's newest commit message survives, and a partition committed only in
// an older message is gone from what KoP loads. "Persisted" means what KoP would load, so
// check, reload and doctor read this view; on a topic never compacted it is the whole topic.
var LoaderView = ReaderOptions{Compacted: true}

// NewReader reads <tenant>/<namespace>/__consumer_offsets of the cluster named cluster (the
// name only labels errors).
func NewReader(cluster string, client ReaderClient, admin PartitionCounter, tenant, namespace string, opts ReaderOptions) *Reader {
	if opts.SubscriptionRolePrefix == "" {
		opts.SubscriptionRolePrefix = DefaultSubscriptionRolePrefix
	}
	if opts.ReceiverQueueSize <= 0 {
		opts.ReceiverQueueSize = DefaultReceiverQueueSize
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	return &Reader{cluster: cluster, topic: OffsetsTopic(tenant, namespace), client: client, admin: admin, opts: opts}
}

// Topic is the full name of the offsets topic read.
func (r *Reader) Topic() string { return r.topic }

// Partitions returns the partition count of the offsets topic; an error when it is not a
// partitioned topic on this cluster.
func (r *Reader) Partitions(ctx context.Context) (int32, error) {
	n, err := r.admin.PartitionedTopicPartitions(ctx, r.topic)
	if err != nil {
		return 0, err
	}
	if n <= 0 {
		return 0, fmt.Errorf("cluster %s: %s is not a partitioned topic", r.cluster, r.topic)
	}
	return n, nil
}

// ReadPartition calls fn for every message of partition, from the earliest one (or the first
// at ReaderOptions.From) to the last one that existed when the call started, in order. An
// empty partition returns at once. It returns fn's first error unchanged.
func (r *Reader) ReadPartition(ctx context.Context, partition int32, fn func(loader.Message) error) error {
	return r.read(ctx, partition, false, fn)
}

// Follow calls fn for every message of partition from the earliest one (or From), then for
// every new one, until ctx is cancelled; cancellation is the normal end and returns nil.
func (r *Reader) Follow(ctx context.Context, partition int32, fn func(loader.Message) error) error {
	return r.read(ctx, partition, true, fn)
}

// ReadAll reads partitions (all of them when nil) with at most concurrency readers at once
// (0 or less: 4), each to its last message as ReadPartition does. fn is called from several
// goroutines but never concurrently: calls are serialized, messages of one partition arrive in
// order, and partitions interleave. The first error cancels the other reads and is returned.
func (r *Reader) ReadAll(ctx context.Context, partitions []int32, concurrency int, fn func(loader.Message) error) error {
	if concurrency <= 0 {
		concurrency = 4
	}
	return r.all(ctx, partitions, concurrency, false, fn)
}

// FollowAll follows partitions (all of them when nil) at once, as Follow does, with fn
// serialized as in ReadAll. It returns nil when ctx is cancelled.
func (r *Reader) FollowAll(ctx context.Context, partitions []int32, fn func(loader.Message) error) error {
	return r.all(ctx, partitions, 0, true, fn)
}

func (r *Reader) all(ctx context.Context, partitions []int32, concurrency int, follow bool, fn func(loader.Message) error) error {
	if partitions == nil {
		n, err := r.Partitions(ctx)
		if err != nil {
			return err
		}
		partitions = make([]int32, n)
		for i := range partitions {
			partitions[i] = int32(i)
		}
	}
	if concurrency <= 0 || concurrency > len(partitions) {
		concurrency = len(partitions)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var (
		mu       sync.Mutex // serializes fn
		errOnce  sync.Once
		firstErr error
		wg       sync.WaitGroup
		sem      = make(chan struct{}, concurrency)
	)
	serial := func(m loader.Message) error {
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() != nil {
			// Another partition failed: stop feeding fn.
			return ctx.Err()
		}
		return fn(m)
	}
	for _, p := range partitions {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			err := r.read(ctx, p, follow, serial)
			if err != nil && (ctx.Err() == nil || !errors.Is(err, ctx.Err())) {
				// Errors caused by our own cancellation after a first failure are noise.
				errOnce.Do(func() { firstErr = err; cancel() })
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if follow {
		return nil
	}
	return ctx.Err()
}

func (r *Reader) read(ctx context.Context, partition int32, follow bool, fn func(loader.Message) error) error {
	return r.consume(ctx, partition, follow, nil, span{}, func(msg pulsar.Message) error {
		return fn(r.toMessage(partition, msg))
	})
}

// span is where a bounded read starts (after: the first message after it; nil: the earliest
// one, or From) and where it reports the bound it read to (bound, when not nil).
type span struct {
	after pulsar.MessageID
	bound *pulsar.MessageID
}

// consume is the one read loop of ReadPartition, ReadPartitionAfter, Follow and Tail.
// Without follow it reads to the last message that existed at the start; with follow it
// keeps reading until ctx ends (nil), and with caughtUp (Tail: from the earliest message,
// never From) it calls caughtUp once that last message was passed to fn.
func (r *Reader) consume(ctx context.Context, partition int32, follow bool, caughtUp func(), sp span, fn func(pulsar.Message) error) error {
	topic := PartitionTopic(r.topic, partition)
	fail := func(what string, err error) error {
		return fmt.Errorf("cluster %s: topic %s partition %d: %s: %w", r.cluster, r.topic, partition, what, err)
	}
	if err := ctx.Err(); err != nil {
		if follow {
			return nil
		}
		return err
	}
	sub := r.opts.SubscriptionRolePrefix + "-" + randomSuffix()
	start, inclusive := pulsar.EarliestMessageID(), true
	if sp.after != nil {
		start, inclusive = sp.after, false
	}
	rd, err := r.client.CreateReader(pulsar.ReaderOptions{
		Topic:                   topic,
		SubscriptionName:        sub,
		StartMessageID:          start,
		StartMessageIDInclusive: inclusive,
		ReceiverQueueSize:       r.opts.ReceiverQueueSize,
		SubscriptionRolePrefix:  r.opts.SubscriptionRolePrefix,
		ReadCompacted:           r.opts.Compacted,
	})
	if err != nil {
		return fail("create reader", err)
	}
	defer rd.Close()

	// bounded: the last message that existed at the start is still to be reached. The bound
	// is taken before seeking, so messages published while we read are left for the next
	// run: each bounded call reads a snapshot.
	b := bound{follow: follow, caughtUp: caughtUp, active: !follow || caughtUp != nil}
	if b.active {
		if b.last, err = rd.GetLastMessageID(); err != nil {
			return fail("get last message id", err)
		}
		empty := b.last == nil || b.last.EntryID() < 0 || b.last.LedgerID() < 0
		if !empty && sp.bound != nil {
			*sp.bound = b.last
		}
		if empty || sp.after != nil && compareEntry(b.last, sp.after) <= 0 {
			if b.reached() {
				return nil // empty partition, or nothing appended after sp.after
			}
		}
	}
	if !r.opts.From.IsZero() && caughtUp == nil && sp.after == nil {
		if err := rd.SeekByTime(r.opts.From); err != nil {
			return fail("seek to "+r.opts.From.UTC().Format(time.RFC3339Nano), err)
		}
		// After a seek by time, HasNext compares the broker's last message with the seek
		// position: false means nothing was published since From.
		if !follow && !rd.HasNext() {
			return nil
		}
	}
	return r.loop(ctx, rd, partition, topic, sub, &b, fail, fn)
}

// bound tracks the last message a bounded read (or a Tail before its catch-up) must reach.
type bound struct {
	follow   bool
	caughtUp func()
	active   bool
	last     pulsar.MessageID
}

// reached ends the bounded part: true when the read is over, false when it follows on.
func (b *bound) reached() bool {
	b.active = false
	if !b.follow {
		return true
	}
	if b.caughtUp != nil {
		b.caughtUp()
	}
	return false
}

func (r *Reader) loop(ctx context.Context, rd pulsar.Reader, partition int32, topic, sub string, b *bound,
	fail func(string, error) error, fn func(pulsar.Message) error) error {
	prober, _ := r.admin.(CursorProber)
	wait := r.opts.IdleTimeout
	if prober != nil && wait > probeInterval {
		wait = probeInterval
	}
	var lastRead pulsar.MessageID
	idleSince := time.Now()
	// While bounded, Next waits at most `wait`; one timer serves many messages (a context per
	// message would cost allocations and a timer each), so an expiry soon after a message
	// only renews it.
	timeout := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, wait) }
	nctx, ncancel := ctx, context.CancelFunc(func() {})
	defer func() { ncancel() }()
	for {
		switch {
		case b.active && (nctx == ctx || nctx.Err() != nil):
			ncancel()
			nctx, ncancel = timeout()
		case !b.active && nctx != ctx:
			ncancel()
			nctx = ctx
		}
		msg, err := rd.Next(nctx)
		if err != nil {
			switch {
			case ctx.Err() != nil && b.follow:
				return nil
			case ctx.Err() != nil:
				return ctx.Err()
			case !errors.Is(err, context.DeadlineExceeded):
				return fail("read", err)
			}
			if time.Since(idleSince) < wait {
				continue
			}
			if prober != nil {
				l, e, ok, perr := prober.CursorMarkDelete(ctx, topic, sub)
				if perr == nil && ok && compareEntry(entryPos{l, e}, b.last) >= 0 {
					// The rest was dropped by the client, see CursorProber.
					if !b.follow {
						r.countGap(lastRead, b.last, true)
					}
					if b.reached() {
						return nil
					}
					continue
				}
			}
			if time.Since(idleSince) >= r.opts.IdleTimeout {
				return fail("read", fmt.Errorf("no message for %s before the last message id %s (last read %s)",
					r.opts.IdleTimeout, formatID(b.last, partition), formatID(lastRead, partition)))
			}
			continue
		}
		idleSince = time.Now()
		id := msg.ID()
		if b.active && compareEntry(id, b.last) > 0 && b.reached() {
			return nil // published after the call started
		}
		if b.active && !b.follow {
			r.countGap(lastRead, id, false)
		}
		lastRead = id
		if err := fn(msg); err != nil {
			return err
		}
		if b.active && isLastOf(id, b.last) && b.reached() {
			return nil
		}
	}
}

func randomSuffix() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
