package offsetlog

import (
	"encoding/json"
	"errors"
	"strconv"
	"time"
)

// Kind classifies a decoded record; the values are the JSON contract (cli.md).
type Kind string

// The kinds of record.
const (
	KindOffsetCommit    Kind = "offset_commit"
	KindOffsetTombstone Kind = "offset_tombstone"
	KindGroupMetadata   Kind = "group_metadata"
	KindGroupTombstone  Kind = "group_tombstone"
	KindTxnCommit       Kind = "txn_commit"
	KindTxnAbort        Kind = "txn_abort"
	KindPlaceholder     Kind = "placeholder"
	KindUndecodable     Kind = "undecodable"
)

// Kinds lists every kind in a stable order (for summaries and flag validation).
var Kinds = []Kind{
	KindOffsetCommit, KindOffsetTombstone, KindGroupMetadata, KindGroupTombstone,
	KindTxnCommit, KindTxnAbort, KindPlaceholder, KindUndecodable,
}

// Millis is a Kafka timestamp in milliseconds since the epoch. It marshals as an RFC 3339
// UTC string with milliseconds, as the JSON contract requires.
type Millis int64

const millisLayout = "2006-01-02T15:04:05.000Z07:00"

// Time returns m as a UTC time.
func (m Millis) Time() time.Time { return time.UnixMilli(int64(m)).UTC() }

func (m Millis) String() string { return m.Time().Format(millisLayout) }

// MarshalJSON writes m as a quoted RFC 3339 UTC string with milliseconds.
func (m Millis) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(millisLayout)+2)
	b = append(b, '"')
	b = m.Time().AppendFormat(b, millisLayout)
	return append(b, '"'), nil
}

// UnmarshalJSON accepts what MarshalJSON writes and, for hand-written input, plain numbers.
func (m *Millis) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] != '"' {
		n, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil {
			return errors.New("timestamp: want an rfc 3339 string or milliseconds")
		}
		*m = Millis(n)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	*m = Millis(t.UnixMilli())
	return nil
}

// Record is one decoded record of an offsets-topic message. JSON tags are the contract of
// cli.md ("A decoded record"); absent values are omitted, never -1.
type Record struct {
	Kind            Kind    `json:"kind"`
	Group           string  `json:"group,omitempty"`
	Topic           string  `json:"topic,omitempty"` // as stored: KoP full name
	Partition       *int32  `json:"partition,omitempty"`
	Offset          *int64  `json:"offset,omitempty"`
	LeaderEpoch     *int32  `json:"leaderEpoch,omitempty"`
	Metadata        *string `json:"metadata,omitempty"`
	CommitTimestamp *Millis `json:"commitTimestamp,omitempty"`
	ExpireTimestamp *Millis `json:"expireTimestamp,omitempty"`
	KeyVersion      *int16  `json:"keyVersion,omitempty"`
	ValueVersion    *int16  `json:"valueVersion,omitempty"`
	ProducerID      *int64  `json:"producerId,omitempty"`
	Transactional   bool    `json:"transactional,omitempty"`

	Generation            *int32   `json:"generation,omitempty"`
	ProtocolType          *string  `json:"protocolType,omitempty"`
	Protocol              *string  `json:"protocol,omitempty"`
	Leader                *string  `json:"leader,omitempty"`
	CurrentStateTimestamp *Millis  `json:"currentStateTimestamp,omitempty"`
	Members               []Member `json:"members,omitzero"` // [] on a group record without members

	Error string `json:"error,omitempty"`

	// Err is the typed error behind Error, for errors.Is/As; not serialised.
	Err error `json:"-"`

	// pos is the position KoP's loader gives an offset commit: the in-batch offset of the
	// batch's first keyed record (see replay.go).
	pos int64
}

// LoadPosition is the position KoP's loader gives the record (an offset commit): the
// in-batch offset of its batch's first keyed record.
func (r *Record) LoadPosition() int64 { return r.pos }

// Member is one member of a group metadata record.
type Member struct {
	MemberID           string            `json:"memberId"`
	GroupInstanceID    *string           `json:"groupInstanceId,omitempty"`
	ClientID           string            `json:"clientId"`
	ClientHost         string            `json:"clientHost"`
	SessionTimeoutMs   int32             `json:"sessionTimeoutMs"`
	RebalanceTimeoutMs *int32            `json:"rebalanceTimeoutMs,omitempty"` // v1+
	Assignment         []TopicPartitions `json:"assignment,omitempty"`

	// Not in the JSON contract (yet): the decoded subscription, the raw protocol bytes,
	// and why the consumer-protocol blobs could not be decoded.
	Subscription    []string `json:"-"`
	RawSubscription []byte   `json:"-"`
	RawAssignment   []byte   `json:"-"`
	ProtocolError   string   `json:"-"`
}

// TopicPartitions is one topic of a consumer-protocol assignment.
type TopicPartitions struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// Undecodable returns the record that stands for a message (or a part of one) that could
// not be decoded.
func Undecodable(err error) Record {
	r := Record{Kind: KindUndecodable, Err: err}
	if err != nil {
		r.Error = err.Error()
	} else {
		r.Error = "undecodable"
	}
	return r
}
