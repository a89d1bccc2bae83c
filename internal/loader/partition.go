package loader

import (
	"strconv"
	"unicode/utf8"
)

// JavaStringHashCode is Java's String.hashCode: s[0]*31^(n-1) + ... + s[n-1] over the
// UTF-16 code units of s, with int32 overflow. Runes outside the BMP count as their two
// surrogates; invalid UTF-8 bytes count as U+FFFD, which is what Java's UTF-8 decoder makes
// of them.
func JavaStringHashCode(s string) int32 {
	var h int32
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			h = 31*h + int32(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// PartitionFor returns the offsets-topic partition of a group, as KoP computes it
// (GroupMetadataManager#getPartitionId): signSafeMod(hashCode, n), i.e. hash % n plus n when
// negative. This is not Kafka's abs(hash) % n. n must be positive; PartitionFor returns -1
// otherwise.
func PartitionFor(group string, n int32) int32 {
	if n <= 0 {
		return -1
	}
	m := JavaStringHashCode(group) % n
	if m < 0 {
		m += n
	}
	return m
}

// ProbeGroup returns a group name that lives in offsets partition p of n and that no
// consumer uses: OffsetFetch for it tells whether KoP has loaded the partition (an empty
// answer) or not (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS) without touching any group.
func ProbeGroup(p, n int32) string {
	for i := 0; ; i++ {
		g := "kop-offsets-probe-" + strconv.Itoa(i)
		if PartitionFor(g, n) == p {
			return g
		}
	}
}
