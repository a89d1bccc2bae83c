package offsets

import "unicode/utf8"

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
