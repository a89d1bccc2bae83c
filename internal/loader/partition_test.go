package loader

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestPartitionVectors checks against values computed by the real Java String.hashCode
// (testdata/gen/HashVectors.java -> testdata/partition_vectors.tsv).
func TestPartitionVectors(t *testing.T) {
	f, err := os.Open("testdata/partition_vectors.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	unescape := strings.NewReplacer(`\\`, `\`, `\t`, "\t", `\n`, "\n", `\0`, "\x00")
	sc := bufio.NewScanner(f)
	n, negative, nonBMP := 0, 0, 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 4 {
			t.Fatalf("bad line %q", line)
		}
		group := unescape.Replace(cols[0])
		hash, _ := strconv.ParseInt(cols[1], 10, 32)
		p8, _ := strconv.ParseInt(cols[2], 10, 32)
		p50, _ := strconv.ParseInt(cols[3], 10, 32)
		if got := JavaStringHashCode(group); int64(got) != hash {
			t.Errorf("hashCode(%q) = %d, java %d", group, got, hash)
		}
		if got := PartitionFor(group, 8); int64(got) != p8 {
			t.Errorf("PartitionFor(%q, 8) = %d, java %d", group, got, p8)
		}
		if got := PartitionFor(group, 50); int64(got) != p50 {
			t.Errorf("PartitionFor(%q, 50) = %d, java %d", group, got, p50)
		}
		n++
		if hash < 0 {
			negative++
		}
		for _, r := range group {
			if r > 0xffff {
				nonBMP++
				break
			}
		}
	}
	if n < 50 || negative < 5 || nonBMP < 3 {
		t.Errorf("vectors too thin: %d rows, %d negative, %d non-BMP", n, negative, nonBMP)
	}
}

func TestPartitionForEdge(t *testing.T) {
	if PartitionFor("g", 0) != -1 || PartitionFor("g", -3) != -1 {
		t.Error("non-positive partition count")
	}
	// "polygenelubricants" hashes to MinInt32: Kafka's abs() would overflow, signSafeMod does not.
	if got := PartitionFor("polygenelubricants", 50); got != 2 {
		t.Errorf("got %d", got)
	}
	// invalid UTF-8 counts as U+FFFD, like Java's decoder
	if JavaStringHashCode("\xff") != JavaStringHashCode("\uFFFD") {
		t.Error("invalid utf-8")
	}
}

func TestTopicNames(t *testing.T) {
	for _, tc := range []struct{ in, ns, full, short string }{
		{"topic-1", "", "persistent://public/default/topic-1", "topic-1"},
		{"public/default/topic-1", "", "persistent://public/default/topic-1", "topic-1"},
		{"persistent://public/default/topic-1", "public/default", "persistent://public/default/topic-1", "topic-1"},
		{"topic-1", "tenant/ns", "persistent://tenant/ns/topic-1", "topic-1"},
		{"tenant/ns/t", "", "persistent://tenant/ns/t", "tenant/ns/t"},
		{"persistent://tenant/ns/t", "", "persistent://tenant/ns/t", "tenant/ns/t"},
		{"a/b", "", "a/b", "a/b"}, // KoP rejects it: kept as is
		{"persistent://public/default/t-partition-3", "", "persistent://public/default/t-partition-3", "t-partition-3"},
	} {
		if got := FullName(tc.in, tc.ns); got != tc.full {
			t.Errorf("FullName(%q, %q) = %q, want %q", tc.in, tc.ns, got, tc.full)
		}
		if got := ShortName(FullName(tc.in, tc.ns), tc.ns); got != tc.short {
			t.Errorf("ShortName(%q) = %q, want %q", FullName(tc.in, tc.ns), got, tc.short)
		}
		if NormalizeTopic(tc.in, tc.ns) != NormalizeTopic(tc.full, tc.ns) || NormalizeTopic(tc.short, tc.ns) != NormalizeTopic(tc.full, tc.ns) {
			t.Errorf("NormalizeTopic does not unify %q, %q, %q", tc.in, tc.full, tc.short)
		}
	}
	if NormalizeTopic("topic-1", "") == NormalizeTopic("other/ns/topic-1", "") {
		t.Error("namespaces conflated")
	}
}

func TestPartitionSuffix(t *testing.T) {
	name := PartitionTopic("persistent://public/__kafka/__consumer_offsets", 7)
	if name != "persistent://public/__kafka/__consumer_offsets-partition-7" {
		t.Fatal(name)
	}
	if base, p, ok := SplitPartition(name); !ok || p != 7 || base != "persistent://public/__kafka/__consumer_offsets" {
		t.Errorf("split %q %d %v", base, p, ok)
	}
	for _, bad := range []string{"t", "t-partition-", "t-partition-x", "t-partition--1", "t-partition-01", "t-partition-+1", "t-partition-99999999999"} {
		if _, _, ok := SplitPartition(bad); ok {
			t.Errorf("SplitPartition(%q) ok", bad)
		}
	}
}
