package loader

import (
	"bytes"
	"errors"
	"strings"

	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
)

// ApplyMessage replays one message. Undecodable parts are counted and skipped, as KoP
// skips what it cannot use; the first such error is returned for logging, never fatal.
func (r *Replayer) ApplyMessage(m Message) error {
	r.counts.Messages++
	r.counts.Bytes += int64(len(m.Key) + len(m.Value))
	if len(m.Value) == 0 {
		r.counts.Placeholders++
		return nil
	}
	if len(m.Key) == 0 {
		r.counts.Placeholders++
		r.counts.Keyless++
		return nil
	}
	r.origin = 0
	if m.ReplicatedFrom != "" {
		r.origin = r.st.origin(m.ReplicatedFrom)
	}
	r.kept, r.keptN = m.Kept, 0
	if ms := r.st.msgs; ms != nil {
		r.msg = ms.add(m)
		ms.ref(r.msg) // held while the message is applied
		defer func() { ms.unref(r.msg); r.msg = 0 }()
	}
	d := &r.d
	d.Reset(m.Value, true)
	crcBefore := d.BadCRC()
	defer func() { r.counts.BadCRC += d.BadCRC() - crcBefore }()
	var first error
	fail := func(err error) {
		r.fail(m.MessageID, err)
		if first == nil {
			first = err
		}
	}
	for {
		ok, err := d.NextBatch()
		if err != nil {
			fail(err)
			return first
		}
		if !ok {
			return first
		}
		r.seq++
		txn := d.Transactional()
		for {
			ok, err := d.NextRecord()
			if err != nil {
				fail(err)
				break
			}
			if !ok {
				break
			}
			if d.Control() {
				commit, err := d.ControlCommit()
				switch {
				case errors.Is(err, offsetlog.ErrUnknownControlType):
					r.counts.UnknownControl++
					r.marker(d.ProducerID(), false)
				case err != nil:
					fail(err)
				default:
					r.marker(d.ProducerID(), commit)
				}
				break
			}
			if err := r.applyRecord(txn, m.MessageID); err != nil {
				fail(err)
			}
		}
	}
}

// applyRecord applies d.rec, a record of a data batch.
func (r *Replayer) applyRecord(txn bool, id string) error {
	d := &r.d
	if d.Key() == nil {
		r.counts.KeylessRecords++ // KoP skips records without a key
		return nil
	}
	isGroup, err := d.DecodeKey()
	if err != nil {
		return err
	}
	pid := d.ProducerID()
	if isGroup {
		gkey := d.GroupKey()
		if d.Value() == nil {
			r.groupTombstone(gkey.Group)
			return nil
		}
		gval, err := d.DecodeGroupValue()
		if err != nil {
			return err
		}
		if v := gval.Version; v > maxKoPGroupValueVersion {
			r.kopFailsVersion(id, gkey.Group, "group", v)
		}
		r.counts.GroupMetadata++
		r.groupRecord(gkey.Group, bytes.Clone(d.Value()), nil)
		return nil
	}
	okey := d.OffsetKey()
	if d.Value() == nil {
		r.offsetTombstone(okey.Group, okey.Topic, okey.Partition, txn, pid)
		return nil
	}
	o, err := d.DecodeOffsetValue()
	if err != nil {
		return err
	}
	if v := o.Version; v > maxKoPOffsetValueVersion {
		r.kopFailsVersion(id, okey.Group, "offset", v)
	}
	pos := d.FirstKey()
	if r.ordering == OrderingLog {
		pos = r.seq
	}
	r.offsetCommit(okey.Group, okey.Topic, txn, pid, entry{key: entryKey{partition: okey.Partition},
		offset: o.Offset, commitTS: o.CommitTimestamp, expireTS: o.ExpireTimestamp, leaderEpoch: o.LeaderEpoch,
		keyVersion: int8(okey.Version), valueVersion: int8(o.Version), pos: position(pos)}, o.Metadata)
	return nil
}

// offsetCommit stores e (its key's partition set) for group and topic, which may view
// scratch memory: in the loaded offsets, or the producer's pending ones when txn.
func (r *Replayer) offsetCommit(group, topic string, txn bool, pid int64, e entry, metadata string) {
	r.counts.OffsetCommits++
	s := r.st
	e.key.group, e.key.topic, e.origin = s.addGroup(group), s.addTopic(topic), r.origin
	if txn {
		pe := s.pendingFor(pid, e.key)
		pe.entry = e
		if pe.metadata != metadata {
			pe.metadata = strings.Clone(metadata)
		}
		if s.msgs != nil {
			s.msgs.ref(r.msg)
			s.msgs.unref(pe.msg)
			pe.msg = r.msg
		}
		return
	}
	slot := s.put(e, r.keptEntry(e))
	s.loaded.setMetadata(slot, metadata)
	s.loaded.setPID(slot, -1)
	s.setMsg(slot, r.msg)
}

// keptEntry is the kept translation of the record being applied, nil when its message has
// no kept mark (or the mark lists fewer records).
func (r *Replayer) keptEntry(e entry) *keptEntry {
	if r.kept == nil {
		return nil
	}
	i := r.keptN
	r.keptN++
	if i >= len(r.kept.Sources) {
		return nil
	}
	return &keptEntry{source: r.kept.Sources[i], offset: e.offset, at: r.kept.At.UnixMilli(), from: r.st.origin(r.kept.From), current: true}
}

func (r *Replayer) offsetTombstone(group, topic string, partition int32, txn bool, pid int64) {
	r.counts.OffsetTombstones++
	k, ok := r.st.key(group, topic, partition)
	if !ok {
		return
	}
	if txn {
		r.st.dropPending(pid, k)
		return
	}
	r.st.deleteLoaded(k)
}

// groupRecord applies a group value (raw, never changed afterwards, or the decoded rec).
func (r *Replayer) groupRecord(group string, raw []byte, rec *offsetlog.Record) {
	s := r.st
	id := s.addGroup(group)
	g := &s.ginfo[id]
	g.meta, g.removed = &groupMeta{raw: raw, rec: rec}, false
	if s.msgs != nil {
		s.msgs.ref(r.msg)
		s.msgs.unref(g.msg)
		g.msg = r.msg
	}
}

func (r *Replayer) groupTombstone(group string) {
	r.counts.GroupTombstones++
	s := r.st
	id, ok := s.groups.lookup(group)
	if !ok {
		return // nothing to forget
	}
	g := &s.ginfo[id]
	g.meta, g.removed = nil, true
	if s.msgs != nil {
		s.msgs.unref(g.msg)
		g.msg = 0
	}
	s.gcGroup(id)
}

// marker applies a COMMIT or ABORT marker of a producer.
func (r *Replayer) marker(pid int64, commit bool) {
	if commit {
		r.counts.TxnCommits++
	} else {
		r.counts.TxnAborts++
	}
	r.st.marker(pid, commit)
}
