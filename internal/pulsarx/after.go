package pulsarx

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/kop-offsets/kop-offsets/internal/loader"
)

var _ loader.TailReader = (*Reader)(nil)

// HorizonProber is optionally implemented by the PartitionCounter given to NewReader
// (*Admin does): what of a topic's history a reader can still see (Reader.Horizon).
type HorizonProber interface {
	ViewHorizon(ctx context.Context, topic string) (string, error)
}

// errNoHorizon: the admin given to NewReader cannot tell a topic's horizon.
var errNoHorizon = errors.New("no admin API to read the topic's compaction horizon with")

// ReadPartitionAfter is ReadPartition from the first message after the position after (a
// position this method returned; "": from the earliest message). It returns the position
// it read to: the broker's last message when the call started (after itself when nothing
// was appended), so that the next call starts past an entry the client never hands on
// (KoP's empty placeholders, see CursorProber).
func (r *Reader) ReadPartitionAfter(ctx context.Context, partition int32, after string, fn func(loader.Message) error) (string, error) {
	start, err := parseID(after)
	if err != nil {
		return "", fmt.Errorf("cluster %s: topic %s partition %d: %w", r.cluster, r.topic, partition, err)
	}
	var bound, last pulsar.MessageID
	err = r.consume(ctx, partition, false, nil, span{after: start, bound: &bound}, func(msg pulsar.Message) error {
		last = msg.ID()
		return fn(r.toMessage(partition, msg))
	})
	if err != nil {
		return "", err
	}
	switch {
	case bound == nil || start != nil && compareEntry(bound, start) <= 0:
		return after, nil
	case last != nil && compareEntry(last, bound) == 0:
		return formatID(last, partition), nil // its batch index as the client numbers it
	}
	return formatID(bound, partition), nil
}

// Horizon implements loader.TailReader: the first ledger of the partition and its
// compacted ledger, which change when trimming or a compaction removes messages from
// what a read sees.
func (r *Reader) Horizon(ctx context.Context, partition int32) (string, error) {
	hp, ok := r.admin.(HorizonProber)
	if !ok {
		return "", errNoHorizon
	}
	return hp.ViewHorizon(ctx, PartitionTopic(r.topic, partition))
}

// parseID reads a position formatID wrote ("ledger:entry:partition:batch"); "" is nil.
func parseID(s string) (pulsar.MessageID, error) {
	if s == "" {
		return nil, nil
	}
	f := strings.Split(s, ":")
	var n [4]int64
	var err error
	for i := range n {
		if len(f) != 4 {
			break
		}
		if n[i], err = strconv.ParseInt(f[i], 10, 64); err != nil {
			break
		}
	}
	if len(f) != 4 || err != nil {
		return nil, fmt.Errorf("position %q is not ledger:entry:partition:batch", s)
	}
	return pulsar.NewMessageID(n[0], n[1], int32(n[3]), int32(n[2])), nil
}
