package pulsarx

import (
	"fmt"
	"hash/crc32"
	"sort"
	"strconv"
	"strings"
)

// Bundle is one namespace bundle: the hash range [Lo, Hi) of topic names, closed at Hi for
// the last bundle (Hi == 0xffffffff), exactly as NamespaceBundles builds them.
type Bundle struct {
	Range string // "0x00000000_0x40000000", the form the admin API takes and returns
	Lo    uint32
	Hi    uint32
}

// Contains reports whether hash falls into the bundle.
func (b Bundle) Contains(hash uint32) bool {
	return hash >= b.Lo && (hash < b.Hi || (b.Hi == 0xffffffff && hash == b.Hi))
}

// BundlesFromBoundaries turns the boundaries of a namespace's BundlesData ("0x00000000",
// ..., "0xffffffff") into bundles.
func BundlesFromBoundaries(boundaries []string) ([]Bundle, error) {
	if len(boundaries) < 2 {
		return nil, fmt.Errorf("bundle boundaries %v: need at least 2", boundaries)
	}
	vals := make([]uint32, len(boundaries))
	for i, s := range boundaries {
		v, err := parseBoundary(s)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	if !sort.SliceIsSorted(vals, func(i, j int) bool { return vals[i] < vals[j] }) {
		return nil, fmt.Errorf("bundle boundaries %v: not sorted", boundaries)
	}
	out := make([]Bundle, 0, len(vals)-1)
	for i := 1; i < len(vals); i++ {
		out = append(out, Bundle{Range: FormatBundleRange(vals[i-1], vals[i]), Lo: vals[i-1], Hi: vals[i]})
	}
	return out, nil
}

// ParseBundleRange parses "0x00000000_0x40000000".
func ParseBundleRange(r string) (Bundle, error) {
	lo, hi, ok := strings.Cut(r, "_")
	if !ok {
		return Bundle{}, fmt.Errorf("bundle range %q: want 0xLO_0xHI", r)
	}
	l, err := parseBoundary(lo)
	if err != nil {
		return Bundle{}, err
	}
	h, err := parseBoundary(hi)
	if err != nil {
		return Bundle{}, err
	}
	if h < l {
		return Bundle{}, fmt.Errorf("bundle range %q: upper bound below lower bound", r)
	}
	return Bundle{Range: FormatBundleRange(l, h), Lo: l, Hi: h}, nil
}

// FormatBundleRange formats bounds the way Pulsar does ("0x%08x_0x%08x").
func FormatBundleRange(lo, hi uint32) string { return fmt.Sprintf("0x%08x_0x%08x", lo, hi) }

func parseBoundary(s string) (uint32, error) {
	// Java parses them with Long.decode, which accepts 0x/0X/# hex and decimal.
	v, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(s), "0x"), "0X"), 16, 32)
	if err != nil {
		return 0, fmt.Errorf("bundle boundary %q: %w", s, err)
	}
	return uint32(v), nil
}

// TopicHash is the hash Pulsar places a topic with: NamespaceService builds its
// NamespaceBundleFactory with Guava's Hashing.crc32() (not Murmur3), and
// getLongHashCode(topicName.toString()) is hashString(name, UTF_8).padToLong(), i.e. the
// unsigned CRC-32 (IEEE) of the UTF-8 full topic name. For a partition the name hashed is the
// partition's own full name ("persistent://public/__kafka/__consumer_offsets-partition-3"),
// so the partitions of one topic spread over different bundles.
func TopicHash(fullTopicName string) uint32 {
	return crc32.ChecksumIEEE([]byte(fullTopicName))
}

// FindBundle returns the bundle of bundles (sorted, as BundlesFromBoundaries returns them)
// that holds fullTopicName, the way NamespaceBundles#getBundle does it.
func FindBundle(bundles []Bundle, fullTopicName string) (Bundle, error) {
	b, err := findBundleByHash(bundles, TopicHash(fullTopicName))
	if err != nil {
		return Bundle{}, fmt.Errorf("topic %s: %w", fullTopicName, err)
	}
	return b, nil
}

func findBundleByHash(bundles []Bundle, h uint32) (Bundle, error) {
	i := sort.Search(len(bundles), func(i int) bool { return bundles[i].Hi > h })
	if i == len(bundles) {
		// Only the hash 0xffffffff gets here: the last bundle is closed at its upper end.
		i = len(bundles) - 1
	}
	if i < 0 || !bundles[i].Contains(h) {
		return Bundle{}, fmt.Errorf("hash 0x%08x is in no bundle", h)
	}
	return bundles[i], nil
}
