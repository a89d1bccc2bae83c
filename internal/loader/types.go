package loader

import (
	"strconv"

	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
)

// TxnOrdering decides whether a committed transactional offset replaces a loaded one.
type TxnOrdering int

const (
	// OrderingKoP reproduces KoP's loader: positions are in-batch offsets, normally all 0.
	OrderingKoP TxnOrdering = iota
	// OrderingLog uses log order, as Kafka's loader does with real log offsets.
	OrderingLog
)

// maxKeptErrors bounds the errors a replay keeps: counts stay exact, memory does not grow
// with a partition full of garbage.
const maxKeptErrors = 100

// GroupState is the state KoP gives a group it loads.
type GroupState string

// The group states a replay assigns.
const (
	GroupEmpty  GroupState = "Empty"
	GroupStable GroupState = "Stable"
)

// Counts summarises a replay.
type Counts struct {
	Messages         int64 `json:"messages"`
	Bytes            int64 `json:"bytes"` // key + value bytes
	OffsetCommits    int64 `json:"offsetCommits"`
	OffsetTombstones int64 `json:"offsetTombstones"`
	GroupMetadata    int64 `json:"groupMetadata"`
	GroupTombstones  int64 `json:"groupTombstones"`
	TxnCommits       int64 `json:"txnCommits"`
	TxnAborts        int64 `json:"txnAborts"`
	Placeholders     int64 `json:"placeholders"` // messages KoP skips: empty value or no key
	Keyless          int64 `json:"keyless"`      // of those, messages with a value but no key
	Undecodable      int64 `json:"undecodable"`  // records (or whole messages) that failed
	// BadCRC counts batches whose CRC did not match: read anyway, as KoP's loader does.
	BadCRC int64 `json:"badCrc,omitempty"`
	// UnknownControl counts control records of another type than COMMIT/ABORT: KoP drops
	// the producer's pending offsets for them, as for ABORT.
	UnknownControl int64 `json:"unknownControl,omitempty"`
	// KeylessRecords counts data records without a key: KoP skips them.
	KeylessRecords int64 `json:"keylessRecords,omitempty"`
}

// ByKind returns the record counts keyed by kind.
func (c Counts) ByKind() map[offsetlog.Kind]int64 {
	return map[offsetlog.Kind]int64{
		offsetlog.KindOffsetCommit: c.OffsetCommits, offsetlog.KindOffsetTombstone: c.OffsetTombstones,
		offsetlog.KindGroupMetadata: c.GroupMetadata, offsetlog.KindGroupTombstone: c.GroupTombstones,
		offsetlog.KindTxnCommit: c.TxnCommits, offsetlog.KindTxnAbort: c.TxnAborts,
		offsetlog.KindPlaceholder: c.Placeholders, offsetlog.KindUndecodable: c.Undecodable,
	}
}

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	c.Messages += o.Messages
	c.Bytes += o.Bytes
	c.OffsetCommits += o.OffsetCommits
	c.OffsetTombstones += o.OffsetTombstones
	c.GroupMetadata += o.GroupMetadata
	c.GroupTombstones += o.GroupTombstones
	c.TxnCommits += o.TxnCommits
	c.TxnAborts += o.TxnAborts
	c.Placeholders += o.Placeholders
	c.Keyless += o.Keyless
	c.Undecodable += o.Undecodable
	c.BadCRC += o.BadCRC
	c.UnknownControl += o.UnknownControl
	c.KeylessRecords += o.KeylessRecords
}

// LoadFailure is the first record of an offsets partition that KoP's loader cannot parse.
// KoP's load of the partition then fails: the partition stays owned and KoP caches no group
// of it (OffsetFetch answers no offset and no error) until the record is gone.
type LoadFailure struct {
	Partition int32  `json:"offsetsPartition"`
	MessageID string `json:"messageId"`
	Reason    string `json:"reason"`
}

func (f LoadFailure) String() string {
	return "offsets partition " + strconv.Itoa(int(f.Partition)) + ": KoP cannot load it: message " + f.MessageID + ": " + f.Reason
}

