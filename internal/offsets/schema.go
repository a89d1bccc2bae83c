package offsets

import (
	"strconv"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kmsg"
)

type kmsgMember = kmsg.GroupMetadataValueMember

// Versions of the __consumer_offsets schemas (Kafka's GroupMetadataManager and KoP's
// GroupMetadataConstants). kmsg decodes any version it is given; bounding them is ours.
const (
	maxOffsetKeyVersion   = 1 // 0 and 1: offset key
	groupKeyVersion       = 2
	maxOffsetValueVersion = 3
	maxGroupValueVersion  = 4 // v4 is flexible
)

// view returns a string that shares b's memory. Only for scratch structs whose lifetime the
// decoder controls; anything kept is copied (Decode) or interned (Replayer) first.
func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

type keyKind uint8

const (
	keyOffset keyKind = iota + 1
	keyGroup
)

// decodeKey reads a record key into d.okey or d.gkey.
func (d *decoder) decodeKey(key []byte) (keyKind, error) {
	c := cursor{b: key}
	switch v := c.i16(); {
	case c.bad:
	case v >= 0 && v <= maxOffsetKeyVersion:
		g, t, p := c.str(), c.str(), c.i32()
		if !c.bad {
			d.okey.Version, d.okey.Group, d.okey.Topic, d.okey.Partition = v, view(g), view(t), p
			return keyOffset, nil
		}
	case v == groupKeyVersion:
		if g := c.str(); !c.bad {
			d.gkey.Version, d.gkey.Group = v, view(g)
			return keyGroup, nil
		}
	}
	return d.decodeKeySlow(key)
}

// decodeKeySlow is decodeKey with a reader: it describes every failure.
func (d *decoder) decodeKeySlow(key []byte) (keyKind, error) {
	r := newReader(key, "record key", -1)
	v := r.int16("version")
	if r.err != nil {
		return 0, r.err
	}
	switch {
	case v >= 0 && v <= maxOffsetKeyVersion:
		r.part, r.version = "offset key", int(v)
		d.okey.Version = v
		d.okey.Group = view(r.str("group"))
		d.okey.Topic = view(r.str("topic"))
		d.okey.Partition = r.int32("partition")
		if r.err != nil {
			return 0, r.err
		}
		return keyOffset, nil
	case v == groupKeyVersion:
		r.part, r.version = "group key", int(v)
		d.gkey.Version = v
		d.gkey.Group = view(r.str("group"))
		if r.err != nil {
			return 0, r.err
		}
		return keyGroup, nil
	default:
		r.pos = 0
		r.fail("version", ErrUnknownVersion, strconv.Itoa(int(v)))
		return 0, r.err
	}
}

// decodeOffsetValue reads an offset commit value v0..v3 into d.oval. Fields Kafka does not
// define for a version are set to -1 (kmsg's convention), never left from a previous record.
// Trailing bytes are ignored, as Kafka's schema reader does.
func (d *decoder) decodeOffsetValue(val []byte) error {
	c := cursor{b: val}
	v := c.i16()
	if c.bad || v < 0 || v > maxOffsetValueVersion {
		return d.decodeOffsetValueSlow(val)
	}
	o := &d.oval
	o.Version = v
	o.LeaderEpoch, o.ExpireTimestamp = -1, -1
	o.Offset = c.i64()
	if v >= 3 {
		o.LeaderEpoch = c.i32()
	}
	o.Metadata = view(c.str())
	o.CommitTimestamp = c.i64()
	if v == 1 {
		o.ExpireTimestamp = c.i64()
	}
	if c.bad {
		return d.decodeOffsetValueSlow(val)
	}
	return nil
}

// decodeOffsetValueSlow is decodeOffsetValue with a reader: it describes every failure.
func (d *decoder) decodeOffsetValueSlow(val []byte) error {
	r := newReader(val, "offset value", -1)
	v := r.int16("version")
	if r.err != nil {
		return r.err
	}
	if v < 0 || v > maxOffsetValueVersion {
		r.pos = 0
		r.fail("version", ErrUnknownVersion, strconv.Itoa(int(v)))
		return r.err
	}
	r.version = int(v)
	o := &d.oval
	o.Version = v
	o.LeaderEpoch, o.ExpireTimestamp = -1, -1
	o.Offset = r.int64("offset")
	if v >= 3 {
		o.LeaderEpoch = r.int32("leaderEpoch")
	}
	o.Metadata = view(r.str("metadata"))
	o.CommitTimestamp = r.int64("commitTimestamp")
	if v == 1 {
		o.ExpireTimestamp = r.int64("expireTimestamp")
	}
	if r.err != nil {
		return r.err
	}
	return nil
}

