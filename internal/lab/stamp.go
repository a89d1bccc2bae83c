package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
)

// dataStamp is what a cluster's data was made by. A cluster's metadata holds the other
// clusters' registrations (their ports) and its topics' replicators keep the URLs they were
// created with: data of a lab with other ports makes replicators dial ports where nothing
// listens, for ever, while health checks pass; data of another Pulsar version may not load.
type dataStamp struct {
	PulsarVersion string               `json:"pulsarVersion"`
	Auth          AuthMode             `json:"auth"`
	Clusters      map[string]stampPort `json:"clusters"`
}

// stampPort is one cluster's ports as its peers' registrations name them.
type stampPort struct {
	Ports   Ports `json:"ports"`
	Brokers int   `json:"brokers"`
}

func (sp stampPort) String() string {
	s := fmt.Sprintf("web %d, binary %d, bookie %d, kafka %d", sp.Ports.Web, sp.Ports.Broker, sp.Ports.Bookie, sp.Ports.Kafka)
	if sp.Ports.ZooKeeper != 0 {
		s += fmt.Sprintf(", zookeeper %d", sp.Ports.ZooKeeper)
	}
	return s + fmt.Sprintf(" (%d brokers)", sp.Brokers)
}

func newStamp(o Options) dataStamp {
	s := dataStamp{PulsarVersion: o.PulsarVersion, Auth: o.Auth.orNone(), Clusters: map[string]stampPort{}}
	for _, c := range o.Clusters {
		s.Clusters[c.Name] = stampPort{Ports: c.Ports, Brokers: c.BrokerCount()}
	}
	return s
}

// differences lists what differs between the stamp found (s) and the one wanted, in words.
func (s dataStamp) differences(want dataStamp) []string {
	var out []string
	if s.PulsarVersion != want.PulsarVersion {
		out = append(out, fmt.Sprintf("Pulsar %s, not %s", s.PulsarVersion, want.PulsarVersion))
	}
	if s.Auth != want.Auth {
		out = append(out, fmt.Sprintf("auth %s, not %s", s.Auth, want.Auth))
	}
	names := map[string]bool{}
	for n := range s.Clusters {
		names[n] = true
	}
	for n := range want.Clusters {
		names[n] = true
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		got, had := s.Clusters[n]
		w, wanted := want.Clusters[n]
		switch {
		case !had:
			out = append(out, fmt.Sprintf("no cluster %s", n))
		case !wanted:
			out = append(out, fmt.Sprintf("a cluster %s this lab does not have", n))
		case got != w:
			out = append(out, fmt.Sprintf("%s on %s, not %s", n, got, w))
		}
	}
	return out
}

// checkStamp returns an error naming --fresh when the data under cluster's DataDir was made by
// a lab of another Pulsar version, auth mode or ports, or by a lab from before stamps.
func checkStamp(p Paths, cluster string, want dataStamp) error {
	b, err := os.ReadFile(p.DataStamp(cluster))
	if errors.Is(err, fs.ErrNotExist) {
		if !hasData(p, cluster) {
			return nil
		}
		return fmt.Errorf("lab: %s: %s holds data of a lab that did not record its Pulsar version and ports; start over with `kop-lab up --fresh` (or `kop-lab clean`)",
			cluster, p.DataDir(cluster))
	}
	if err != nil {
		return err
	}
	var got dataStamp
	if err := json.Unmarshal(b, &got); err != nil {
		return fmt.Errorf("lab: %s: %s: %w; start over with `kop-lab up --fresh`", cluster, p.DataStamp(cluster), err)
	}
	if d := got.differences(want); len(d) > 0 {
		return fmt.Errorf("lab: %s: the data in %s was made by another lab (%s): its replicators would keep dialling the old ports and it may not load on this version; start over with `kop-lab up --fresh` (or `kop-lab clean`), or run the lab it was made by",
			cluster, p.DataDir(cluster), strings.Join(d, "; "))
	}
	return nil
}

// hasData reports whether cluster's data directory holds more than the lab's own markers.
func hasData(p Paths, cluster string) bool {
	es, err := os.ReadDir(p.DataDir(cluster))
	if err != nil {
		return false
	}
	for _, e := range es {
		switch e.Name() {
		case "layout", "stamp.json":
		default:
			return true
		}
	}
	return false
}

func writeStamp(p Paths, cluster string, s dataStamp) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(p.DataStamp(cluster), append(b, '\n'), 0o644)
}
