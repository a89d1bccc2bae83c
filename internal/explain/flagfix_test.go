package explain

import (
	"fmt"
	"syscall"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/config"
)

// TestFixForFlags: the ad-hoc cluster's fix names the flag to correct and the command to run
// next with the flags; a config file's cluster keeps its config field and --cluster.
func TestFixForFlags(t *testing.T) {
	cfg, err := config.AdHoc("http://127.0.0.1:1", "", []string{"127.0.0.1:2"})
	if err != nil {
		t.Fatal(err)
	}
	adHoc := cfg.Clusters[0]
	if !adHoc.FromFlags {
		t.Fatal("the ad-hoc cluster is not marked FromFlags")
	}
	refused := fmt.Errorf("dial tcp 127.0.0.1:1: connect: %w", syscall.ECONNREFUSED)

	e := New(adHoc.Name, Admin, "", refused).For(adHoc)
	want := "start its brokers or correct --admin-url (the web service port, 8080 by default); then: kop-offsets --admin-url http://127.0.0.1:1 --bootstrap 127.0.0.1:2 config check"
	if e.Fix != want || e.URL != "http://127.0.0.1:1" {
		t.Errorf("ad-hoc admin: fix %q url %q\nwant fix %q", e.Fix, e.URL, want)
	}
	if e := New(adHoc.Name, Kafka, "", refused).For(adHoc); e.Fix != "load KoP on its brokers (messagingProtocols=kafka) or correct --bootstrap to match kafkaAdvertisedListeners; then: kop-offsets --admin-url http://127.0.0.1:1 --bootstrap 127.0.0.1:2 config check" {
		t.Errorf("ad-hoc kafka: fix %q", e.Fix)
	}

	file := config.Cluster{Name: "scus", AdminURL: "http://127.0.0.1:1"}
	if e := New(file.Name, Admin, "", refused).For(file); e.Fix != "start its brokers or correct its adminURL (the web service port, 8080 by default); then: kop-offsets --cluster scus config check" {
		t.Errorf("config cluster: fix %q", e.Fix)
	}
}