// decodeGroupValue reads a group metadata value v0..v4 into d.gval. Subscriptions and
// assignments stay raw here; Decode and PersistedOffsets decode them (consumerProtocol).
func (d *decoder) decodeGroupValue(val []byte) error {
	r := newReader(val, "group value", -1)
	v := r.int16("version")
	if r.err != nil {
		return r.err
	}
	if v < 0 || v > maxGroupValueVersion {
		r.pos = 0
		r.fail("version", ErrUnknownVersion, strconv.Itoa(int(v)))
		return r.err
	}
	r.version = int(v)
	flex := v >= 4
	g := &d.gval
	g.Version = v
	g.CurrentStateTimestamp = -1
	g.Protocol, g.Leader = nil, nil
	var (
		b  []byte
		ok bool
	)
	if flex {
		g.ProtocolType = view(r.cstr("protocolType"))
	} else {
		g.ProtocolType = view(r.str("protocolType"))
	}
	g.Generation = r.int32("generation")
	if flex {
		b, ok = r.ncstr("protocol")
	} else {
		b, ok = r.nstr("protocol")
	}
	if ok {
		d.gProtocol = view(b)
		g.Protocol = &d.gProtocol
	}
	if flex {
		b, ok = r.ncstr("leader")
	} else {
		b, ok = r.nstr("leader")
	}
	if ok {
		d.gLeader = view(b)
		g.Leader = &d.gLeader
	}
	if v >= 2 {
		g.CurrentStateTimestamp = r.int64("currentStateTimestamp")
	}
	var n int
	start := r.pos
	if flex {
		n = r.compactLen("members")
	} else {
		n = int(r.int32("members"))
	}
	if r.err != nil {
		return r.err
	}
	// A member takes at least 14 bytes (v4: three empty compact strings, two int32, two
	// empty compact byte arrays, no tags; older versions take more); refusing larger counts
	// up front keeps a corrupt count from allocating.
	if n < 0 || n > r.remaining()/14 {
		r.pos = start
		if n < 0 {
			r.fail("members", ErrMalformed, "count "+strconv.Itoa(n))
		} else {
			r.fail("members", ErrTruncated, "(count "+strconv.Itoa(n)+")")
		}
		return r.err
	}
	if cap(g.Members) < n {
		g.Members = make([]kmsgMember, n)
		d.instanceIDs = make([]string, n)
	}
	g.Members = g.Members[:n]
	for i := range g.Members {
		m := &g.Members[i]
		m.InstanceID = nil
		m.RebalanceTimeoutMillis = -1
		if flex {
			m.MemberID = view(r.cstr("memberId"))
		} else {
			m.MemberID = view(r.str("memberId"))
		}
		if v >= 3 {
			if flex {
				b, ok = r.ncstr("groupInstanceId")
			} else {
				b, ok = r.nstr("groupInstanceId")
			}
			if ok {
				d.instanceIDs[i] = view(b)
				m.InstanceID = &d.instanceIDs[i]
			}
		}
		if flex {
			m.ClientID = view(r.cstr("clientId"))
			m.ClientHost = view(r.cstr("clientHost"))
		} else {
			m.ClientID = view(r.str("clientId"))
			m.ClientHost = view(r.str("clientHost"))
		}
		if v >= 1 {
			m.RebalanceTimeoutMillis = r.int32("rebalanceTimeoutMs")
		}
		m.SessionTimeoutMillis = r.int32("sessionTimeoutMs")
		if flex {
			m.Subscription = r.cbytes("subscription")
			m.Assignment = r.cbytes("assignment")
			r.skipTags("taggedFields")
		} else {
			m.Subscription = r.bytes("subscription")
			m.Assignment = r.bytes("assignment")
		}
		if r.err != nil {
			r.err.Part += " member " + strconv.Itoa(i)
			return r.err
		}
	}
	if flex {
		r.skipTags("taggedFields")
	}
	if r.err != nil {
		return r.err
	}
	return nil
}

// decodeControl reads a control record key (version int16, type int16). Like Kafka's
// ControlRecordType.parse, versions above 0 are read as version 0; negative ones are errors.
func (d *decoder) decodeControl(key []byte) error {
	r := newReader(key, "control key", -1)
	v := r.int16("version")
	if r.err == nil && v < 0 {
		r.pos = 0
		r.fail("version", ErrUnknownVersion, strconv.Itoa(int(v)))
	}
	t := r.int16("type")
	if r.err != nil {
		return r.err
	}
	switch t {
	case 0:
		d.ctlCommit = false
	case 1:
		d.ctlCommit = true
	default:
		r.pos = 2
		r.fail("type", ErrUnknownControlType, strconv.Itoa(int(t)))
		return r.err
	}
	return nil
}
