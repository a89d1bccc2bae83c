package pulsarx

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"strconv"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// entryPos is a (ledger, entry) position as a pulsar.MessageID, for compareEntry.
type entryPos struct{ ledger, entry int64 }

func (p entryPos) Serialize() []byte { return nil }

func (p entryPos) LedgerID() int64 { return p.ledger }

func (p entryPos) EntryID() int64 { return p.entry }

func (p entryPos) BatchIdx() int32 { return -1 }

func (p entryPos) PartitionIdx() int32 { return -1 }

func (p entryPos) BatchSize() int32 { return 0 }

func (p entryPos) String() string { return fmt.Sprintf("%d:%d", p.ledger, p.entry) }

func (r *Reader) toMessage(partition int32, msg pulsar.Message) loader.Message {
	// A kept translation (watch) says so in its properties; one whose mark does not parse is
	// replayed as the ordinary commit it also is.
	kept, _ := loader.ParseKeptMark(msg.Properties())
	return loader.Message{
		Kept:        kept,
		Partition:   partition,
		MessageID:   formatID(msg.ID(), partition),
		PublishTime: msg.PublishTime(),
		Key:         decodeKey(msg.Key(), r.opts.KeyMode),
		Value:       msg.Payload(),
		// The replicator marks what it copies with the cluster it came from; a held value
		// (failover) names it in its properties.
		ReplicatedFrom: r.replicatedFrom(msg),
	}
}

// replicatedFrom is the config name of the cluster msg counts in: the replicator's mark, else
// a held value's (loader.PropHeldFrom, already a config name), else "".
func (r *Reader) replicatedFrom(msg pulsar.Message) string {
	if from := msg.GetReplicatedFrom(); from != "" {
		return r.origin(from)
	}
	return loader.HeldFrom(msg.Properties())
}

// origin is the config name of the cluster Pulsar calls from ("" stays "").
func (r *Reader) origin(from string) string {
	if n, ok := r.opts.ClusterNames[from]; ok && from != "" {
		return n
	}
	return from
}

func decodeKey(k string, mode KeyMode) []byte {
	if k == "" {
		return nil
	}
	if mode == KeyBase64 {
		if b, err := base64.StdEncoding.DecodeString(k); err == nil {
			return b
		}
	}
	return []byte(k)
}

// formatID renders "ledger:entry:partition:batch". The partition is the offsets-topic
// partition read (a reader on a partition topic reports its own index, not this one).
func formatID(id pulsar.MessageID, partition int32) string {
	if id == nil {
		return "none"
	}
	b := make([]byte, 0, 40)
	b = strconv.AppendInt(b, id.LedgerID(), 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, id.EntryID(), 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(partition), 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(id.BatchIdx()), 10)
	return string(b)
}

// compareEntry orders ids by (ledger, entry): batch indexes of one entry compare equal.
func compareEntry(a, b pulsar.MessageID) int {
	return cmp.Or(cmp.Compare(a.LedgerID(), b.LedgerID()), cmp.Compare(a.EntryID(), b.EntryID()))
}

// isLastOf reports whether id is the last message to read when last is the broker's last
// message id: the final message of last's entry. Brokers report the batch index of the
// last message of a batch, or -1, depending on version; both are handled.
func isLastOf(id, last pulsar.MessageID) bool {
	if compareEntry(id, last) != 0 {
		return compareEntry(id, last) > 0
	}
	if id.BatchIdx() < 0 || id.BatchIdx()+1 >= id.BatchSize() {
		return true
	}
	return last.BatchIdx() >= 0 && id.BatchIdx() >= last.BatchIdx()
}
