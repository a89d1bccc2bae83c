package pulsarx

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"
)

// Vectors answered by the broker of the lab (Apache Pulsar 4.0.8): see testdata/bundle_vectors.json.
func TestFindBundleMatchesBroker(t *testing.T) {
	raw, err := os.ReadFile("testdata/bundle_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Boundaries []string `json:"boundaries"`
		Vectors    []struct {
			Topic        string `json:"topic"`
			CRC32        string `json:"crc32"`
			BrokerBundle string `json:"brokerBundle"`
		} `json:"vectors"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	bundles, err := BundlesFromBoundaries(doc.Boundaries)
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Vectors) < 60 {
		t.Fatalf("only %d vectors", len(doc.Vectors))
	}
	for _, v := range doc.Vectors {
		b, err := FindBundle(bundles, v.Topic)
		if err != nil {
			t.Errorf("%s: %v", v.Topic, err)
			continue
		}
		if b.Range != v.BrokerBundle {
			t.Errorf("%s: bundle %s, broker says %s", v.Topic, b.Range, v.BrokerBundle)
		}
		if got := fmt.Sprintf("0x%08x", TopicHash(v.Topic)); got != v.CRC32 {
			t.Errorf("%s: hash %s, want %s", v.Topic, got, v.CRC32)
		}
	}
}

func TestTopicHashIsGuavaCRC32(t *testing.T) {
	// The CRC-32 check value: Guava's Hashing.crc32() is java.util.zip.CRC32 (IEEE).
	if h := TopicHash("123456789"); h != 0xcbf43926 {
		t.Fatalf("crc32(123456789) = %#x", h)
	}
	if h := TopicHash("persistent://public/__kafka/__consumer_offsets-partition-0"); h != 0x148e3f39 {
		t.Fatalf("hash = %#x", h)
	}
}

func TestFindBundleByHashEdges(t *testing.T) {
	bundles, err := BundlesFromBoundaries([]string{"0x00000000", "0x40000000", "0x80000000", "0xffffffff"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		h    uint32
		want string
	}{
		{0, "0x00000000_0x40000000"},
		{0x3fffffff, "0x00000000_0x40000000"},
		{0x40000000, "0x40000000_0x80000000"}, // lower bound closed, upper open
		{0x80000000, "0x80000000_0xffffffff"},
		{0xfffffffe, "0x80000000_0xffffffff"},
		{0xffffffff, "0x80000000_0xffffffff"}, // the last bundle is closed at 0xffffffff
	} {
		b, err := findBundleByHash(bundles, tc.h)
		if err != nil || b.Range != tc.want {
			t.Errorf("hash %#x: %v %v, want %s", tc.h, b.Range, err, tc.want)
		}
	}
	// Boundaries not starting at 0 leave hashes in no bundle.
	partial, _ := BundlesFromBoundaries([]string{"0x10000000", "0x20000000"})
	if _, err := findBundleByHash(partial, 5); err == nil {
		t.Error("hash below the first boundary: no error")
	}
}

func TestBundlesFromBoundaries(t *testing.T) {
	b, err := BundlesFromBoundaries([]string{"0x00000000", "0xffffffff"})
	if err != nil || len(b) != 1 || b[0] != (Bundle{Range: "0x00000000_0xffffffff", Lo: 0, Hi: 0xffffffff}) {
		t.Fatalf("%+v %v", b, err)
	}
	for _, bad := range [][]string{nil, {"0x00000000"}, {"0x00000000", "zz"}, {"0x80000000", "0x40000000"}, {"0x00000000", "0x1ffffffff"}} {
		if _, err := BundlesFromBoundaries(bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

func TestParseBundleRange(t *testing.T) {
	b, err := ParseBundleRange("0x40000000_0x80000000")
	if err != nil || b.Lo != 0x40000000 || b.Hi != 0x80000000 || b.Range != "0x40000000_0x80000000" {
		t.Fatalf("%+v %v", b, err)
	}
	if b, err := ParseBundleRange("0X4000000A_0xFFFFFFFF"); err != nil || b.Range != "0x4000000a_0xffffffff" {
		t.Fatalf("normalised: %+v %v", b, err)
	}
	for _, bad := range []string{"", "0x1", "0x2_0x1", "x_y", "0x0_0x100000000"} {
		if _, err := ParseBundleRange(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
