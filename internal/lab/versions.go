package lab

import (
	"fmt"
	"strconv"
	"strings"
)

// PulsarLine is what the lab must know of a Pulsar release line (major.minor) to run it: the
// flags its standalone takes and the settings it honours. Everything else is the same on
// every line the lab runs.
type PulsarLine struct {
	Major, Minor int
	// StandaloneZooKeeper: the standalone keeps its metadata in an embedded ZooKeeper
	// (--zookeeper-port, --zookeeper-dir). Before 2.11 PulsarStandaloneStarter has no
	// RocksDB metadata store and refuses --metadata-dir (JCommander: "Was passed main
	// parameter '--metadata-dir' but no main parameter was defined").
	StandaloneZooKeeper bool
	// ReplicationStartAt: the broker honours replicationStartAt=earliest (3.0.9, 3.3.4,
	// 4.0.2 and later); elsewhere a replicator created after messages were written starts at
	// the latest one, so the lab sets replication up before anything is written.
	ReplicationStartAt bool
	// MultiBroker: the lab's multi-broker layout (kop-lab up --brokers N) runs on this line.
	// 2.10's PulsarClusterMetadataSetup has no --default-namespace-bundle-number.
	MultiBroker bool
	// DedupDropsKoPReplicas: KoP writes every entry of a Kafka topic with an empty producer
	// name and sequence id 0 (KoP 2.10 and 3.0 alike), and this line's deduplication of
	// replicated messages then takes every replicated entry after the first for a duplicate
	// and drops it (seen on 2.10.1: scus 11 entries and offset 10900, wus 1 entry and offset
	// 1000; 3.0.16 kept all 12). The lab then runs without broker deduplication.
	DedupDropsKoPReplicas bool
	// ReplicatedTxnNeedsBuffer: a broker of this line without its transaction buffer
	// (transactionCoordinatorEnabled=false) refuses a replicated transactional message
	// (NotAllowedException "Transaction buffer disable!", seen on 2.10.1 for the offsets
	// partition of a group committing inside Kafka transactions through KoP), and the
	// sending replicator stalls there for good. 3.0.16 and 4.0.8 replicated them without it.
	ReplicatedTxnNeedsBuffer bool
	// LazyReplicators: a topic already loaded when its namespace's replication changes gets
	// its replicators only at the broker's periodic replication check
	// (replicationPolicyCheckDurationSeconds, 600 s by default) or when loaded again: seen on
	// 2.10.1 for the offsets partitions KoP loads before the lab sets replication up. The lab
	// then checks every 10 s.
	LazyReplicators bool
}

// String is the line's name, "2.10".
func (l PulsarLine) String() string { return fmt.Sprintf("%d.%d", l.Major, l.Minor) }

// ProvenLines are the Pulsar versions the lab was run on, one per line (docs/lab.md).
var ProvenLines = []string{"2.10.1", "3.0.16", "4.0.8"}

// LineOf returns the release line of Pulsar version v ("2.10.1", "3.0.16", "4.0.8"). Versions
// before 2.10 are refused: their standalone and settings were never tried.
func LineOf(v string) (PulsarLine, error) {
	parts := strings.SplitN(strings.TrimSpace(v), ".", 3)
	if len(parts) < 3 {
		return PulsarLine{}, fmt.Errorf("lab: PULSAR_VERSION=%q: want a release such as %s", v, strings.Join(ProvenLines, ", "))
	}
	nums := make([]int, 3)
	for i, s := range parts {
		// A patch level may carry a suffix (4.0.8-SNAPSHOT): only its leading digits count.
		if i == 2 {
			if j := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }); j >= 0 {
				s = s[:j]
			}
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return PulsarLine{}, fmt.Errorf("lab: PULSAR_VERSION=%q: want a release such as %s", v, strings.Join(ProvenLines, ", "))
		}
		nums[i] = n
	}
	l := PulsarLine{Major: nums[0], Minor: nums[1]}
	if l.before(2, 10) {
		return l, fmt.Errorf("lab: PULSAR_VERSION=%s: the lab runs Pulsar 2.10 and later (proven: %s)", v, strings.Join(ProvenLines, ", "))
	}
	l.StandaloneZooKeeper = l.before(2, 11)
	l.MultiBroker = !l.before(2, 11)
	l.DedupDropsKoPReplicas = l.before(3, 0)
	l.ReplicatedTxnNeedsBuffer = l.before(3, 0)
	l.LazyReplicators = l.before(3, 0)
	patch := nums[2]
	switch {
	case l.Major == 3 && l.Minor == 0:
		l.ReplicationStartAt = patch >= 9
	case l.Major == 3 && l.Minor == 3:
		l.ReplicationStartAt = patch >= 4
	case l.Major == 4 && l.Minor == 0:
		l.ReplicationStartAt = patch >= 2
	default:
		l.ReplicationStartAt = !l.before(4, 1)
	}
	return l, nil
}

// replicationPolicyCheckSeconds is the lab's replicationPolicyCheckDurationSeconds, 0 for
// Pulsar's default.
func (l PulsarLine) replicationPolicyCheckSeconds() int {
	if l.LazyReplicators {
		return 10
	}
	return 0
}

func (l PulsarLine) before(major, minor int) bool {
	return l.Major < major || l.Major == major && l.Minor < minor
}

// standaloneMetadataArgs are the standalone's flags for its metadata store under dataDir:
// an embedded ZooKeeper on zkPort before 2.11, else RocksDB.
func (l PulsarLine) standaloneMetadataArgs(dataDir string, zkPort int) []string {
	if l.StandaloneZooKeeper {
		return []string{"--zookeeper-port", strconv.Itoa(zkPort), "--zookeeper-dir", dataDir + "/zookeeper"}
	}
	return []string{"--metadata-dir", dataDir + "/metadata"}
}

// withLinePorts gives each standalone of a line with an embedded ZooKeeper its ZooKeeper
// port (the one its cluster's multi-broker layout uses): the lab's port checks, the data
// stamp and the state then know it.
func withLinePorts(cs []Cluster, l PulsarLine) []Cluster {
	if !l.StandaloneZooKeeper {
		return cs
	}
	off := PortOffset()
	out := make([]Cluster, len(cs))
	for i, c := range cs {
		if c.Standalone() && c.Ports.ZooKeeper == 0 {
			for _, b := range clusterBases {
				if b.name == c.Name {
					c.Ports.ZooKeeper = b.ports.ZooKeeper + off
				}
			}
		}
		out[i] = c
	}
	return out
}
