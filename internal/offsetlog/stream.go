package offsetlog

import "github.com/twmb/franz-go/pkg/kmsg"

// Stream reads one message value batch by batch and record by record into reused scratch
// memory: the fast path of a replay, which allocates nothing for keys it has seen (Decode
// builds Records instead). What its methods return views that memory until the next call.
// A Stream is not safe for concurrent use; its zero value is ready.
type Stream struct{ d decoder }

// Reset starts reading value. lenientCRC reads batches whose CRC does not match, as KoP's
// loader does (it never validates it); BadCRC counts them across resets.
func (s *Stream) Reset(value []byte, lenientCRC bool) {
	s.d.lenientCRC = lenientCRC
	s.d.reset(value)
}

// BadCRC is the number of batches read whose CRC did not match.
func (s *Stream) BadCRC() int64 { return s.d.badCRC }

// NextBatch moves to the next batch; false at the end of the value or on error.
func (s *Stream) NextBatch() (bool, error) { return s.d.nextBatch() }

// ProducerID is the current batch's producer.
func (s *Stream) ProducerID() int64 { return s.d.batch.ProducerID }

// Transactional reports whether the current batch is transactional.
func (s *Stream) Transactional() bool { return s.d.isTransactional() }

// Control reports whether the current batch is a control batch (transaction markers).
func (s *Stream) Control() bool { return s.d.isControl() }

// NextRecord moves to the next record of the batch; false at its end or on error.
func (s *Stream) NextRecord() (bool, error) { return s.d.nextRecord() }

// Key and Value are the current record's (nil when null).
func (s *Stream) Key() []byte { return s.d.rec.Key }

// Value is the current record's value (nil for a tombstone).
func (s *Stream) Value() []byte { return s.d.rec.Value }

// FirstKey is the in-batch offset of the batch's first keyed record: where KoP's loader
// places the batch's records.
func (s *Stream) FirstKey() int64 { return s.d.firstKey }

// ControlCommit decodes the current control record's key: COMMIT (true) or ABORT.
func (s *Stream) ControlCommit() (commit bool, err error) {
	err = s.d.decodeControl(s.d.rec.Key)
	return s.d.ctlCommit, err
}

// DecodeKey decodes the current record's key: a group metadata key (isGroup, see GroupKey)
// or an offset commit key (see OffsetKey).
func (s *Stream) DecodeKey() (isGroup bool, err error) {
	kind, err := s.d.decodeKey(s.d.rec.Key)
	return kind == keyGroup, err
}

// GroupKey is the last group metadata key decoded.
func (s *Stream) GroupKey() *kmsg.GroupMetadataKey { return &s.d.gkey }

// OffsetKey is the last offset commit key decoded.
func (s *Stream) OffsetKey() *kmsg.OffsetCommitKey { return &s.d.okey }

// DecodeGroupValue decodes the current record's value as group metadata.
func (s *Stream) DecodeGroupValue() (*kmsg.GroupMetadataValue, error) {
	return &s.d.gval, s.d.decodeGroupValue(s.d.rec.Value)
}

// DecodeOffsetValue decodes the current record's value as an offset commit.
func (s *Stream) DecodeOffsetValue() (*kmsg.OffsetCommitValue, error) {
	return &s.d.oval, s.d.decodeOffsetValue(s.d.rec.Value)
}

// GroupRecord decodes a group metadata value into a Record's value fields. raw must not
// change afterwards: the record views it.
func GroupRecord(raw []byte) (*Record, error) {
	var d decoder
	if err := d.decodeGroupValue(raw); err != nil {
		return nil, err
	}
	rec := new(Record)
	fillGroup(rec, &d.gval)
	return rec, nil
}
