package lab

import (
	"os"
	"strings"
	"testing"
)

// TestRefuseOtherData: data made by a lab of another Pulsar version or other ports is
// refused before anything is stopped, naming --fresh and what differs; the same lab's data,
// a fresh start and an empty data directory pass.
func TestRefuseOtherData(t *testing.T) {
	t.Setenv("KOP_LAB_PORT_OFFSET", "")
	root := t.TempDir()
	p := Paths{Root: root}
	o := Options{Root: root, PulsarVersion: "4.0.8", Auth: AuthNone, Clusters: DefaultClusters(), Log: &strings.Builder{}}
	if err := refuseOtherData(o, p); err != nil {
		t.Fatalf("no data yet: %v", err)
	}
	for _, c := range o.Clusters {
		if err := prepareData(o, p, c); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p.DataDir(c.Name)+"/ledger", []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := refuseOtherData(o, p); err != nil {
		t.Fatalf("same lab: %v", err)
	}

	other := o
	other.PulsarVersion = "2.10.1"
	err := refuseOtherData(other, p)
	if err == nil || !strings.Contains(err.Error(), "--fresh") || !strings.Contains(err.Error(), "Pulsar 4.0.8, not 2.10.1") {
		t.Fatalf("other version: %v", err)
	}

	t.Setenv("KOP_LAB_PORT_OFFSET", "200")
	moved := o
	moved.Clusters = DefaultClusters()
	err = refuseOtherData(moved, p)
	if err == nil || !strings.Contains(err.Error(), "scus on web 18080, binary 16650, bookie 13181, kafka 19092 (1 brokers), not web 18280, binary 16850, bookie 13381, kafka 19292 (1 brokers)") {
		t.Fatalf("other ports: %v", err)
	}
	moved.Fresh = true
	if err := refuseOtherData(moved, p); err != nil {
		t.Fatalf("--fresh: %v", err)
	}

	// Data of a lab from before stamps: refused too, its ports are unknown.
	if err := os.Remove(p.DataStamp("scus")); err != nil {
		t.Fatal(err)
	}
	if err := refuseOtherData(o, p); err == nil || !strings.Contains(err.Error(), "did not record") {
		t.Fatalf("unstamped data: %v", err)
	}
	// A data directory with nothing but the markers holds nothing to refuse.
	if err := os.Remove(p.DataDir("scus") + "/ledger"); err != nil {
		t.Fatal(err)
	}
	if err := refuseOtherData(o, p); err != nil {
		t.Fatalf("markers only: %v", err)
	}
}

func TestStampDifferences(t *testing.T) {
	t.Setenv("KOP_LAB_PORT_OFFSET", "")
	two := newStamp(Options{PulsarVersion: "3.0.16", Clusters: DefaultClusters()})
	three := newStamp(Options{PulsarVersion: "3.0.16", Auth: AuthToken, Clusters: ClustersFor(Shape{Clusters: 3, Brokers: 1})})
	d := strings.Join(two.differences(three), "; ")
	for _, w := range []string{"auth none, not token", "no cluster eus"} {
		if !strings.Contains(d, w) {
			t.Errorf("differences %q lack %q", d, w)
		}
	}
	if d := two.differences(two); len(d) != 0 {
		t.Errorf("a stamp differs from itself: %v", d)
	}
}
