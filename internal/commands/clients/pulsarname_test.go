package clients

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/config"
)

type namer struct {
	name string
	err  error
}

func (n namer) ClusterName(context.Context) (string, error) { return n.name, n.err }

func TestCheckPulsarName(t *testing.T) {
	east := config.Cluster{Name: "east"}
	err := CheckPulsarName(context.Background(), namer{name: "scus"}, east, "/etc/k.yaml")
	var ce *config.Error
	if !errors.As(err, &ce) || ce.Field != "pulsarCluster" || ce.Cluster != "east" ||
		!strings.Contains(err.Error(), `"scus"`) || !strings.Contains(err.Error(), `"east"`) || !strings.Contains(err.Error(), "pulsarCluster: scus") {
		t.Fatalf("mismatch: %v", err)
	}
	mapped := config.Cluster{Name: "east", PulsarCluster: "scus"}
	for _, c := range []struct {
		cl config.Cluster
		n  namer
	}{
		{mapped, namer{name: "scus"}},
		{config.Cluster{Name: "scus"}, namer{name: "scus"}},
		{east, namer{err: errors.New("403")}}, // not a super-user: not refused
		{east, namer{}},
	} {
		if err := CheckPulsarName(context.Background(), c.n, c.cl, "k.yaml"); err != nil {
			t.Errorf("%+v %+v: %v", c.cl, c.n, err)
		}
	}
	if err := CheckPulsarName(context.Background(), namer{name: "wus"}, mapped, "k.yaml"); err == nil || !strings.Contains(err.Error(), "pulsarCluster: wus") {
		t.Errorf("wrong pulsarCluster: %v", err)
	}

	cfg := &config.Config{Path: "k.yaml", Clusters: []config.Cluster{mapped, {Name: "west", PulsarCluster: "wus"}}}
	names, err := ReplicationNames(namer{name: "scus"}, mapped, cfg, 0)
	if err != nil || names["scus"] != "east" || names["wus"] != "west" {
		t.Errorf("names %v %v", names, err)
	}
	if _, err := ReplicationNames(namer{name: "wus"}, mapped, cfg, 0); err == nil {
		t.Error("mismatch accepted")
	}
	if names, err := ReplicationNames(namer{name: "scus"}, config.Cluster{Name: "default"}, &config.Config{Clusters: []config.Cluster{{Name: "default"}}}, 0); err != nil || names != nil {
		t.Errorf("ad hoc: %v %v", names, err)
	}
}

// TestCheckPulsarNameOwnTimeout: the admin call's own timeout equals the caller's and may fire
// first; its timed-out error still marks the cluster as not answering (else every later call
// waits a whole --timeout on it again: seen as 2 timeouts on the lab's KoP 2.10).
func TestCheckPulsarNameOwnTimeout(t *testing.T) {
	timeout := fmt.Errorf("cluster scus: get runtime configuration: %w", &url.Error{Op: "Get", URL: "http://127.0.0.1:1", Err: context.DeadlineExceeded})
	var na *NoAnswer
	if err := CheckPulsarName(context.Background(), namer{err: timeout}, config.Cluster{Name: "scus"}, "k.yaml"); !errors.As(err, &na) || na.Cluster != "scus" {
		t.Fatalf("a timed-out call with the caller's ctx live: %v, want *NoAnswer for scus", err)
	}
	refused := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	if err := CheckPulsarName(context.Background(), namer{err: refused}, config.Cluster{Name: "scus"}, "k.yaml"); err != nil {
		t.Fatalf("a refused call is not a cluster that hangs: %v", err)
	}
}
