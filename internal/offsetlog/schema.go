package offsetlog

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
	d.decodeGroupHeader(&r, v)
	n := groupMemberCount(&r, v >= 4)
	if r.err != nil {
		return r.err
	}
	g := &d.gval
	if cap(g.Members) < n {
		g.Members = make([]kmsgMember, n)
		d.instanceIDs = make([]string, n)
	}
	g.Members = g.Members[:n]
	for i := range g.Members {
		if d.decodeGroupMember(&r, v, i); r.err != nil {
			r.err.Part += " member " + strconv.Itoa(i)
			return r.err
		}
	}
	if v >= 4 {
		r.skipTags("taggedFields")
	}
	if r.err != nil {
		return r.err
	}
	return nil
}

// decodeGroupHeader reads the fields of a group value of version v before its members.
func (d *decoder) decodeGroupHeader(r *reader, v int16) {
	flex := v >= 4
	g := &d.gval
	g.Version = v
	g.CurrentStateTimestamp = -1
	g.Protocol, g.Leader = nil, nil
	g.ProtocolType = view(r.strOf(flex, "protocolType"))
	g.Generation = r.int32("generation")
	if b, ok := r.nstrOf(flex, "protocol"); ok {
		d.gProtocol = view(b)
		g.Protocol = &d.gProtocol
	}
	if b, ok := r.nstrOf(flex, "leader"); ok {
		d.gLeader = view(b)
		g.Leader = &d.gLeader
	}
	if v >= 2 {
		g.CurrentStateTimestamp = r.int64("currentStateTimestamp")
	}
}

// groupMemberCount reads the number of members; r fails (and the count is 0) when the
// count is negative or larger than the bytes left could hold.
func groupMemberCount(r *reader, flex bool) int {
	var n int
	start := r.pos
	if flex {
		n = r.compactLen("members")
	} else {
		n = int(r.int32("members"))
	}
	if r.err != nil {
		return 0
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
		return 0
	}
	return n
}

// decodeGroupMember reads member i of a group value of version v into d.gval.Members[i].
func (d *decoder) decodeGroupMember(r *reader, v int16, i int) {
	flex := v >= 4
	m := &d.gval.Members[i]
	m.InstanceID = nil
	m.RebalanceTimeoutMillis = -1
	m.MemberID = view(r.strOf(flex, "memberId"))
	if v >= 3 {
		if b, ok := r.nstrOf(flex, "groupInstanceId"); ok {
			d.instanceIDs[i] = view(b)
			m.InstanceID = &d.instanceIDs[i]
		}
	}
	m.ClientID = view(r.strOf(flex, "clientId"))
	m.ClientHost = view(r.strOf(flex, "clientHost"))
	if v >= 1 {
		m.RebalanceTimeoutMillis = r.int32("rebalanceTimeoutMs")
	}
	m.SessionTimeoutMillis = r.int32("sessionTimeoutMs")
	m.Subscription = r.bytesOf(flex, "subscription")
	m.Assignment = r.bytesOf(flex, "assignment")
	if flex {
		r.skipTags("taggedFields")
	}
}

// strOf, nstrOf and bytesOf read a string, a nullable string and a byte array in the
// encoding of the value's version: compact when it is flexible.
func (r *reader) strOf(flex bool, field string) []byte {
	if flex {
		return r.cstr(field)
	}
	return r.str(field)
}

func (r *reader) nstrOf(flex bool, field string) ([]byte, bool) {
	if flex {
		return r.ncstr(field)
	}
	return r.nstr(field)
}

func (r *reader) bytesOf(flex bool, field string) []byte {
	if flex {
		return r.cbytes(field)
	}
	return r.bytes(field)
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
