package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestScanLog(t *testing.T) {
	log := "x\n" +
		"2026-12-01T11:13:13,621 INFO  [g] i.s.p.h.k.c.g.GroupMetadataManager - Finished loading public/__kafka/__consumer_offsets-partition-4 offsets and group metadata from 0 in 1721 milliseconds\n" +
		"[2020-05-24 11:08:42,885] INFO [GroupMetadataManager brokerId=1] Finished loading offsets and group metadata from __consumer_offsets-7 in 12 milliseconds. (kafka)\n" +
		"2026-12-01T11:13:19,500 ERROR [g] i.s.p.h.k.c.g.GroupMetadataManager - Error loading offsets from public/__kafka/__consumer_offsets-partition-6\n" +
		"Finished loading public/__kafka/__consumer_offsets-partition-1 offsets and group metadata from 0 in 5 milli" // incomplete line
	path := filepath.Join(t.TempDir(), "broker.log")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	loaded, failed := map[int]int64{}, map[int]bool{}
	n, next, err := scanLog(path, 0, loaded, failed)
	if err != nil || n != 2 || loaded[4] != 1721 || loaded[7] != 12 || !failed[6] || len(loaded) != 2 {
		t.Fatalf("n %d err %v loaded %v failed %v", n, err, loaded, failed)
	}
	if want := int64(len(log) - len("Finished loading public/__kafka/__consumer_offsets-partition-1 offsets and group metadata from 0 in 5 milli")); next != want {
		t.Fatalf("next %d, want %d (the incomplete line is read again)", next, want)
	}
}

func TestMedianAndRatio(t *testing.T) {
	st := median([]Sample{{Wall: 3}, {Wall: 1}, {Wall: 2}})
	if st.Wall != 2 || st.MinWall != 1 || st.MaxWall != 3 {
		t.Fatalf("%+v", st)
	}
	if got := ratio(3, 2); got != "1.50x (1.5x slower)" {
		t.Fatal(got)
	}
	if got := ratio(1, 4); got != "0.25x (4.0x faster)" {
		t.Fatal(got)
	}
	if got := cpuRatio(1, 25); got != "25.0x less" {
		t.Fatal(got)
	}
}