// MessageError is an undecodable message (or record) met during a replay.
type MessageError struct {
	Partition int32
	MessageID string
	Err       error
}

func (e MessageError) Error() string {
	return "offsets partition " + strconv.Itoa(int(e.Partition)) + " message " + e.MessageID + ": " + e.Err.Error()
}

func (e MessageError) Unwrap() error { return e.Err }

// CommittedOffset is one persisted offset.
type CommittedOffset struct {
	Group            string            `json:"group"`
	Topic            string            `json:"topic"` // as stored: KoP full name
	Partition        int32             `json:"partition"`
	Offset           int64             `json:"offset"`
	LeaderEpoch      *int32            `json:"leaderEpoch,omitempty"`
	Metadata         string            `json:"metadata"`
	CommitTimestamp  offsetlog.Millis  `json:"commitTimestamp"`
	ExpireTimestamp  *offsetlog.Millis `json:"expireTimestamp,omitempty"`
	KeyVersion       int16             `json:"keyVersion"`
	ValueVersion     int16             `json:"valueVersion"`
	ProducerID       *int64            `json:"producerId,omitempty"` // set when it came from a transaction
	OffsetsPartition int32             `json:"offsetsPartition"`
	// Origin is the cluster the commit was replicated from ("" when it was written on the
	// cluster read): the offset counts in Origin's numbering of the topic, which is this
	// cluster's only while both copies hold the same messages in the same order.
	Origin string `json:"origin,omitempty"`
	// Kept is the newest translation watch kept for this key here (kept.go), nil if none.
	Kept *Kept `json:"kept,omitempty"`
	// Own is the key's last commit written on the cluster read by a client (its own
	// numbering), when a replicated commit or a kept translation came after it; nil
	// otherwise. See Floor.
	Own *int64 `json:"own,omitempty"`
	// Newer is set when this offset is a kept translation that landed after a newer commit
	// of the key (by commit time): KoP loads this older value; Newer is the commit it hid.
	Newer *Newer `json:"newer,omitempty"`
}

// Newer is a commit a later kept translation hid (CommittedOffset.Newer): Offset counts in
// Origin's numbering ("" : the group's own commit on the cluster read).
type Newer struct {
	Origin          string           `json:"origin,omitempty"`
	Offset          int64            `json:"offset"`
	CommitTimestamp offsetlog.Millis `json:"commitTimestamp"`
}

// Floor is the group's own position on the cluster read: its last commit there by a client
// (this offset when it is one, else Own), 0 for none. The group consumed this cluster's
// messages before it here, so a translation into this cluster's numbering never needs to
// land below it (align.BuildFrom): after a failback, messages the cluster wrote while it was
// the primary, which the other copy lacks, do not send the group back to them.
func (c CommittedOffset) Floor() int64 {
	switch {
	case c.Origin == "" && (c.Kept == nil || !c.Kept.Current):
		return c.Offset
	case c.Own != nil:
		return *c.Own
	}
	return 0
}

// Producer is the producer of a transactional offset, -1 for one committed outside a
// transaction.
func (c CommittedOffset) Producer() int64 {
	if c.ProducerID == nil {
		return -1
	}
	return *c.ProducerID
}

// Group is one group as KoP would load it.
type Group struct {
	Group            string     `json:"group"`
	OffsetsPartition int32      `json:"offsetsPartition"`
	State            GroupState `json:"state"`
	// HasMetadata is false for groups known only through their offsets.
	HasMetadata           bool               `json:"hasMetadata"`
	ValueVersion          *int16             `json:"valueVersion,omitempty"`
	Generation            *int32             `json:"generation,omitempty"`
	ProtocolType          *string            `json:"protocolType,omitempty"`
	Protocol              *string            `json:"protocol,omitempty"`
	Leader                *string            `json:"leader,omitempty"`
	CurrentStateTimestamp *offsetlog.Millis  `json:"currentStateTimestamp,omitempty"`
	Members               []offsetlog.Member `json:"members,omitzero"` // [] for a group record without members
	Offsets               int                `json:"offsets"`          // number of persisted offsets
}
