package lab

import (
	"fmt"
	"os"
	"strconv"
)

// Shape is what kind of lab runs: how many clusters and how many brokers each.
//
//   - Brokers 1 (the default): each cluster is one Pulsar standalone JVM (broker, in-process
//     bookie, RocksDB metadata store, load balancer off). Fast; what CI runs.
//   - Brokers N >= 2: each cluster is a ZooKeeper JVM, a bookie JVM and N broker JVMs with the
//     modular load manager on (as in production), KoP on every broker with its own Kafka port.
//
// Clusters 2 is scus and wus; 3 adds eus, with full-mesh replication.
type Shape struct {
	Clusters int `json:"clusters"`
	Brokers  int `json:"brokers"`
}

// Limits of a shape. MaxBrokers keeps broker i's ports (base + i) below the next
// KOP_LAB_PORT_OFFSET step of 10; MaxClusters is scus, wus and eus.
const (
	MaxBrokers  = 10
	MaxClusters = 3
)

// DefaultShape is two standalone clusters.
var DefaultShape = Shape{Clusters: 2, Brokers: 1}

// String is "2 clusters x 1 broker (standalone)" and the like.
func (s Shape) String() string {
	kind := "ZooKeeper + bookie + brokers"
	if s.Standalone() {
		kind = "standalone"
	}
	return fmt.Sprintf("%d clusters x %d broker(s) (%s)", s.Clusters, s.Brokers, kind)
}

// Standalone reports whether each cluster runs as one standalone JVM.
func (s Shape) Standalone() bool { return s.Brokers <= 1 }

// Validate checks the counts.
func (s Shape) Validate() error {
	if s.Clusters < 2 || s.Clusters > MaxClusters {
		return fmt.Errorf("lab: %d clusters: want 2 or 3 (scus, wus, eus)", s.Clusters)
	}
	if s.Brokers < 1 || s.Brokers > MaxBrokers {
		return fmt.Errorf("lab: %d brokers per cluster: want 1 (standalone) to %d", s.Brokers, MaxBrokers)
	}
	return nil
}

// shapeFromEnv fills zero counts of s from KOP_LAB_CLUSTERS and KOP_LAB_BROKERS, then from
// DefaultShape.
func shapeFromEnv(s Shape) (Shape, error) {
	for _, f := range []struct {
		env string
		dst *int
		def int
	}{{"KOP_LAB_CLUSTERS", &s.Clusters, DefaultShape.Clusters}, {"KOP_LAB_BROKERS", &s.Brokers, DefaultShape.Brokers}} {
		if *f.dst != 0 {
			continue
		}
		*f.dst = f.def
		if v := os.Getenv(f.env); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return s, fmt.Errorf("lab: %s=%q: not a number", f.env, v)
			}
			*f.dst = n
		}
	}
	return s, s.Validate()
}

// ShapeOf returns the shape of clusters (the brokers of the first one).
func ShapeOf(cs []Cluster) Shape {
	if len(cs) == 0 {
		return Shape{}
	}
	return Shape{Clusters: len(cs), Brokers: cs[0].BrokerCount()}
}
